//! The status line's side of the daemon: which tmux user options it sets for which window, pane
//! and session (from `status_line`, the one owner of what was last set), which go at once and
//! which wait for a batch (`option_batch`: only what a person's client can show is sent at once,
//! since every `set-option` redraws every client), the spinner's frames, and clearing it all on
//! shutdown.

use std::collections::{BTreeMap, BTreeSet};

use super::core::Daemon;
use super::status_line::Argv;
use crate::clock::Now;
use crate::ids::{PaneId, SessionId, WindowId};
use crate::state::WindowMark;
use crate::tmux::command::line;

impl Daemon {
    /// Sets `@thinkterm_mark` and `@thinkterm_icon` of a window and the summaries.
    pub(super) fn refresh_window_options(&mut self, now: Now, window: WindowId) {
        let mark = self.shown_mark(window);
        let argvs = self.status.window(window, mark);
        self.send_options(now, argvs);
        self.refresh_summaries(now);
        self.schedule_spinner(now);
    }

    fn refresh_summaries(&mut self, now: Now) {
        let Some(inv) = self.inventory() else { return };
        let mut per_session: BTreeMap<SessionId, Vec<WindowMark>> = BTreeMap::new();
        let mut seen = BTreeSet::new();
        for p in inv.panes.values() {
            if seen.insert((p.session, p.window)) {
                per_session
                    .entry(p.session)
                    .or_default()
                    .push(self.shown_mark(p.window));
            }
        }
        let argvs = self.status.summaries(per_session);
        self.send_options(now, argvs);
    }

    pub(super) fn schedule_spinner(&mut self, now: Now) {
        let running = !self.animated_windows().is_empty();
        self.status.schedule(now.at, self.pacing.reads(), running);
    }

    /// The windows whose shown mark is running (their own, or a nested machine's).
    fn running_windows(&self) -> Vec<WindowId> {
        let mut ws: BTreeSet<WindowId> = self.windows.rollup.marks().map(|(w, _)| w).collect();
        ws.extend(self.nested_windows());
        ws.into_iter()
            .filter(|w| self.shown_mark(*w) == WindowMark::Running)
            .collect()
    }

    /// The running windows whose spinner turns: those a person's client shows in its status
    /// line without looking at them (windows of the session, or session group, it is attached
    /// to, other than its current window). A frame is a `set-option`, and tmux answers every
    /// `set-option` by redrawing every client whole and working out every window's size again:
    /// a frame nobody can see costs that for nothing, and so does one in the tab of the window
    /// a person is looking at, whose panes show the agent at work (on the 50-pane load, the
    /// frames of the window the person's client shows were 39 of the 122 command writes a
    /// minute, about 0.05 % of a core of tmux's time). The other running windows keep their
    /// running icon, still; they turn again when a person's client shows them from another
    /// window.
    fn animated_windows(&self) -> Vec<WindowId> {
        let Some(inv) = self.inventory() else {
            return Vec::new();
        };
        let people = self.people_views();
        self.running_windows()
            .into_iter()
            .filter(|w| {
                inv.panes
                    .values()
                    .filter(|p| p.window == *w)
                    .filter_map(|p| inv.covering_session(p.session))
                    .any(|s| {
                        people
                            .iter()
                            .any(|(cs, cw)| *cs == Some(s) && *cw != Some(*w))
                    })
            })
            .collect()
    }

    /// What people's clients can show: the sessions (covering their groups) they are attached
    /// to, and the windows of those sessions with the window each one shows. Empty when nobody
    /// is attached.
    fn shown(&self) -> (BTreeSet<SessionId>, BTreeSet<WindowId>) {
        let Some(inv) = self.inventory() else {
            return Default::default();
        };
        let people = self.people_views();
        let sessions: BTreeSet<SessionId> = people.iter().filter_map(|(s, _)| *s).collect();
        let windows: BTreeSet<WindowId> = inv
            .panes
            .values()
            .filter(|p| {
                inv.covering_session(p.session)
                    .is_some_and(|s| sessions.contains(&s))
            })
            .map(|p| p.window)
            .chain(people.iter().filter_map(|(_, w)| *w))
            .collect();
        (sessions, windows)
    }

    /// Each attached person's client: the session it shows (covering its group) and its
    /// current window, as far as the inventory knows them.
    fn people_views(&self) -> Vec<(Option<SessionId>, Option<WindowId>)> {
        let Some(inv) = self.inventory() else {
            return Vec::new();
        };
        inv.people()
            .filter(|c| c.flags.attached)
            .map(|c| (c.session.and_then(|s| inv.covering_session(s)), c.window))
            .collect()
    }

    /// Sends status-line options now where a person's client can show what each is set on (its
    /// pane's window, its window, its session), and holds the others back (see `option_batch`).
    pub(super) fn send_options(&mut self, now: Now, argvs: Vec<Argv>) {
        if argvs.is_empty() {
            return;
        }
        let (sessions, windows) = self.shown();
        for argv in argvs {
            let visible = argv
                .iter()
                .position(|a| a == "-t")
                .and_then(|i| argv.get(i + 1))
                .is_some_and(|t| self.target_shown(t, &sessions, &windows));
            if visible {
                self.option_batch.sent(&argv);
                self.tmux_send(&argv);
            } else {
                self.option_batch.defer(argv, now.at);
            }
        }
    }

    /// Whether an option's target (`%N`, `@N` or `$N`) is among what people's clients show.
    fn target_shown(
        &self,
        target: &str,
        sessions: &BTreeSet<SessionId>,
        windows: &BTreeSet<WindowId>,
    ) -> bool {
        let inv = self.inventory();
        if let Some(pane) = PaneId::parse(target) {
            inv.and_then(|i| i.panes.get(&pane))
                .is_some_and(|p| windows.contains(&p.window))
        } else if let Some(window) = WindowId::parse(target) {
            windows.contains(&window)
        } else {
            SessionId::parse(target).is_some_and(|s| {
                inv.and_then(|i| i.covering_session(s))
                    .is_some_and(|c| sessions.contains(&c))
            })
        }
    }

    /// Sends the options held back, together (one redraw).
    pub(super) fn flush_options(&mut self) {
        for argv in self.option_batch.take() {
            self.tmux_send(&argv);
        }
    }

    /// The next spinner frame, with the options held back (the frame redraws anyway).
    pub(super) fn animate(&mut self, now: Now) {
        self.flush_options();
        let running = self.animated_windows();
        for argv in self.status.frame(&running) {
            self.tmux_send(&argv);
        }
        self.schedule_spinner(now);
    }

    /// Sets every option from scratch (after attaching to a server).
    pub(super) fn refresh_all_options(&mut self, now: Now) {
        self.status.reset();
        let windows: Vec<WindowId> = self.windows.looked.keys().copied().collect();
        for w in windows {
            self.refresh_window_options(now, w);
        }
    }

    /// The commands that remove our options from every window, pane and session (shutdown).
    pub(super) fn clear_options_commands(&self) -> Vec<String> {
        let Some(inv) = self.inventory() else {
            return Vec::new();
        };
        let windows: BTreeSet<WindowId> = inv.panes.values().map(|p| p.window).collect();
        let sessions: BTreeSet<SessionId> = inv.panes.values().map(|p| p.session).collect();
        super::status_line::StatusLine::clear_all(inv.panes.keys().copied(), windows, sessions)
            .iter()
            .map(|argv| line(&argv.iter().map(String::as_str).collect::<Vec<_>>()))
            .collect()
    }
}
