//! The window layer of the daemon: feeds pane statuses and "looked at" facts to the
//! [`Rollup`](crate::thread::Rollup) and performs what it asks: status-line options, sounds,
//! notifications (background rule, 30 s throttle), results marked seen, the done file. Also
//! bringing a pane to the front (`focus`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use super::Daemon;
use crate::effects::background::{is_background, BackgroundRule, ClientFlags, ClientView};
use crate::effects::focus::{self, FocusTarget};
use crate::effects::notification::{self, NoteInput, NoteKind};
use crate::effects::sound::Sound as SoundFile;
use crate::ids::{PaneId, SessionId, WindowId};
use crate::ipc::schema::{WindowMark, WindowRow};
use crate::pane::PaneStatus;
use crate::thread::{icon, persist, NotifyReason, RollupEffect, RollupInput, Sound};
use crate::tmux::command::line;

/// State of the window layer, owned by the daemon.
#[derive(Default)]
pub struct Windows {
    /// What was last told to the rollup about each window being looked at.
    pub looked: HashMap<WindowId, (bool, Option<PaneId>)>,
    /// Icons last set per window (to skip redundant set-option commands).
    pub icons: HashMap<WindowId, String>,
    /// Marks last set per window (a spinner frame changes the icon, not the mark).
    pub marks: HashMap<WindowId, WindowMark>,
    /// Summaries last set per session.
    pub summaries: HashMap<SessionId, String>,
    /// Spinner frame counter.
    pub frame: usize,
    /// The next spinner frame, while something runs.
    pub animate_at: Option<Instant>,
    /// Whether tmux reports focus (`focus-events on`).
    pub focus_events: bool,
    /// The done-file key of the server.
    pub server_key: String,
}

impl Daemon {
    /// Sends one input to the rollup and performs its effects.
    pub(super) fn rollup(&mut self, input: RollupInput) {
        let fx = self.rollup.on_input(Instant::now(), input);
        self.on_rollup_effects(fx);
    }

    /// A pane's status changed.
    pub(super) fn rollup_pane(&mut self, pane: PaneId, status: PaneStatus) {
        let Some(window) = self.pane_window(pane) else {
            return;
        };
        self.set_pane_option(pane, status.state.map(|s| s.as_str()).unwrap_or(""));
        self.rollup(RollupInput::Pane {
            window,
            pane,
            status,
        });
    }

    fn pane_window(&self, pane: PaneId) -> Option<WindowId> {
        self.observer
            .as_ref()?
            .inventory()
            .panes
            .get(&pane)
            .map(|p| p.window)
    }

    fn on_rollup_effects(&mut self, fx: Vec<RollupEffect>) {
        for e in fx {
            match e {
                RollupEffect::MarkChanged { window, old, new } => {
                    tracing::debug!(%window, ?old, ?new, "window mark");
                    self.changed = true;
                    self.refresh_window_options(window);
                }
                RollupEffect::Sound { sound, .. } => {
                    if self.config.sound_enabled() {
                        let s = match sound {
                            Sound::Done => SoundFile::Done,
                            Sound::Waiting => SoundFile::Waiting,
                        };
                        let played = self.sound.play(s);
                        tracing::debug!(?played, ?sound, "sound");
                    }
                }
                RollupEffect::Notify {
                    window,
                    reason,
                    pane,
                    message,
                    ..
                } => {
                    self.offer_notification(window, reason, pane, message);
                }
                RollupEffect::MarkSeen(pane) => {
                    if let Some(p) = self.panes.get_mut(&pane) {
                        let fx = p.seen(Instant::now());
                        self.on_pane_effects(pane, fx);
                    }
                }
                RollupEffect::DoneSetChanged => self.save_done(),
            }
        }
    }

    /// Recomputes which windows are looked at (after clients or windows changed) and tells the
    /// rollup about every change. A window is looked at while it is the current window of an
    /// attached, focused client that is not in control mode. With `focus-events off` tmux never
    /// clears a client's focused flag, so an attached client counts as focused.
    pub(super) fn update_looked(&mut self) {
        let Some(obs) = &self.observer else { return };
        let inv = obs.inventory();
        let mut now: HashMap<WindowId, (bool, Option<PaneId>)> = HashMap::new();
        for p in inv.panes.values() {
            let e = now.entry(p.window).or_insert((false, None));
            if p.active {
                e.1 = Some(p.id);
            }
        }
        for c in inv.people() {
            if c.focused && c.flags.split(',').any(|f| f == "attached") {
                if let Some(w) = c.window {
                    if let Some(e) = now.get_mut(&w) {
                        e.0 = true;
                    }
                }
            }
        }
        let gone: Vec<WindowId> = self
            .windows
            .looked
            .keys()
            .filter(|w| !now.contains_key(w))
            .copied()
            .collect();
        for w in gone {
            self.windows.looked.remove(&w);
            self.windows.icons.remove(&w);
            self.windows.marks.remove(&w);
            self.throttle.forget(w);
            self.rollup(RollupInput::WindowGone(w));
        }
        let mut changes: Vec<(WindowId, bool, Option<PaneId>)> = now
            .iter()
            .filter(|(w, v)| self.windows.looked.get(w) != Some(v))
            .map(|(w, (l, a))| (*w, *l, *a))
            .collect();
        changes.sort();
        for (window, looked, active_pane) in changes {
            let was = self
                .windows
                .looked
                .insert(window, (looked, active_pane))
                .map(|v| v.0);
            if looked && was != Some(true) {
                // The person looked by other means: the notification is no longer news.
                if let Some(d) = &self.desktop {
                    d.close_window(window);
                }
                self.throttle.withdraw(window);
            }
            self.rollup(RollupInput::Looked {
                window,
                looked,
                active_pane,
            });
        }
    }

    /// Sets `@thinkterm_mark` and `@thinkterm_icon` of a window and the summary of its session.
    pub(super) fn refresh_window_options(&mut self, window: WindowId) {
        self.set_window_options(window);
        self.refresh_summaries();
        self.schedule_animation();
    }

    /// The window's own options, each sent only when it changed.
    fn set_window_options(&mut self, window: WindowId) {
        if !self.config.config.status_line {
            return;
        }
        let mark = self.rollup.mark(window);
        let frame = if self.config.config.spinner {
            self.windows.frame
        } else {
            0
        };
        let icon = icon::window_icon(mark, frame, &self.icon_style);
        if self.windows.marks.get(&window) != Some(&mark) {
            self.windows.marks.insert(window, mark);
            self.tmux_send(&[
                "set-option",
                "-w",
                "-t",
                &window.to_string(),
                "@thinkterm_mark",
                mark.as_str(),
            ]);
        }
        if self.windows.icons.get(&window) != Some(&icon) {
            self.windows.icons.insert(window, icon.clone());
            self.tmux_send(&[
                "set-option",
                "-w",
                "-t",
                &window.to_string(),
                "@thinkterm_icon",
                &icon,
            ]);
        }
    }

    fn refresh_summaries(&mut self) {
        let Some(obs) = &self.observer else { return };
        let mut per_session: BTreeMap<SessionId, Vec<WindowMark>> = BTreeMap::new();
        let mut seen = BTreeSet::new();
        for p in obs.inventory().panes.values() {
            if seen.insert((p.session, p.window)) {
                per_session
                    .entry(p.session)
                    .or_default()
                    .push(self.rollup.mark(p.window));
            }
        }
        for (session, marks) in per_session {
            let s = icon::summary(marks);
            if self.windows.summaries.get(&session) != Some(&s) {
                self.windows.summaries.insert(session, s.clone());
                self.tmux_send(&[
                    "set-option",
                    "-t",
                    &session.to_string(),
                    "@thinkterm_summary",
                    &s,
                ]);
            }
        }
    }

    fn set_pane_option(&self, pane: PaneId, state: &str) {
        if self.config.config.status_line {
            self.tmux_send(&[
                "set-option",
                "-p",
                "-t",
                &pane.to_string(),
                "@thinkterm_state",
                state,
            ]);
        }
    }

    /// Sends a tmux command without awaiting its reply.
    pub(super) fn tmux_send(&self, argv: &[&str]) {
        if let Some(c) = self.observer.as_ref().and_then(|o| o.connection()) {
            c.send(line(argv));
        }
    }

    /// Arms the spinner timer while something runs and the spinner is on.
    fn schedule_animation(&mut self) {
        let running = icon::needs_animation(self.rollup.marks().map(|(_, m)| m));
        if running && self.config.config.spinner && self.config.config.status_line {
            let every = Duration::from_millis(self.config.config.spinner_interval_ms);
            // Frames land on the read grid (the interval rounded to it): no wake-up of their own.
            let at = self.pacing.reads().nearest(Instant::now(), every);
            self.windows.animate_at.get_or_insert(at);
        } else {
            self.windows.animate_at = None;
        }
    }

    /// Next spinner frame.
    pub(super) fn animate(&mut self) {
        self.windows.animate_at = None;
        self.windows.frame = self.windows.frame.wrapping_add(1);
        let running: Vec<WindowId> = self
            .rollup
            .marks()
            .filter(|(_, m)| *m == WindowMark::Running)
            .map(|(w, _)| w)
            .collect();
        // A frame changes running windows' icons only: marks and summaries stay.
        for w in running {
            self.set_window_options(w);
        }
        self.schedule_animation();
    }

    /// Sets every option from scratch (after attaching to a server).
    pub(super) fn refresh_all_options(&mut self) {
        self.windows.icons.clear();
        self.windows.marks.clear();
        self.windows.summaries.clear();
        let windows: Vec<WindowId> = self.windows.looked.keys().copied().collect();
        for w in windows {
            self.refresh_window_options(w);
        }
    }

    /// Removes our options from every window, pane and session (on shutdown).
    pub(super) async fn clear_options(&mut self) {
        let Some(obs) = &self.observer else { return };
        let inv = obs.inventory();
        let mut cmds = Vec::new();
        let mut windows = BTreeSet::new();
        let mut sessions = BTreeSet::new();
        for p in inv.panes.values() {
            cmds.push(line(&[
                "set-option",
                "-p",
                "-u",
                "-t",
                &p.id.to_string(),
                "@thinkterm_state",
            ]));
            if windows.insert(p.window) {
                for o in ["@thinkterm_mark", "@thinkterm_icon"] {
                    cmds.push(line(&[
                        "set-option",
                        "-w",
                        "-u",
                        "-t",
                        &p.window.to_string(),
                        o,
                    ]));
                }
            }
            if sessions.insert(p.session) {
                cmds.push(line(&[
                    "set-option",
                    "-u",
                    "-t",
                    &p.session.to_string(),
                    "@thinkterm_summary",
                ]));
            }
        }
        for c in cmds {
            let _ = obs.command(c).await;
        }
    }

    fn offer_notification(
        &mut self,
        window: WindowId,
        reason: NotifyReason,
        pane: Option<PaneId>,
        message: Option<String>,
    ) {
        let Some(desktop) = &self.desktop else { return };
        let _ = desktop;
        let Some(obs) = &self.observer else { return };
        let inv = obs.inventory();
        let clients = client_views(inv);
        let rule = BackgroundRule::choose(
            self.windows.focus_events,
            self.config.config.notify_without_focus,
        );
        if !is_background(&clients, window, rule) {
            tracing::debug!(%window, ?reason, "not notifying: the terminal is in front");
            return;
        }
        let Some(info) = inv.panes.values().find(|p| p.window == window) else {
            return;
        };
        let pane = pane
            .or_else(|| {
                inv.panes
                    .values()
                    .find(|p| p.window == window && p.active)
                    .map(|p| p.id)
            })
            .unwrap_or(info.id);
        let status = self.panes.get(&pane).map(|p| p.tracker.status().clone());
        let kind = match reason {
            NotifyReason::Finished => NoteKind::Done,
            NotifyReason::Waiting => NoteKind::Blocked,
            NotifyReason::Error => NoteKind::Error,
        };
        let input = NoteInput {
            window_name: format!("{}:{}", info.session_name, info.window_name),
            window,
            pane,
            kind,
            message: message.or_else(|| status.as_ref().and_then(|s| s.msg.clone())),
            waiting: status.as_ref().and_then(|s| s.kind),
            progress: status.as_ref().and_then(|s| s.progress),
            subtasks: status.map(|s| s.subtasks).unwrap_or_default(),
        };
        // The panel's saved view options apply to notifications too (S5.8); without a saved
        // panel file, the config's switches.
        let display = crate::panel::ViewOptions::load(&crate::panel::default_options_path())
            .ok()
            .filter(|_| crate::panel::default_options_path().exists())
            .map(|o| o.display)
            .unwrap_or(self.config.config.display);
        let note = notification::build(&input, &display, self.desktop_entry.as_deref());
        if let Some(note) = self.throttle.offer(Instant::now(), window, note) {
            self.send_note(note);
        }
    }

    /// Sends notes whose throttle window ended.
    pub(super) fn send_due_notes(&mut self) {
        for note in self.throttle.due(Instant::now()) {
            self.send_note(note);
        }
    }

    fn send_note(&self, note: notification::Note) {
        if let Some(d) = self.desktop.clone() {
            tracing::debug!(summary = %note.summary, "notify");
            tokio::spawn(async move {
                let _ = d.notify(note).await;
            });
        }
    }

    /// Brings a pane to the front in a client (S5.9, S6.7): sends the commands now and returns
    /// the wait for tmux to have run them, which says what was done or what tmux refused.
    pub(super) fn focus(
        &mut self,
        pane: PaneId,
        prefer: Option<&str>,
    ) -> Result<impl std::future::Future<Output = Result<String, String>> + use<>, String> {
        let Some(obs) = &self.observer else {
            return Err("no tmux server".into());
        };
        let inv = obs.inventory();
        let Some(info) = inv.panes.get(&pane) else {
            return Err(format!("no pane {pane}"));
        };
        let target = FocusTarget {
            pane,
            window: info.window,
            session: info.session,
        };
        let plan = focus::plan(&client_views(inv), &target, prefer).map_err(|e| e.to_string())?;
        let conn = obs.connection().ok_or("no tmux control connection")?;
        let done = plan.start(&conn, focus::FOCUS_TIMEOUT);
        self.relist_at
            .get_or_insert(Instant::now() + Duration::from_millis(15));
        let message = format!("Focused {pane} in client {}.", plan.client);
        Ok(async move { done.await.map(|()| message).map_err(|e| e.to_string()) })
    }

    /// The person went to a pane (the panel's Enter): its window's results count as seen.
    pub(super) fn seen(&mut self, pane: PaneId) {
        if let Some(window) = self.pane_window(pane) {
            self.rollup(RollupInput::TypedIn(window));
        }
        if let Some(p) = self.panes.get_mut(&pane) {
            let fx = p.seen(Instant::now());
            self.on_pane_effects(pane, fx);
        }
    }

    /// The rows of `agents --attention` and the snapshot's windows.
    pub(super) fn window_rows(&self) -> Vec<WindowRow> {
        let Some(obs) = &self.observer else {
            return Vec::new();
        };
        let mut rows = Vec::new();
        let mut seen = BTreeSet::new();
        for p in obs.inventory().panes.values() {
            if !seen.insert(p.window) {
                continue;
            }
            let view = self.rollup.window(p.window);
            rows.push(WindowRow {
                window: p.window,
                session: p.session,
                session_name: p.session_name.clone(),
                window_index: p.window_index,
                window_name: p.window_name.clone(),
                mark: view.as_ref().map(|v| v.mark).unwrap_or_default(),
                agents: view.as_ref().map(|v| v.agents).unwrap_or(0),
                pane: view.as_ref().and_then(|v| v.pane),
                message: view.as_ref().and_then(|v| v.message.clone()),
                since_ms: view.map(|v| self.clock.ms(v.since)).unwrap_or(0),
            });
        }
        rows.sort_by_key(|r| (r.session, r.window_index));
        rows
    }

    /// Loads the done marks of this server (after attaching).
    pub(super) fn restore_done(&mut self) {
        let Some(obs) = &self.observer else { return };
        let mut parts = obs.server_identity().split(crate::tmux::command::SEP);
        let pid = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        let start = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        self.windows.server_key = persist::server_key(pid, start);
        let existing: BTreeSet<WindowId> =
            obs.inventory().panes.values().map(|p| p.window).collect();
        let done = persist::load_or_empty(&self.done_path(), &self.windows.server_key);
        let restored: Vec<WindowId> = done.into_iter().filter(|w| existing.contains(w)).collect();
        if !restored.is_empty() {
            tracing::info!(windows = restored.len(), "restored done marks");
        }
        self.rollup.restore_done(Instant::now(), restored);
    }

    fn done_path(&self) -> std::path::PathBuf {
        crate::paths::state_dir().join(format!("done-{}.json", self.addr.key()))
    }

    fn save_done(&self) {
        if self.windows.server_key.is_empty() {
            return;
        }
        if let Err(e) = persist::save(
            &self.done_path(),
            &self.windows.server_key,
            &self.rollup.done_windows(),
        ) {
            tracing::warn!(error = %e, "cannot save done marks");
        }
    }
}

/// The clients as the effects see them.
fn client_views(inv: &crate::tmux::inventory::Inventory) -> Vec<ClientView> {
    inv.clients
        .iter()
        .filter_map(|c| {
            Some(ClientView {
                name: c.name.clone(),
                session: c.session?,
                window: c.window?,
                activity: c.activity,
                flags: ClientFlags::parse(&c.flags),
            })
        })
        .collect()
}
