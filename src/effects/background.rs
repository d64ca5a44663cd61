//! Whether a window counts as "in the background" for notifications (S6.6). Pure.
//!
//! With focus known (tmux `focus-events on`), a notification goes out only while no attached
//! client's terminal has focus. Without it (every client reads as focused), or when the config
//! asks for it, the rule is "the window is not the current window of any attached client".
//! Control-mode clients (the sidecar's own connections, scripts) are never a person's terminal.

use crate::ids::{SessionId, WindowId};
/// Parsed once, by the inventory.
pub use crate::tmux::inventory::ClientFlags;

/// What the effects need to know about one tmux client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientView {
    /// The client's name as tmux targets it (`#{client_name}`, usually its tty, `/dev/pts/3`).
    pub name: String,
    /// The session it shows.
    pub session: SessionId,
    /// The window it shows (its session's current window).
    pub window: WindowId,
    /// `#{client_activity}`: unix seconds of its last input.
    pub activity: u64,
    /// Its flags.
    pub flags: ClientFlags,
}

impl ClientView {
    /// An attached client that is not in control mode: a person's terminal.
    pub fn is_person(&self) -> bool {
        self.flags.attached && !self.flags.control_mode
    }
}

/// Which rule decides "in the background".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackgroundRule {
    /// No person's terminal has focus.
    NoFocus,
    /// The window is not the current window of any person's terminal.
    NotShown,
}

impl BackgroundRule {
    /// The rule in force: [`BackgroundRule::NoFocus`] only when tmux knows focus
    /// (`focus-events on`) and the config does not force the fallback.
    pub fn choose(focus_events: bool, force_fallback: bool) -> Self {
        if focus_events && !force_fallback {
            BackgroundRule::NoFocus
        } else {
            BackgroundRule::NotShown
        }
    }
}

/// Whether `window` is in the background under `rule`, given every client of the server.
pub fn is_background(clients: &[ClientView], window: WindowId, rule: BackgroundRule) -> bool {
    let mut people = clients.iter().filter(|c| c.is_person());
    match rule {
        BackgroundRule::NoFocus => !people.any(|c| c.flags.focused),
        BackgroundRule::NotShown => !people.any(|c| c.window == window),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(name: &str, window: u32, flags: &str) -> ClientView {
        ClientView {
            name: name.into(),
            session: SessionId(0),
            window: WindowId(window),
            activity: 0,
            flags: ClientFlags::parse(flags),
        }
    }

    #[test]
    fn flags_parse_from_tmux_words() {
        let f = ClientFlags::parse("attached,focused,control-mode,UTF-8");
        assert!(f.attached && f.focused && f.control_mode);
        assert_eq!(ClientFlags::parse(""), ClientFlags::default());
        assert!(ClientFlags::parse("UTF-8,attached").attached);
    }

    #[test]
    fn fallback_rule_looks_at_shown_windows_of_people_only() {
        let rule = BackgroundRule::choose(false, false);
        assert_eq!(rule, BackgroundRule::NotShown);
        let clients = [
            client("/dev/pts/1", 1, "attached,focused"),
            client("ctl", 2, "attached,control-mode"),
        ];
        assert!(!is_background(&clients, WindowId(1), rule));
        // Shown only to a control-mode client: nobody sees it.
        assert!(is_background(&clients, WindowId(2), rule));
        // A detached client does not count.
        let detached = [client("/dev/pts/1", 1, "")];
        assert!(is_background(&detached, WindowId(1), rule));
        assert!(is_background(&[], WindowId(1), rule));
    }

    #[test]
    fn focus_rule_needs_no_focused_person() {
        let rule = BackgroundRule::choose(true, false);
        assert_eq!(rule, BackgroundRule::NoFocus);
        let focused = [client("/dev/pts/1", 5, "attached,focused")];
        // The terminal has focus: even another window is not in the background.
        assert!(!is_background(&focused, WindowId(1), rule));
        let unfocused = [
            client("/dev/pts/1", 1, "attached"),
            client("c", 1, "attached,focused,control-mode"),
        ];
        // Shown, but the terminal lost focus: the person is elsewhere.
        assert!(is_background(&unfocused, WindowId(1), rule));
        // The config switch forces the fallback even with focus known.
        let forced = BackgroundRule::choose(true, true);
        assert!(!is_background(&unfocused, WindowId(1), forced));
    }
}
