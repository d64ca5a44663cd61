//! Glyphs and colours of the panel: state icons (S5.2), the generic agent mark, card
//! backgrounds (a raised card one step brighter, S5.6) and the subtask dots.

use ratatui::style::{Color, Modifier, Style};

use crate::ipc::schema::PaneRow;
use crate::state::AgentState;

/// The mark of an agent that has none of its own (then its name follows, S5.2).
pub const GENERIC_MARK: &str = "◆";
/// The branch icon of the worktree line (S5.5).
pub const BRANCH: &str = "⎇";
/// Frames of the working spinner.
pub const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// Milliseconds per spinner frame.
pub const SPINNER_STEP_MS: u64 = 100;
/// Amber.
pub const AMBER: Color = Color::Indexed(214);
/// Red.
pub const RED: Color = Color::Indexed(203);
/// Green.
pub const GREEN: Color = Color::Indexed(78);
/// Grey.
pub const GREY: Color = Color::Indexed(244);
/// Working blue.
pub const BLUE: Color = Color::Indexed(75);
/// The accent of the selection bar.
pub const ACCENT: Color = Color::Indexed(111);
/// Card background.
pub const CARD_BG: Color = Color::Indexed(235);
/// A raised card's background: one step brighter.
pub const RAISED_BG: Color = Color::Indexed(237);

/// Which icon a card's state shows at the right of line 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Icon {
    /// Working: a spinner.
    Spinner,
    /// Waiting for the person: amber warning.
    Warning,
    /// Stopped on an error: red cross.
    Cross,
    /// Finished, result not yet seen: green check.
    Result,
    /// Idle: grey check.
    IdleCheck,
    /// Unknown: no icon.
    None,
}

/// The icon for a pane.
pub fn icon(p: &PaneRow) -> Icon {
    match p.state {
        Some(AgentState::Error) => Icon::Cross,
        Some(AgentState::Blocked) => Icon::Warning,
        Some(AgentState::Working) => Icon::Spinner,
        _ if p.unseen_result => Icon::Result,
        Some(AgentState::Idle) => Icon::IdleCheck,
        None => Icon::None,
    }
}

/// The glyph and style of an icon at time `now_ms` (the spinner turns with time).
pub fn icon_glyph(i: Icon, now_ms: u64) -> (&'static str, Style) {
    match i {
        Icon::Spinner => (
            SPINNER[(now_ms / SPINNER_STEP_MS) as usize % SPINNER.len()],
            Style::new().fg(BLUE),
        ),
        Icon::Warning => ("⚠", Style::new().fg(AMBER).add_modifier(Modifier::BOLD)),
        Icon::Cross => ("✗", Style::new().fg(RED).add_modifier(Modifier::BOLD)),
        Icon::Result => ("✓", Style::new().fg(GREEN).add_modifier(Modifier::BOLD)),
        Icon::IdleCheck => ("✓", Style::new().fg(GREY)),
        Icon::None => ("", Style::new()),
    }
}

/// The colour of a subtask's dot.
pub fn dot_color(state: AgentState, done: bool) -> Color {
    match state {
        AgentState::Error => RED,
        AgentState::Blocked => AMBER,
        AgentState::Working => BLUE,
        AgentState::Idle if done => GREEN,
        AgentState::Idle => GREY,
    }
}

/// The words of a waiting reason tag.
pub fn kind_word(k: crate::state::BlockedKind) -> &'static str {
    match k {
        crate::state::BlockedKind::Permission => "permission",
        crate::state::BlockedKind::Question => "question",
        crate::state::BlockedKind::Auth => "sign-in",
    }
}
