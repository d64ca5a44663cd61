//! The card's data: which window a command line names, and that window's card built from the
//! daemon's snapshot. Pure: the snapshot comes in, nothing is read or written.
//!
//! Every text that came from a pane (titles, reports, window and session names) is cleaned of
//! control characters here, once, so no later step can pass an escape sequence on to a
//! terminal or a newline into a tmux command.

use std::str::FromStr;

use serde::{Serialize, Serializer};

use crate::ids::{PaneId, SessionId, WindowId};
use crate::ipc::schema::{MachineRow, PaneRow, WindowMark, WindowRow};
use crate::panel::card::title;
use crate::panel::detail::state_words;
use crate::panel::grouping::agent_name;
use crate::panel::model::{category, is_agent, remote};
use crate::panel::theme::{self, Icon};
use crate::state::{AgentState, BlockedKind};

/// A window named on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WindowTarget {
    /// `@N`.
    Window(WindowId),
    /// `%N`: the window that holds this pane.
    Pane(PaneId),
    /// `SESSION:WINDOW`, the window by its index or its name.
    Named {
        /// The session's name.
        session: String,
        /// The window's index or name.
        window: String,
    },
}

impl FromStr for WindowTarget {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(w) = WindowId::parse(s) {
            return Ok(WindowTarget::Window(w));
        }
        if let Some(p) = PaneId::parse(s) {
            return Ok(WindowTarget::Pane(p));
        }
        // tmux allows no `:` in a session name, so the first one ends it.
        match s.split_once(':') {
            Some((session, window)) if !session.is_empty() && !window.is_empty() => {
                Ok(WindowTarget::Named {
                    session: session.to_string(),
                    window: window.to_string(),
                })
            }
            _ => Err(format!(
                "not a window: {s:?} (give @N, %N for the window of a pane, or SESSION:WINDOW)"
            )),
        }
    }
}

/// The card of one window.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WindowCard {
    /// The window.
    pub window: WindowId,
    /// Its session.
    pub session: SessionId,
    /// The session's name.
    pub session_name: String,
    /// The window's index in its session.
    pub window_index: u32,
    /// The window's name.
    pub window_name: String,
    /// The window's mark (None: the snapshot has no row for it).
    pub mark: Option<WindowMark>,
    /// Every agent of the window, most urgent first (S5.7's order: needs attention, running,
    /// done, idle, unknown), then by pane index.
    pub agents: Vec<AgentEntry>,
}

/// One agent on the card.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AgentEntry {
    /// Its pane.
    pub pane: PaneId,
    /// Whether it is its window's active pane.
    pub active: bool,
    /// The agent's id (None for a program known only by its reports' name).
    pub agent: Option<String>,
    /// Its display name.
    pub agent_name: String,
    /// Its own mark (None: the generic mark, then its name before the title, S5.2).
    pub mark: Option<String>,
    /// The heading: the report's title, else the pane title, else the command.
    pub title: String,
    /// The state (None: unknown).
    pub state: Option<AgentState>,
    /// Finished, result not seen yet.
    pub unseen_result: bool,
    /// The state icon.
    #[serde(serialize_with = "icon_word")]
    pub icon: Icon,
    /// The state in words (`Waiting for permission`).
    pub state_words: String,
    /// Progress 0..=100, when the program reported it.
    pub progress: Option<u8>,
    /// What a blocked program waits for, when it said.
    pub waiting: Option<BlockedKind>,
    /// What the program does, has finished or why it stopped (its report's `msg`).
    pub doing: Option<String>,
}

impl AgentEntry {
    /// The mark shown: its own, else the generic one.
    pub fn mark_glyph(&self) -> &str {
        self.mark.as_deref().unwrap_or(theme::GENERIC_MARK)
    }

    /// Line 1's text without the icon: mark and title, with the name between them for an
    /// agent without a mark of its own (`◆ Soul · fix the build`).
    pub fn heading(&self) -> String {
        match &self.mark {
            Some(m) => format!("{m} {}", self.title),
            None => format!(
                "{} {} · {}",
                theme::GENERIC_MARK,
                self.agent_name,
                self.title
            ),
        }
    }
}

/// The JSON word of an icon (`docs/schema.md`).
pub fn icon_name(i: Icon) -> Option<&'static str> {
    match i {
        Icon::Spinner => Some("spinner"),
        Icon::Warning => Some("warning"),
        Icon::Cross => Some("cross"),
        Icon::Result => Some("check"),
        Icon::IdleCheck => Some("idle_check"),
        Icon::None => None,
    }
}

fn icon_word<S: Serializer>(i: &Icon, s: S) -> Result<S::Ok, S::Error> {
    icon_name(*i).serialize(s)
}

/// Control characters (escape sequences, newlines) replaced by spaces, ends trimmed.
pub fn clean(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_string()
}

/// This computer's panes: a connected machine's windows have their own ids and cannot be
/// jumped to from here.
pub fn local_panes<'a>(panes: &'a [PaneRow], machines: &[MachineRow]) -> Vec<&'a PaneRow> {
    let local = machines.iter().find(|m| m.local).map(|m| m.name.as_str());
    panes.iter().filter(|p| !remote(p, local)).collect()
}

/// The window `target` names among `panes`, or why there is none.
pub fn resolve(target: &WindowTarget, panes: &[&PaneRow]) -> Result<WindowId, String> {
    match target {
        WindowTarget::Window(w) => panes
            .iter()
            .any(|p| p.window == *w)
            .then_some(*w)
            .ok_or_else(|| format!("no window {w} on this tmux server")),
        WindowTarget::Pane(id) => panes
            .iter()
            .find(|p| p.pane == *id)
            .map(|p| p.window)
            .ok_or_else(|| format!("no pane {id} on this tmux server")),
        WindowTarget::Named { session, window } => {
            let in_session: Vec<&&PaneRow> = panes
                .iter()
                .filter(|p| p.session_name == *session)
                .collect();
            if in_session.is_empty() {
                return Err(format!("no session {session:?} on this tmux server"));
            }
            let by_index = window
                .parse::<u32>()
                .ok()
                .and_then(|i| in_session.iter().find(|p| p.window_index == i));
            by_index
                .or_else(|| in_session.iter().find(|p| p.window_name == *window))
                .map(|p| p.window)
                .ok_or_else(|| format!("no window {window:?} in session {session:?}"))
        }
    }
}

/// The card of `window` from this computer's `panes` (see [`local_panes`]) and the snapshot's
/// `windows`; None when no pane of it is listed.
pub fn build(window: WindowId, panes: &[&PaneRow], windows: &[WindowRow]) -> Option<WindowCard> {
    let in_window: Vec<&PaneRow> = panes
        .iter()
        .copied()
        .filter(|p| p.window == window)
        .collect();
    let first = in_window.first()?;
    let mark = windows
        .iter()
        .find(|w| w.window == window && w.session == first.session)
        .map(|w| w.mark);
    let mut agents: Vec<&PaneRow> = in_window.iter().copied().filter(|p| is_agent(p)).collect();
    agents.sort_by_key(|p| (category(p), p.pane_index, p.pane));
    Some(WindowCard {
        window,
        session: first.session,
        session_name: clean(&first.session_name),
        window_index: first.window_index,
        window_name: clean(&first.window_name),
        mark,
        agents: agents.into_iter().map(entry).collect(),
    })
}

fn entry(p: &PaneRow) -> AgentEntry {
    let blocked = p.state == Some(AgentState::Blocked);
    AgentEntry {
        pane: p.pane,
        active: p.active,
        agent: p.agent.clone(),
        agent_name: clean(agent_name(p)),
        mark: p.agent_mark.as_deref().map(clean).filter(|m| !m.is_empty()),
        title: clean(title(p)),
        state: p.state,
        unseen_result: p.unseen_result,
        icon: theme::icon(p),
        state_words: state_words(p),
        progress: p.progress.map(|n| n.min(100)),
        waiting: p.kind.filter(|_| blocked),
        doing: p.message.as_deref().map(clean).filter(|m| !m.is_empty()),
    }
}

impl WindowCard {
    /// The window's name, or its index when it has none.
    pub fn name(&self) -> String {
        if self.window_name.is_empty() {
            self.window_index.to_string()
        } else {
            self.window_name.clone()
        }
    }

    /// `1 agent`, `6 agents`.
    pub fn count_words(&self) -> String {
        match self.agents.len() {
            1 => "1 agent".to_string(),
            n => format!("{n} agents"),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ipc::schema::StateSource;

    /// A pane row for the card's tests.
    pub(crate) fn row(pane: u32, window: u32, index: u32, state: Option<AgentState>) -> PaneRow {
        PaneRow {
            pane: PaneId(pane),
            window: WindowId(window),
            session: SessionId(1),
            session_name: "proj".into(),
            window_index: window,
            window_name: format!("Thread {window}"),
            pane_index: index,
            title: format!("task {pane}"),
            active: index == 0,
            window_active: true,
            current_path: "/".into(),
            current_command: "bash".into(),
            fg_pid: None,
            fg_process: None,
            fg_argv: Vec::new(),
            process_less: false,
            agent: Some("claude-code".into()),
            agent_name: Some("Claude Code".into()),
            agent_mark: Some("✳".into()),
            agent_version: None,
            unrecognised: false,
            state,
            unseen_result: false,
            source: StateSource::ScreenRule,
            rule: None,
            message: None,
            report_title: None,
            kind: None,
            progress: None,
            subtasks: Vec::new(),
            since_ms: 0,
            window_mark: WindowMark::Idle,
            machine: None,
            shows: None,
        }
    }

    #[test]
    fn targets_parse_ids_panes_and_session_windows() {
        assert_eq!("@3".parse(), Ok(WindowTarget::Window(WindowId(3))));
        assert_eq!("%12".parse(), Ok(WindowTarget::Pane(PaneId(12))));
        assert_eq!(
            "proj:Thread 2".parse(),
            Ok(WindowTarget::Named {
                session: "proj".into(),
                window: "Thread 2".into()
            })
        );
        for bad in ["", "@", "proj", ":1", "proj:"] {
            let e = bad.parse::<WindowTarget>().expect_err(bad);
            assert!(e.contains("SESSION:WINDOW"), "{e}");
        }
    }

    #[test]
    fn a_target_resolves_by_id_pane_index_or_name_and_says_what_is_missing() {
        let rows = [row(1, 1, 0, None), row(2, 2, 0, None), row(3, 2, 1, None)];
        let panes: Vec<&PaneRow> = rows.iter().collect();
        let r = |s: &str| resolve(&s.parse().expect("target"), &panes);
        assert_eq!(r("@2"), Ok(WindowId(2)));
        assert_eq!(r("%3"), Ok(WindowId(2)));
        assert_eq!(r("proj:1"), Ok(WindowId(1)));
        assert_eq!(r("proj:Thread 2"), Ok(WindowId(2)));
        assert_eq!(r("@9"), Err("no window @9 on this tmux server".into()));
        assert_eq!(r("%9"), Err("no pane %9 on this tmux server".into()));
        assert_eq!(
            r("other:1"),
            Err("no session \"other\" on this tmux server".into())
        );
        assert_eq!(
            r("proj:7"),
            Err("no window \"7\" in session \"proj\"".into())
        );
    }

    #[test]
    fn the_card_lists_the_windows_agents_most_urgent_first_with_clean_text() {
        let mut rows = [
            row(1, 1, 0, Some(AgentState::Idle)),
            row(2, 1, 1, Some(AgentState::Working)),
            row(3, 1, 2, Some(AgentState::Blocked)),
            row(4, 1, 3, None),
            row(5, 2, 0, Some(AgentState::Blocked)),
        ];
        rows[3].agent = None;
        rows[3].agent_name = None; // a plain shell: not an agent
        rows[2].kind = Some(BlockedKind::Permission);
        rows[2].title = "fix\x1b]0;evil\x07 the\nbuild".into();
        rows[2].message = Some("  Run cargo test?\r\n".into());
        rows[1].progress = Some(140);
        rows[1].agent_mark = None;
        rows[1].kind = Some(BlockedKind::Question); // not blocked: no waiting reason
        let panes: Vec<&PaneRow> = rows.iter().collect();
        let card = build(WindowId(1), &panes, &[]).expect("a card");
        assert_eq!(card.name(), "Thread 1");
        assert_eq!(card.count_words(), "3 agents");
        let order: Vec<PaneId> = card.agents.iter().map(|a| a.pane).collect();
        assert_eq!(order, [PaneId(3), PaneId(2), PaneId(1)]);
        let blocked = &card.agents[0];
        assert_eq!(blocked.title, "fix ]0;evil  the build");
        assert_eq!(blocked.doing.as_deref(), Some("Run cargo test?"));
        assert_eq!(blocked.waiting, Some(BlockedKind::Permission));
        assert_eq!(blocked.state_words, "Waiting for permission");
        assert_eq!(blocked.icon, Icon::Warning);
        let working = &card.agents[1];
        assert_eq!(working.progress, Some(100));
        assert_eq!(working.waiting, None);
        assert_eq!(working.heading(), "◆ Claude Code · task 2");
        assert_eq!(card.agents[2].heading(), "✳ task 1");
        assert!(build(WindowId(9), &panes, &[]).is_none());
    }
}
