//! Desktop notifications from the daemon's side: whether one goes out (the background rule of
//! S6.6), what it says (the display switches of S5.3/S5.8, the panel's saved view over the
//! config's), when (the 30 s per-window throttle, a later one replacing the pending one), and
//! withdrawing a window's notification when the person looks at it. The one owner of the
//! throttle, the switches, the focus facts the rule needs and the handle on the desktop task.
//!
//! Deciding and showing are apart: a decision ([`Notifier::offer`], [`Notifier::due`]) may be
//! shown here ([`Notifier::show`]) or sent to a follower that shows it on its desktop, with its
//! switches and the machine's name (a sidecar on a laptop following this one over ssh).
//! Decisions are pure and take `now`; showing is the edge.

use std::path::PathBuf;
use std::time::{Instant, SystemTime};

use crate::effects::background::{is_background, BackgroundRule, ClientView};
use crate::effects::desktop::Desktop;
use crate::effects::notification::{self, DisplaySwitches, NoteInput};
use crate::effects::program_notes::{self, RateLimit, Verdict};
use crate::effects::throttle::Throttle;
use crate::ids::PaneId;
use crate::ids::WindowId;
use crate::osc::Occasion;

/// The display switches the panel saved, if it did, and when that file changed.
#[derive(Debug, Default)]
struct PanelView {
    path: PathBuf,
    stamp: Option<SystemTime>,
    switches: Option<DisplaySwitches>,
}

/// The notification side of the daemon.
#[derive(Debug)]
pub struct Notifier {
    desktop: Option<Desktop>,
    desktop_entry: Option<String>,
    throttle: Throttle<NoteInput>,
    /// Programs' own notifications, per pane.
    programs: RateLimit,
    /// tmux reports focus (`focus-events on`).
    focus_events: bool,
    /// The config forces the "not shown" rule.
    without_focus: bool,
    /// The config's switches.
    config_switches: DisplaySwitches,
    panel: PanelView,
}

impl Notifier {
    /// A notifier sending through `desktop` (none: decisions only, nothing is shown).
    pub fn new(
        desktop: Option<Desktop>,
        desktop_entry: Option<String>,
        without_focus: bool,
        config_switches: DisplaySwitches,
        panel_options: PathBuf,
    ) -> Self {
        Notifier {
            desktop,
            desktop_entry,
            throttle: Throttle::default(),
            programs: RateLimit::default(),
            focus_events: false,
            without_focus,
            config_switches,
            panel: PanelView {
                path: panel_options,
                ..PanelView::default()
            },
        }
    }

    /// A reload: the config's switches and rule.
    pub fn configure(&mut self, without_focus: bool, config_switches: DisplaySwitches) {
        self.without_focus = without_focus;
        self.config_switches = config_switches;
    }

    /// Whether tmux reports focus (`focus-events`), read at each re-list.
    pub fn set_focus_events(&mut self, on: bool) {
        self.focus_events = on;
    }

    /// Whether notifications can be shown at all.
    pub fn is_on(&self) -> bool {
        self.desktop.is_some()
    }

    /// The panel options file, and what it held when last read (for [`Notifier::panel_read`]
    /// off the core loop).
    pub fn panel_file(&self) -> (PathBuf, Option<SystemTime>) {
        (self.panel.path.clone(), self.panel.stamp)
    }

    /// What reading the panel options file found: its modification time and switches (`None`:
    /// no saved view, the config's switches apply).
    pub fn panel_read(&mut self, stamp: Option<SystemTime>, switches: Option<DisplaySwitches>) {
        self.panel.stamp = stamp;
        self.panel.switches = switches;
    }

    /// The switches in force: the panel's saved view, else the config's (S5.8).
    pub fn switches(&self) -> DisplaySwitches {
        self.panel.switches.unwrap_or(self.config_switches)
    }

    /// A notification may be due for `input.window`: the one to show now, or `None` (the
    /// terminal is in front, or the window's throttle holds it for later).
    pub fn offer(
        &mut self,
        now: Instant,
        clients: &[ClientView],
        input: NoteInput,
    ) -> Option<NoteInput> {
        let rule = BackgroundRule::choose(self.focus_events, self.without_focus);
        if !is_background(clients, input.window, rule) {
            tracing::debug!(window = %input.window, "not notifying: the terminal is in front");
            return None;
        }
        let window = input.window;
        self.throttle.offer(now, window, input)
    }

    /// A program's own notification about `pane` in `window`: `None` when it is not wanted (its
    /// pane is in front), else what the pane's rate limit says.
    pub fn offer_program(
        &mut self,
        now: Instant,
        clients: &[ClientView],
        window: WindowId,
        pane: PaneId,
        occasion: Occasion,
    ) -> Option<Verdict> {
        if !program_notes::wanted(occasion, self.in_front(clients, window)) {
            return None;
        }
        Some(self.programs.offer(now, pane))
    }

    /// A closed pane.
    pub fn forget_pane(&mut self, pane: PaneId) {
        self.programs.forget(pane);
    }

    /// Whether `window` is in front of the person (S6.5, the rule the sidecar's own
    /// notifications follow).
    pub fn in_front(&self, clients: &[ClientView], window: WindowId) -> bool {
        let rule = BackgroundRule::choose(self.focus_events, self.without_focus);
        !is_background(clients, window, rule)
    }

    /// Notifications whose throttle interval ended.
    pub fn due(&mut self, now: Instant) -> Vec<NoteInput> {
        self.throttle.due(now)
    }

    /// When the next held note is due.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.throttle.next_deadline()
    }

    /// The person looked at the window: its notification is no longer news (the shown one
    /// closes, a held one is dropped).
    pub fn looked_at(&mut self, window: WindowId) {
        if let Some(d) = &self.desktop {
            d.close_window(window);
        }
        self.throttle.withdraw(window);
    }

    /// A closed window.
    pub fn forget(&mut self, window: WindowId) {
        self.throttle.forget(window);
    }

    /// Forgets every window (another tmux server).
    pub fn reset(&mut self) {
        self.throttle = Throttle::default();
    }

    /// Shows a notification with this machine's switches; `machine` names the connected
    /// machine it is about (None: this computer), before its summary. The desktop task has its
    /// own time limits: this never waits.
    pub fn show(&self, input: &NoteInput, machine: Option<&str>) {
        let Some(d) = &self.desktop else { return };
        let mut note = notification::build(input, &self.switches(), self.desktop_entry.as_deref());
        if let Some(m) = machine {
            note.summary = notification::cut(
                &format!("{} · {}", notification::one_line(m), note.summary),
                notification::SUMMARY_MAX_CHARS,
            );
            note.machine = Some(m.to_string());
        }
        tracing::debug!(summary = %note.summary, "notify");
        d.show(note);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effects::background::ClientFlags;
    use crate::effects::desktop::DesktopConfig;
    use crate::effects::notification::NoteKind;
    use crate::ids::{PaneId, SessionId};
    use std::time::Duration;

    fn input(window: u32) -> NoteInput {
        NoteInput {
            window_name: "s:w".into(),
            window: WindowId(window),
            pane: PaneId(1),
            kind: NoteKind::Blocked,
            title: None,
            message: Some("Approve?".into()),
            waiting: None,
            progress: None,
            subtasks: Vec::new(),
        }
    }

    fn person(window: u32, focused: bool) -> ClientView {
        ClientView {
            name: "/dev/pts/1".into(),
            session: SessionId(0),
            window: WindowId(window),
            activity: 0,
            flags: ClientFlags {
                attached: true,
                focused,
                control_mode: false,
            },
        }
    }

    fn notifier() -> Notifier {
        // A desktop task that is never reached (no bus here): decisions only.
        let (d, _events) = Desktop::spawn(DesktopConfig {
            address: Some("unix:path=/nonexistent".into()),
            ..DesktopConfig::default()
        });
        Notifier::new(
            Some(d),
            None,
            false,
            DisplaySwitches::default(),
            PathBuf::from("/nonexistent/panel.toml"),
        )
    }

    #[tokio::test]
    async fn only_background_windows_notify_and_the_throttle_holds_the_latest() {
        let mut n = notifier();
        let t = Instant::now();
        // Without focus events: a window shown in a client is in front.
        assert!(n.offer(t, &[person(1, true)], input(1)).is_none());
        let first = n
            .offer(t, &[person(2, true)], input(1))
            .expect("background");
        assert_eq!(first.window, WindowId(1));
        // Within 30 s the next one waits, and is due when the interval ends.
        assert!(n.offer(t + Duration::from_secs(5), &[], input(1)).is_none());
        assert_eq!(n.next_deadline(), Some(t + Duration::from_secs(30)));
        assert_eq!(n.due(t + Duration::from_secs(30)).len(), 1);
        // With focus events, any focused terminal means the person is at it.
        n.set_focus_events(true);
        assert!(n
            .offer(t + Duration::from_secs(60), &[person(2, true)], input(3))
            .is_none());
        assert!(n
            .offer(t + Duration::from_secs(60), &[person(2, false)], input(3))
            .is_some());
    }

    #[tokio::test]
    async fn looking_drops_a_held_note_and_the_panel_view_wins_over_the_config() {
        let mut n = notifier();
        let t = Instant::now();
        assert!(n.offer(t, &[], input(1)).is_some());
        assert!(n.offer(t + Duration::from_secs(1), &[], input(1)).is_none());
        n.looked_at(WindowId(1));
        assert!(n.due(t + Duration::from_secs(31)).is_empty());
        let off = DisplaySwitches {
            description: false,
            ..DisplaySwitches::default()
        };
        n.panel_read(Some(SystemTime::UNIX_EPOCH), Some(off));
        assert_eq!(n.switches(), off);
        let decided = n
            .offer(t + Duration::from_secs(60), &[], input(2))
            .expect("note");
        // What is shown is built with the switches in force.
        let shown = notification::build(&decided, &n.switches(), None);
        assert!(!shown.body.contains("Approve"), "{}", shown.body);
        n.panel_read(None, None);
        assert_eq!(n.switches(), DisplaySwitches::default());
    }

    #[test]
    fn without_a_desktop_decisions_are_still_made_for_a_follower() {
        let mut n = Notifier::new(
            None,
            None,
            false,
            DisplaySwitches::default(),
            PathBuf::new(),
        );
        assert!(!n.is_on());
        assert!(n.offer(Instant::now(), &[], input(1)).is_some());
    }
}
