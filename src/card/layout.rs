//! Fitting a card to a size, and its text. An agent takes two lines: mark, title and the state
//! icon at the right; under them, indented, the state in words, then (each when the program
//! said so and its display switch is on, S5.3) progress, what it waits for (inside the
//! words: `Waiting for permission`) and what it does. The header line gives the window's name
//! and the number of agents. When not every agent fits the height, the last line says how
//! many more there are (`2 more`). Lines never wrap: what does not fit the width ends in `…`,
//! after paths in a description were shortened to their last folder (S5.4).

use std::str::FromStr;

use serde::Serialize;

use crate::panel::options::DisplaySwitches;
use crate::panel::text::{shorten_paths, width};
use crate::panel::theme::{self, Icon};
use crate::state::AgentState;

use super::model::{AgentEntry, WindowCard};

/// Lines an agent takes on the card.
pub const AGENT_LINES: usize = 2;
/// The narrowest card.
pub const MIN_WIDTH: usize = 12;
/// The line of a window without agents.
pub const NO_AGENTS: &str = "No agents in this window";

/// A width or height given on the command line: cells, or a percentage of the terminal (or,
/// for the menu, of the client).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extent {
    /// This many cells.
    Cells(usize),
    /// This percentage (1..=100).
    Percent(u8),
}

impl FromStr for Extent {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("not a size: {s:?} (give cells, like 40, or a percentage, like 60%)");
        match s.strip_suffix('%') {
            Some(p) => match p.parse::<u8>() {
                Ok(n) if (1..=100).contains(&n) => Ok(Extent::Percent(n)),
                _ => Err(bad()),
            },
            None => match s.parse::<usize>() {
                Ok(n) if n > 0 => Ok(Extent::Cells(n)),
                _ => Err(bad()),
            },
        }
    }
}

impl Extent {
    /// The cells this is of a whole of `of` cells (a percentage rounds down, at least 1).
    pub fn of(self, of: usize) -> usize {
        match self {
            Extent::Cells(n) => n,
            Extent::Percent(p) => (of * p as usize / 100).max(1),
        }
    }
}

/// How many agents a height shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fit {
    /// Agents shown, from the first.
    pub shown: usize,
    /// Agents left out (the `N more` line says so when there are any).
    pub more: usize,
}

/// How many of `total` agents of `per_agent` lines fit under `header` lines in `height` lines
/// (None: no limit). When not all fit, one line is kept for `N more`; the header and that line
/// are shown whatever the height.
pub fn fit(total: usize, header: usize, per_agent: usize, height: Option<usize>) -> Fit {
    let room = match height {
        Some(h) => h.saturating_sub(header),
        None => usize::MAX,
    };
    if total.saturating_mul(per_agent) <= room {
        return Fit {
            shown: total,
            more: 0,
        };
    }
    let shown = room.saturating_sub(1) / per_agent.max(1);
    Fit {
        shown,
        more: total - shown,
    }
}

/// `s` cut to at most `max` cells, ending in `…` when something was cut.
pub fn clip(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = width(c.encode_utf8(&mut [0; 4]));
        if used + w > max - 1 {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// `left` and `right` on one line of `cells`, `right` against the right edge; `left` is cut
/// first. A `right` that leaves no room for anything else is dropped.
pub fn two_sided(left: &str, right: &str, cells: usize) -> String {
    let rw = width(right);
    if right.is_empty() || rw + 2 > cells {
        return clip(left, cells);
    }
    let left = clip(left, cells - rw - 1);
    let pad = cells - width(&left) - rw;
    format!("{left}{}{right}", " ".repeat(pad))
}

/// The icon's glyph at `now_ms` (the spinner's frame moves with time).
pub fn glyph(i: Icon, now_ms: u64) -> &'static str {
    theme::icon_glyph(i, now_ms).0
}

/// The line under an agent's heading, for `cells` cells (indent included): the state in
/// words, progress, and what it does, as the display switches allow.
pub fn detail(a: &AgentEntry, show: DisplaySwitches, cells: usize) -> String {
    let mut parts = vec![
        if a.state == Some(AgentState::Blocked) && !show.waiting_reason {
            "Waiting for you".to_string()
        } else {
            a.state_words.clone()
        },
    ];
    if let Some(p) = a.progress.filter(|_| show.progress) {
        parts.push(format!("{p}%"));
    }
    let head = format!("  {}", parts.join(" · "));
    match a.doing.as_deref().filter(|_| show.description) {
        Some(d) => {
            let room = cells.saturating_sub(width(&head) + 3);
            clip(&format!("{head} · {}", shorten_paths(d, room)), cells)
        }
        None => clip(&head, cells),
    }
}

/// The natural width of a card: its widest line, within `max` (and at least [`MIN_WIDTH`]).
pub fn natural_width(
    card: &WindowCard,
    shown: usize,
    show: DisplaySwitches,
    now_ms: u64,
    max: usize,
) -> usize {
    let mut header = width(&card.name()) + 2 + width(&card.count_words());
    if card.agents.is_empty() {
        header = header.max(width(NO_AGENTS));
    }
    let widest = card
        .agents
        .iter()
        .take(shown)
        .map(|a| {
            let head = width(&a.heading()) + 2 + width(glyph(a.icon, now_ms));
            head.max(width(&detail(a, show, usize::MAX)))
        })
        .fold(header, usize::max);
    widest.min(max).max(MIN_WIDTH.min(max))
}

/// The card as text lines of at most `cells` cells (the card takes its natural width up to
/// that) and, with a `height`, at most that many lines (never fewer than the header and the
/// `N more` line).
pub fn text_lines(
    card: &WindowCard,
    show: DisplaySwitches,
    cells: usize,
    height: Option<usize>,
    now_ms: u64,
) -> Vec<String> {
    let f = fit(card.agents.len(), 1, AGENT_LINES, height);
    let w = natural_width(card, f.shown, show, now_ms, cells);
    let mut lines = vec![two_sided(&card.name(), &card.count_words(), w)];
    if card.agents.is_empty() {
        lines.push(clip(NO_AGENTS, w));
    }
    for a in card.agents.iter().take(f.shown) {
        lines.push(two_sided(&a.heading(), glyph(a.icon, now_ms), w));
        lines.push(detail(a, show, w));
    }
    if f.more > 0 {
        lines.push(format!("{} more", f.more));
    }
    lines
}

/// `card --json` (`docs/schema.md`): the card with the agents that fit and how many did not.
#[derive(Debug, Serialize)]
pub struct CardJson<'a> {
    /// Schema version.
    pub schema: u32,
    /// The window.
    pub window: crate::ids::WindowId,
    /// Its session.
    pub session: crate::ids::SessionId,
    /// The session's name.
    pub session_name: &'a str,
    /// The window's index.
    pub window_index: u32,
    /// The window's name.
    pub window_name: &'a str,
    /// The window's mark.
    pub mark: Option<crate::ipc::schema::WindowMark>,
    /// How many agents the window has.
    pub agents: usize,
    /// The agents shown, most urgent first.
    pub shown: Vec<AgentJson<'a>>,
    /// How many did not fit.
    pub more: usize,
}

/// One agent in `card --json`.
#[derive(Debug, Serialize)]
pub struct AgentJson<'a> {
    /// The agent.
    #[serde(flatten)]
    pub entry: &'a AgentEntry,
    /// The mark shown (its own, else the generic one).
    pub mark_shown: &'a str,
}

impl<'a> CardJson<'a> {
    /// The JSON of `card` with at most `height` lines' worth of agents (None: all).
    pub fn new(card: &'a WindowCard, height: Option<usize>) -> CardJson<'a> {
        let f = fit(card.agents.len(), 1, AGENT_LINES, height);
        CardJson {
            schema: crate::ipc::schema::SCHEMA_VERSION,
            window: card.window,
            session: card.session,
            session_name: &card.session_name,
            window_index: card.window_index,
            window_name: &card.window_name,
            mark: card.mark,
            agents: card.agents.len(),
            shown: card
                .agents
                .iter()
                .take(f.shown)
                .map(|a| AgentJson {
                    entry: a,
                    mark_shown: a.mark_glyph(),
                })
                .collect(),
            more: f.more,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::card::model::build;
    use crate::card::model::tests::row;
    use crate::ids::WindowId;
    use crate::ipc::schema::PaneRow;
    use crate::state::BlockedKind;

    fn six() -> Vec<PaneRow> {
        let states = [
            Some(AgentState::Working),
            Some(AgentState::Blocked),
            Some(AgentState::Idle),
            Some(AgentState::Error),
            Some(AgentState::Working),
            None,
        ];
        let mut rows: Vec<PaneRow> = states
            .iter()
            .enumerate()
            .map(|(i, s)| row(10 + i as u32, 1, i as u32, *s))
            .collect();
        rows[0].progress = Some(40);
        rows[0].message = Some("building /home/me/src/thinkterm/target".into());
        rows[1].kind = Some(BlockedKind::Permission);
        rows[1].message = Some("Run cargo test?".into());
        rows[3].message = Some("tests failed".into());
        rows
    }

    #[test]
    fn sizes_parse_as_cells_or_percentages() {
        assert_eq!("40".parse(), Ok(Extent::Cells(40)));
        assert_eq!("60%".parse(), Ok(Extent::Percent(60)));
        for bad in ["0", "0%", "101%", "x", "-3", "%"] {
            assert!(bad.parse::<Extent>().is_err(), "{bad}");
        }
        assert_eq!(Extent::Percent(50).of(41), 20);
        assert_eq!(Extent::Percent(1).of(10), 1);
        assert_eq!(Extent::Cells(7).of(100), 7);
    }

    #[test]
    fn fitting_keeps_a_line_for_n_more() {
        assert_eq!(fit(6, 1, 2, None), Fit { shown: 6, more: 0 });
        assert_eq!(fit(6, 1, 2, Some(13)), Fit { shown: 6, more: 0 });
        // 12 lines: header, 5 agents would take 11, but then `1 more` would not fit.
        assert_eq!(fit(6, 1, 2, Some(12)), Fit { shown: 5, more: 1 });
        assert_eq!(fit(6, 1, 2, Some(10)), Fit { shown: 4, more: 2 });
        assert_eq!(fit(6, 1, 2, Some(1)), Fit { shown: 0, more: 6 });
        assert_eq!(fit(0, 1, 2, Some(1)), Fit { shown: 0, more: 0 });
    }

    #[test]
    fn clipping_cuts_at_cells_and_marks_the_cut() {
        assert_eq!(clip("hello", 5), "hello");
        assert_eq!(clip("hello world", 6), "hello…");
        assert_eq!(clip("日本語のタイトル", 7), "日本語…");
        assert_eq!(clip("abc", 0), "");
        assert_eq!(two_sided("fix the build", "⚠", 16), "fix the build  ⚠");
        assert_eq!(two_sided("fix the build", "⚠", 10), "fix the… ⚠");
        assert_eq!(two_sided("fix", "", 10), "fix");
    }

    #[test]
    fn a_small_card_shows_what_fits_then_n_more() {
        let rows = six();
        let panes: Vec<&PaneRow> = rows.iter().collect();
        let card = build(WindowId(1), &panes, &[]).expect("card");
        let lines = text_lines(&card, DisplaySwitches::default(), 38, Some(10), 0);
        assert_eq!(lines.len(), 10, "{lines:#?}");
        assert!(lines.iter().all(|l| width(l) <= 38), "{lines:#?}");
        assert_eq!(
            lines[0].trim_end(),
            format!("{:<30}6 agents", "Thread 1").trim_end()
        );
        // Needs attention first: the blocked and the failed agent, then the two working ones.
        assert!(
            lines[1].starts_with("✳ task 11") && lines[1].ends_with('⚠'),
            "{lines:#?}"
        );
        assert_eq!(
            lines[2].trim_end(),
            "  Waiting for permission · Run cargo …"
        );
        assert!(lines[3].starts_with("✳ task 13") && lines[3].ends_with('✗'));
        assert_eq!(lines[4].trim_end(), "  Stopped on an error · tests failed");
        assert!(lines[5].starts_with("✳ task 10"));
        // The path was shortened to its last folder before anything was cut.
        assert_eq!(lines[6], "  Working · 40% · building target");
        assert!(lines[7].starts_with("✳ task 14"));
        assert_eq!(lines[9], "2 more");

        let all = text_lines(&card, DisplaySwitches::default(), 80, None, 0);
        assert_eq!(all.len(), 13);
        assert_eq!(
            all[12].trim_end(),
            "  Unknown",
            "the unknown agent last, no icon"
        );
        assert_eq!(all[11].trim_end(), "✳ task 15");
    }

    #[test]
    fn the_display_switches_hide_what_they_switch_off() {
        let rows = six();
        let panes: Vec<&PaneRow> = rows.iter().collect();
        let card = build(WindowId(1), &panes, &[]).expect("card");
        let off = DisplaySwitches {
            description: false,
            waiting_reason: false,
            progress: false,
            subtasks: true,
        };
        let lines = text_lines(&card, off, 80, None, 0);
        assert_eq!(lines[2].trim_end(), "  Waiting for you");
        assert_eq!(lines[6].trim_end(), "  Working");
    }

    #[test]
    fn the_json_lists_what_fits_and_counts_the_rest() {
        let rows = six();
        let panes: Vec<&PaneRow> = rows.iter().collect();
        let card = build(WindowId(1), &panes, &[]).expect("card");
        let v = serde_json::to_value(CardJson::new(&card, Some(10))).expect("json");
        assert_eq!(v["agents"], 6);
        assert_eq!(v["more"], 2);
        assert_eq!(v["window"], "@1");
        let first = &v["shown"][0];
        assert_eq!(first["pane"], "%11");
        assert_eq!(first["state"], "blocked");
        assert_eq!(first["waiting"], "permission");
        assert_eq!(first["icon"], "warning");
        assert_eq!(first["state_words"], "Waiting for permission");
        assert_eq!(first["doing"], "Run cargo test?");
        assert_eq!(first["mark_shown"], "✳");
        let all = serde_json::to_value(CardJson::new(&card, None)).expect("json");
        assert_eq!(all["shown"].as_array().map(Vec::len), Some(6));
        assert_eq!(all["shown"][5]["icon"], serde_json::Value::Null);
    }
}
