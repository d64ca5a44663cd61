//! One agent's card (S5.2–S5.5) as rows of styled text: mark and title with the state icon at
//! the right, the description with its waiting tag, the location, the worktree line, the
//! progress bar and the subtasks. Fitting to the width (fade, path shortening) happens here and
//! in [`super::text`]; placing rows on screen is the renderer's job.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::ipc::schema::{PaneRow, Subtask};
use crate::state::AgentState;

use super::grouping::agent_name;
use super::model::PanelModel;
use super::text::{shimmer, shorten_paths, width};
use super::theme::{self, Icon};

/// Subtasks listed when unfolded; the rest are counted (`3 more`).
pub const SUBTASKS_SHOWN: usize = 5;

/// One row of a card: text on the left, and (line 1 only) the state icon at the right.
#[derive(Clone, Debug, PartialEq)]
pub struct CardRow {
    /// The text, clipped and faded at the width.
    pub left: Line<'static>,
    /// The icon drawn at the right edge.
    pub right: Option<Span<'static>>,
}

impl From<Line<'static>> for CardRow {
    fn from(left: Line<'static>) -> Self {
        CardRow { left, right: None }
    }
}

/// The heading of a card: the report's title, else the pane title, else the command.
pub fn title(p: &PaneRow) -> &str {
    match p.report_title.as_deref() {
        Some(t) if !t.trim().is_empty() => t,
        _ if !p.title.trim().is_empty() => &p.title,
        _ => &p.current_command,
    }
}

/// `session · window`, led by the state word for idle and unknown (S5.2).
pub fn location(p: &PaneRow, remote: bool) -> String {
    let window = if p.window_name.is_empty() {
        p.window_index.to_string()
    } else {
        p.window_name.clone()
    };
    let place = match (&p.machine, remote) {
        // A pane on a connected machine says which (S5.1).
        (Some(m), true) => format!("{m} · {} · {}", p.session_name, window),
        _ => format!("{} · {}", p.session_name, window),
    };
    match theme::icon(p) {
        Icon::IdleCheck => format!("Idle · {place}"),
        Icon::None => format!("Unknown · {place}"),
        _ => place,
    }
}

/// The rows of `p`'s card for a content width of `inner` cells at time `now_ms`.
pub fn card_rows(m: &PanelModel, p: &PaneRow, inner: usize, now_ms: u64) -> Vec<CardRow> {
    let show = m.options.display;
    let mut rows = Vec::with_capacity(6);
    rows.push(first_row(p, now_ms));

    let tag = match (p.state, p.kind) {
        (Some(AgentState::Blocked), Some(k)) if show.waiting_reason => Some(theme::kind_word(k)),
        _ => None,
    };
    let desc = p
        .message
        .as_deref()
        .filter(|d| show.description && !d.trim().is_empty());
    if tag.is_some() || desc.is_some() {
        let mut spans = Vec::new();
        let mut room = inner;
        if let Some(t) = tag {
            spans.push(Span::styled(
                format!(" {t} "),
                Style::new().fg(Color::Black).bg(theme::AMBER),
            ));
            spans.push(Span::raw(" "));
            room = room.saturating_sub(width(t) + 3);
        }
        if let Some(d) = desc {
            let d = shorten_paths(d, room);
            match p.state {
                Some(AgentState::Working) => {
                    spans.extend(shimmer(&d, Style::new().fg(theme::GREY), now_ms))
                }
                Some(AgentState::Error) => spans.push(Span::styled(d, Style::new().fg(theme::RED))),
                _ => spans.push(Span::styled(d, Style::new().fg(Color::Indexed(252)))),
            }
        }
        rows.push(Line::from(spans).into());
    }

    rows.push(Line::styled(location(p, m.is_remote(p)), Style::new().fg(theme::GREY)).into());

    if let Some(wt) = m.worktree(p) {
        let text = format!("{} {} · {}", theme::BRANCH, wt.folder, wt.head);
        rows.push(Line::styled(text, Style::new().fg(Color::Indexed(146))).into());
    }

    if let Some(pct) = p.progress.filter(|_| show.progress) {
        rows.push(progress_bar(pct, inner).into());
    }

    if show.subtasks && !p.subtasks.is_empty() {
        let open = m.expanded.contains(&super::model::CardKey::of(p));
        rows.push(subtask_count(&p.subtasks, open).into());
        if open {
            for s in p.subtasks.iter().take(SUBTASKS_SHOWN) {
                rows.push(subtask_row(s).into());
            }
            if p.subtasks.len() > SUBTASKS_SHOWN {
                let more = format!("    {} more", p.subtasks.len() - SUBTASKS_SHOWN);
                rows.push(Line::styled(more, Style::new().fg(theme::GREY)).into());
            }
        }
    }
    rows
}

fn first_row(p: &PaneRow, now_ms: u64) -> CardRow {
    let mut spans = Vec::with_capacity(4);
    match p.agent_mark.as_deref() {
        Some(mark) => {
            spans.push(Span::styled(
                mark.to_string(),
                Style::new().fg(theme::ACCENT),
            ));
            spans.push(Span::raw(" "));
        }
        None => {
            spans.push(Span::styled(
                theme::GENERIC_MARK,
                Style::new().fg(theme::GREY),
            ));
            spans.push(Span::raw(" "));
            spans.push(Span::styled(
                format!("{} · ", agent_name(p)),
                Style::new().fg(theme::GREY),
            ));
        }
    }
    spans.push(Span::styled(
        title(p).to_string(),
        Style::new()
            .fg(Color::Indexed(255))
            .add_modifier(Modifier::BOLD),
    ));
    let (glyph, style) = theme::icon_glyph(theme::icon(p), now_ms);
    let right = (!glyph.is_empty()).then(|| Span::styled(glyph, style));
    CardRow {
        left: Line::from(spans),
        right,
    }
}

/// `████░░░░ 42%`, as wide as fits (at most 24 cells of bar).
pub fn progress_bar(pct: u8, inner: usize) -> Line<'static> {
    let pct = pct.min(100);
    let bar = inner.saturating_sub(5).clamp(4, 24);
    let full = bar * pct as usize / 100;
    Line::from(vec![
        Span::styled("█".repeat(full), Style::new().fg(theme::BLUE)),
        Span::styled("░".repeat(bar - full), Style::new().fg(Color::Indexed(239))),
        Span::styled(format!(" {pct}%"), Style::new().fg(theme::GREY)),
    ])
}

/// The folded counting line: `▸ 7 subtasks: 2 working, 1 waiting, 4 done`.
pub fn subtask_count(subs: &[Subtask], open: bool) -> Line<'static> {
    let count = |f: &dyn Fn(&Subtask) -> bool| subs.iter().filter(|s| f(s)).count();
    let parts = [
        (count(&|s| s.state == AgentState::Error), "failed"),
        (count(&|s| s.state == AgentState::Blocked), "waiting"),
        (count(&|s| s.state == AgentState::Working), "working"),
        (count(&|s| s.state == AgentState::Idle && s.done), "done"),
        (count(&|s| s.state == AgentState::Idle && !s.done), "idle"),
    ];
    let detail: Vec<String> = parts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, w)| format!("{n} {w}"))
        .collect();
    let noun = if subs.len() == 1 {
        "subtask"
    } else {
        "subtasks"
    };
    let arrow = if open { "▾" } else { "▸" };
    Line::styled(
        format!("{arrow} {} {noun}: {}", subs.len(), detail.join(", ")),
        Style::new().fg(Color::Indexed(250)),
    )
}

/// One unfolded subtask: a state-coloured dot, its id and its message.
pub fn subtask_row(s: &Subtask) -> Line<'static> {
    let mut spans = vec![
        Span::raw("  "),
        Span::styled("●", Style::new().fg(theme::dot_color(s.state, s.done))),
        Span::raw(" "),
        Span::styled(s.id.clone(), Style::new().fg(Color::Indexed(252))),
    ];
    if let Some(msg) = s.msg.as_deref().filter(|m| !m.is_empty()) {
        spans.push(Span::styled(
            format!(" · {msg}"),
            Style::new().fg(theme::GREY),
        ));
    }
    Line::from(spans)
}
