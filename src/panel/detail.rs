//! The two other screens: the detail card of one agent (S5.10: full title and description,
//! agent and state, progress and what it waits for, session, machine, time in this state,
//! subtasks) and the notifications section (S4.2: needs-attention and done windows).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::ipc::schema::{PaneRow, WindowMark};
use crate::state::AgentState;

use super::card::{subtask_row, title};
use super::grouping::{agent_name, window_label};
use super::model::PanelModel;
use super::text::{put_line, wrap};
use super::theme;

/// The machine a local pane runs on.
pub const THIS_COMPUTER: &str = "this computer";

/// `45 s`, `3 min 12 s`, `2 h 5 min`, `3 d 4 h`.
pub fn elapsed(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        3600..=86_399 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        _ => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
    }
}

/// The state in words, as the detail card says it.
pub fn state_words(p: &PaneRow) -> String {
    match p.state {
        Some(AgentState::Working) => "Working".into(),
        Some(AgentState::Blocked) => match p.kind {
            Some(k) => format!("Waiting for {}", theme::kind_word(k)),
            None => "Waiting for you".into(),
        },
        Some(AgentState::Error) => "Stopped on an error".into(),
        Some(AgentState::Idle) if p.unseen_result => "Done, result not seen yet".into(),
        Some(AgentState::Idle) => "Idle".into(),
        None => "Unknown".into(),
    }
}

fn field(name: &str, value: String) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{name:<10}"), Style::new().fg(theme::GREY)),
        Span::raw(value),
    ])
}

/// Draws the selected agent's detail card.
pub fn detail(m: &PanelModel, area: Rect, buf: &mut Buffer, now_ms: u64) {
    let Some(p) = m.selected_pane() else {
        put_line(
            buf,
            area.x + 1,
            area.y,
            area.width.saturating_sub(1),
            &Line::raw("No agent selected"),
        );
        return;
    };
    let w = area.width.saturating_sub(2) as usize;
    let mut lines: Vec<Line<'static>> = Vec::new();
    let bold = Style::new()
        .fg(Color::Indexed(255))
        .add_modifier(Modifier::BOLD);
    lines.extend(wrap(title(p), w).into_iter().map(|l| Line::styled(l, bold)));
    if let Some(d) = p.message.as_deref().filter(|d| !d.trim().is_empty()) {
        let style = match p.state {
            Some(AgentState::Error) => Style::new().fg(theme::RED),
            _ => Style::new().fg(Color::Indexed(252)),
        };
        lines.extend(wrap(d, w).into_iter().map(|l| Line::styled(l, style)));
    }
    lines.push(Line::raw(""));
    lines.push(field(
        "Agent",
        match p.agent_version.as_deref() {
            Some(v) => format!("{} {v}", agent_name(p)),
            None => agent_name(p).to_string(),
        },
    ));
    if p.unrecognised {
        // The drift alarm (docs/detection.md): the state shown is the rules' fallback.
        lines.push(field(
            "Screen",
            "not recognised by its rules (explain PANE --save DIR)".to_string(),
        ));
    }
    lines.push(field("State", state_words(p)));
    if let Some(pct) = p.progress {
        lines.push(field("Progress", format!("{pct}%")));
    }
    if let Some(k) = p.kind.filter(|_| p.state == Some(AgentState::Blocked)) {
        lines.push(field("Waits for", theme::kind_word(k).to_string()));
    }
    lines.push(field(
        "Session",
        format!("{} · window {}", p.session_name, window_label(p)),
    ));
    let machine = match (&p.machine, m.is_remote(p)) {
        (Some(name), true) => name.clone(),
        _ => THIS_COMPUTER.to_string(),
    };
    lines.push(field("Machine", machine));
    if let Some(wt) = m.worktree(p) {
        lines.push(field("Worktree", format!("{} · {}", wt.folder, wt.head)));
    }
    lines.push(field("Elapsed", elapsed(now_ms.saturating_sub(p.since_ms))));
    if !p.subtasks.is_empty() {
        lines.push(field("Subtasks", p.subtasks.len().to_string()));
        lines.extend(p.subtasks.iter().map(subtask_row));
    }
    for (i, line) in lines.iter().take(area.height as usize).enumerate() {
        put_line(buf, area.x + 1, area.y + i as u16, w as u16, line);
    }
}

/// Draws the notifications section: needs-attention and done windows, most urgent first.
pub fn notifications(m: &PanelModel, area: Rect, buf: &mut Buffer) {
    let rows = m.notifications();
    let head = Line::from(vec![
        Span::styled(" Notifications", Style::new().add_modifier(Modifier::BOLD)),
        Span::styled(format!("  {}", rows.len()), Style::new().fg(theme::GREY)),
    ]);
    put_line(buf, area.x, area.y, area.width, &head);
    if rows.is_empty() {
        let text = Line::styled("  Nothing needs you", Style::new().fg(theme::GREY));
        put_line(buf, area.x, area.y + 2, area.width, &text);
        return;
    }
    let h = area.height.saturating_sub(1) as usize;
    let skip = m.notice_cursor.saturating_sub(h.saturating_sub(1));
    for (i, w) in rows.iter().enumerate().skip(skip).take(h) {
        let y = area.y + 1 + (i - skip) as u16;
        let (glyph, style) = match w.mark {
            WindowMark::Error => ("✗", Style::new().fg(theme::RED)),
            WindowMark::Attention => ("⚠", Style::new().fg(theme::AMBER)),
            _ => ("✓", Style::new().fg(theme::GREEN)),
        };
        let name = if w.window_name.is_empty() {
            w.window_index.to_string()
        } else {
            w.window_name.clone()
        };
        let mut spans = vec![
            Span::styled(glyph, style),
            Span::raw(" "),
            Span::styled(
                format!("{} · {}", w.session_name, name),
                Style::new().add_modifier(Modifier::BOLD),
            ),
        ];
        if let Some(msg) = w
            .message
            .as_deref()
            .filter(|_| m.options.display.description)
        {
            spans.push(Span::styled(
                format!("  {msg}"),
                Style::new().fg(theme::GREY),
            ));
        }
        if i == m.notice_cursor {
            buf.set_string(area.x, y, "▌", Style::new().fg(theme::ACCENT));
        }
        put_line(
            buf,
            area.x + 2,
            y,
            area.width.saturating_sub(3),
            &Line::from(spans),
        );
    }
}
