//! The window layer of the daemon: feeds pane statuses and "looked at" facts to the
//! [`Rollup`](crate::thread::Rollup), and performs what it asks through the owners of each
//! effect: the [`StatusLine`](super::status_line::StatusLine) for options, the
//! [`Notifier`](super::notifier::Notifier), the sound player, and the done file. Also bringing a
//! pane to the front (`focus`) and the window rows of a snapshot.
//!
//! Owns ([`Windows`]): the rollup, what it was last told about each window being looked at, and
//! the done file of this server.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::core::Daemon;
use crate::clock::Now;
use crate::effects::background::ClientView;
use crate::effects::focus::{self, FocusTarget};
use crate::effects::notification::{NoteInput, NoteKind};
use crate::effects::program_notes::{self, Verdict};
use crate::ids::{PaneId, WindowId};
use crate::ipc::schema::{Reply, WindowRow};
use crate::osc::ProgramNotification;
use crate::pane::PaneStatus;
use crate::state::Sound;
use crate::thread::{persist, NotifyReason, Rollup, RollupEffect, RollupInput};
use crate::tmux::command::line;
use crate::tmux::connection::Connection;
use crate::tmux::inventory::Inventory;

/// The rollup and what feeds it.
#[derive(Default)]
pub struct Windows {
    /// The per-window rollup.
    pub rollup: Rollup,
    /// What was last told to the rollup about each window being looked at.
    pub(super) looked: HashMap<WindowId, (bool, Option<PaneId>)>,
    /// The done file of the server attached to (`None` before attaching).
    done_file: Option<DoneFile>,
}

/// The done marks of one server, written by a task of their own (the latest set wins; the core
/// loop never waits for the disk).
struct DoneFile {
    tx: watch::Sender<Option<BTreeSet<WindowId>>>,
    writer: tokio::task::JoinHandle<()>,
}

impl DoneFile {
    fn start(path: PathBuf, key: String) -> DoneFile {
        let (tx, mut rx) = watch::channel::<Option<BTreeSet<WindowId>>>(None);
        let (p, k) = (path, key);
        let writer = tokio::spawn(async move {
            while rx.changed().await.is_ok() {
                let Some(set) = rx.borrow_and_update().clone() else {
                    continue;
                };
                let (p, k) = (p.clone(), k.clone());
                let wrote = tokio::task::spawn_blocking(move || persist::save(&p, &k, &set)).await;
                if let Ok(Err(e)) = wrote {
                    tracing::warn!(error = %e, "cannot save done marks");
                }
            }
        });
        DoneFile { tx, writer }
    }
}

impl Windows {
    /// Forgets everything (another tmux server); the done file's last write still completes.
    pub fn reset(&mut self) {
        self.rollup = Rollup::new();
        self.looked.clear();
        self.done_file = None;
    }

    /// Attached to a server whose done marks live at `path` under `key`.
    pub fn attached(&mut self, path: PathBuf, key: String) {
        self.done_file = Some(DoneFile::start(path, key));
    }

    /// Waits (up to `limit`) for the done file's last write; on shutdown.
    pub async fn flush(&mut self, limit: Duration) {
        if let Some(f) = self.done_file.take() {
            drop(f.tx);
            let _ = tokio::time::timeout(limit, f.writer).await;
        }
    }
}

impl Daemon {
    /// Sends one input to the rollup and performs its effects.
    pub(super) fn rollup(&mut self, now: Now, input: RollupInput) {
        let fx = self.windows.rollup.on_input(now.at, input);
        self.on_rollup_effects(now, fx);
    }

    /// A pane's status changed.
    pub(super) fn rollup_pane(&mut self, now: Now, pane: PaneId, status: PaneStatus) {
        let Some(window) = self
            .inventory()
            .and_then(|i| i.panes.get(&pane))
            .map(|p| p.window)
        else {
            return;
        };
        if let Some(argv) = self.status.pane_state(pane, status.state) {
            self.send_options(now, vec![argv]);
        }
        self.rollup(
            now,
            RollupInput::Pane {
                window,
                pane,
                status,
            },
        );
    }

    fn on_rollup_effects(&mut self, now: Now, fx: Vec<RollupEffect>) {
        for e in fx {
            match e {
                RollupEffect::MarkChanged { window, old, new } => {
                    tracing::debug!(%window, ?old, ?new, "window mark");
                    self.changed = true;
                    self.refresh_window_options(now, window);
                }
                RollupEffect::Sound { sound, window } => {
                    // A follower that takes this machine's notifications rings it on its side.
                    let followed = self.bus.takes_notifications();
                    if followed {
                        let name = match sound {
                            Sound::Done => "done",
                            Sound::Waiting => "waiting",
                        };
                        self.bus.decision(&Reply::Sound {
                            sound: name.into(),
                            window,
                        });
                    }
                    if !followed || self.config.config.notify_when_followed {
                        let played = self.sound.play(sound);
                        tracing::debug!(?played, ?sound, "sound");
                    }
                }
                RollupEffect::Notify {
                    window,
                    reason,
                    pane,
                    message,
                    ..
                } => self.offer_notification(now, window, reason, pane, message),
                RollupEffect::MarkSeen(pane) => {
                    if let Some(p) = self.panes.get_mut(&pane) {
                        let fx = p.seen(now.at);
                        self.on_pane_effects(now, pane, fx);
                    }
                }
                RollupEffect::DoneSetChanged => {
                    if let Some(f) = &self.windows.done_file {
                        f.tx.send_replace(Some(self.windows.rollup.done_windows()));
                    }
                }
            }
        }
    }

    /// Recomputes which windows are looked at (after clients or windows changed) and tells the
    /// rollup about every change. A window is looked at while it is the current window of an
    /// attached, focused client that is not in control mode. With `focus-events off` tmux never
    /// clears a client's focused flag, so an attached client counts as focused.
    pub(super) fn update_looked(&mut self, now: Now) {
        let Some(inv) = self.inventory() else { return };
        let mut current: HashMap<WindowId, (bool, Option<PaneId>)> = HashMap::new();
        for p in inv.panes.values() {
            let e = current.entry(p.window).or_insert((false, None));
            if p.active {
                e.1 = Some(p.id);
            }
        }
        for c in inv.people() {
            if c.flags.focused && c.flags.attached {
                if let Some(e) = c.window.and_then(|w| current.get_mut(&w)) {
                    e.0 = true;
                }
            }
        }
        let gone: Vec<WindowId> = self
            .windows
            .looked
            .keys()
            .filter(|w| !current.contains_key(w))
            .copied()
            .collect();
        for w in gone {
            self.windows.looked.remove(&w);
            self.status.forget_window(w);
            self.notifier.forget(w);
            self.rollup(now, RollupInput::WindowGone(w));
        }
        let mut changes: Vec<(WindowId, bool, Option<PaneId>)> = current
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
                self.notifier.looked_at(window);
            }
            self.rollup(
                now,
                RollupInput::Looked {
                    window,
                    looked,
                    active_pane,
                },
            );
        }
        // A person attached or left, or looks elsewhere: what was held back may show now, and
        // the spinner turns for the windows people can see.
        self.flush_options();
        self.schedule_spinner(now);
    }

    fn offer_notification(
        &mut self,
        now: Now,
        window: WindowId,
        reason: NotifyReason,
        pane: Option<PaneId>,
        message: Option<String>,
    ) {
        if !self.notifier.is_on() && !self.bus.takes_notifications() {
            return;
        }
        let Some(inv) = self.inventory() else { return };
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
        let report = self
            .panes
            .get(&pane)
            .map(|p| p.tracker.status().report.clone())
            .unwrap_or_default();
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
            title: None,
            message: message.or(report.msg),
            waiting: report.kind,
            progress: report.progress,
            subtasks: report.subtasks,
        };
        let clients = client_views(inv);
        if let Some(decided) = self.notifier.offer(now.at, &clients, input) {
            self.deliver(now, &decided);
        }
    }

    /// `notify`: a message about `pane`, delivered at once (no background rule, no throttle:
    /// someone asked for it) to whatever shows this daemon's notifications.
    pub(super) fn message(
        &mut self,
        now: Now,
        pane: PaneId,
        title: Option<String>,
        body: String,
    ) -> Reply {
        let Some(info) = self.inventory().and_then(|i| i.panes.get(&pane)) else {
            return Reply::Error {
                message: format!("no pane {pane} in this tmux server"),
            };
        };
        let input = NoteInput {
            window_name: format!("{}:{}", info.session_name, info.window_name),
            window: info.window,
            pane,
            kind: NoteKind::Message,
            title,
            message: Some(body),
            waiting: None,
            progress: None,
            subtasks: Vec::new(),
        };
        self.deliver(now, &input);
        Reply::Done {
            message: format!("Notified about {pane}."),
        }
    }

    /// A notification a program in `pane` sent itself (OSC 9, 777, 99): shown like a `notify`
    /// message about that pane (a click focuses it; followers and terminals get it too) while
    /// the pane is not in front, within the pane's rate limit
    /// ([`crate::effects::program_notes`]).
    pub(super) fn program_note(&mut self, now: Now, pane: PaneId, note: ProgramNotification) {
        if !self.config.config.program_notifications {
            return;
        }
        let Some(inv) = self.inventory() else { return };
        let Some(info) = inv.panes.get(&pane) else {
            return;
        };
        let window = info.window;
        let window_name = format!("{}:{}", info.session_name, info.window_name);
        let clients = client_views(inv);
        match self
            .notifier
            .offer_program(now.at, &clients, window, pane, note.occasion)
        {
            None => {
                tracing::debug!(%pane, "program notification not shown: its pane is in front");
                return;
            }
            Some(Verdict::Drop { first: true }) => {
                tracing::warn!(
                    %pane,
                    "dropping the notifications of the program in {pane}: more than {} at once \
                     or one per {:?}",
                    program_notes::BURST,
                    program_notes::REFILL
                );
                return;
            }
            Some(Verdict::Drop { first: false }) => return,
            Some(Verdict::Show { dropped }) => {
                if dropped > 0 {
                    tracing::info!(%pane, dropped, "program notifications shown again");
                }
            }
        }
        let input = NoteInput {
            window_name,
            window,
            pane,
            kind: NoteKind::Message,
            title: note.title,
            message: Some(note.body).filter(|b| !b.is_empty()),
            waiting: None,
            progress: None,
            subtasks: Vec::new(),
        };
        self.deliver(now, &input);
    }

    /// Sends notes whose throttle interval ended.
    pub(super) fn send_due_notes(&mut self, now: Now) {
        for decided in self.notifier.due(now.at) {
            self.deliver(now, &decided);
        }
    }

    /// A decided notification: to the followers that take this machine's notifications, and
    /// shown here unless one does (or the config wants both).
    fn deliver(&mut self, now: Now, decided: &NoteInput) {
        let followed = self.bus.takes_notifications();
        if followed {
            self.bus
                .decision(&Reply::Notify(super::machines::note_request(decided)));
        }
        if !followed || self.config.config.notify_when_followed {
            self.show_here(now, decided, None);
        }
    }

    /// Brings a pane to the front in a client (S5.9, S6.7). The commands go out now; `reply`
    /// gets the outcome once tmux has answered each of them (within
    /// [`focus::FOCUS_TIMEOUT`]), without the core loop waiting for it. Without `reply` the
    /// outcome is logged.
    pub(super) fn focus(
        &mut self,
        now: Now,
        pane: PaneId,
        prefer: Option<&str>,
        reply: Option<mpsc::Sender<Reply>>,
    ) {
        let answer =
            move |r: Result<String, String>, reply: Option<mpsc::Sender<Reply>>| match reply {
                Some(tx) => {
                    let _ = tx.try_send(match r {
                        Ok(message) => Reply::Done { message },
                        Err(message) => Reply::Error { message },
                    });
                }
                None => match r {
                    Ok(m) => tracing::info!("notification clicked: {m}"),
                    Err(e) => tracing::warn!("notification clicked, cannot focus {pane}: {e}"),
                },
            };
        let planned = self.plan_focus(pane, prefer);
        let (conn, plan) = match planned {
            Ok(p) => p,
            Err(e) => return answer(Err(e), reply),
        };
        let done = plan.start(&conn, focus::FOCUS_TIMEOUT);
        self.link.relist_all_soon(now.at);
        tokio::spawn(async move {
            let r = done
                .await
                .map(|()| format!("Focused {pane} in client {}.", plan.client))
                .map_err(|e| e.to_string());
            answer(r, reply);
        });
    }

    fn plan_focus(
        &self,
        pane: PaneId,
        prefer: Option<&str>,
    ) -> Result<(Connection, focus::FocusPlan), String> {
        let obs = self.link.observer.as_ref().ok_or("no tmux server")?;
        let inv = obs.inventory();
        let info = inv.panes.get(&pane).ok_or(format!("no pane {pane}"))?;
        let target = FocusTarget {
            pane,
            window: info.window,
            session: info.session,
        };
        let plan = focus::plan(&client_views(inv), &target, prefer).map_err(|e| e.to_string())?;
        let conn = obs.connection().ok_or("no control connection")?;
        Ok((conn, plan))
    }

    /// The person went to a pane (the panel's Enter): its window's results count as seen.
    pub(super) fn seen(&mut self, now: Now, pane: PaneId) {
        if let Some(window) = self
            .inventory()
            .and_then(|i| i.panes.get(&pane))
            .map(|p| p.window)
        {
            self.rollup(now, RollupInput::TypedIn(window));
        }
        if let Some(p) = self.panes.get_mut(&pane) {
            let fx = p.seen(now.at);
            self.on_pane_effects(now, pane, fx);
        }
    }

    /// The rows of `agents --attention` and the snapshot's windows.
    pub(super) fn window_rows(&self, now: Now) -> Vec<WindowRow> {
        let Some(inv) = self.inventory() else {
            return Vec::new();
        };
        let mut rows = Vec::new();
        let mut seen = BTreeSet::new();
        for p in inv.panes.values() {
            if !seen.insert(p.window) {
                continue;
            }
            let view = self.windows.rollup.window(p.window);
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
                since_ms: view.map(|v| now.unix_ms_of(v.since)).unwrap_or(0),
                machine: None,
            });
        }
        rows.sort_by_key(|r| (r.session, r.window_index));
        rows
    }

    /// Brings back the done marks of this server that were read when attaching.
    pub(super) fn restore_done(&mut self, now: Now, done: BTreeSet<WindowId>, key: String) {
        let path = self.done_path();
        let restored: Vec<WindowId> = match self.inventory() {
            Some(inv) => {
                let existing: BTreeSet<WindowId> = inv.panes.values().map(|p| p.window).collect();
                done.into_iter().filter(|w| existing.contains(w)).collect()
            }
            None => Vec::new(),
        };
        if !restored.is_empty() {
            tracing::info!(windows = restored.len(), "restored done marks");
        }
        self.windows.attached(path, key);
        self.windows.rollup.restore_done(now.at, restored);
    }

    /// Where this server's done marks live.
    pub(super) fn done_path(&self) -> PathBuf {
        crate::paths::state_dir().join(format!("done-{}.json", self.addr.key()))
    }

    /// Sends a tmux command without awaiting its reply.
    pub(super) fn tmux_send(&self, argv: &[String]) {
        if let Some(c) = self.link.observer.as_ref().and_then(|o| o.connection()) {
            c.send(line(&argv.iter().map(String::as_str).collect::<Vec<_>>()));
        }
    }

    /// The inventory of the server attached to.
    pub(super) fn inventory(&self) -> Option<&Inventory> {
        self.link.observer.as_ref().map(|o| o.inventory())
    }
}

/// The clients as the effects see them.
fn client_views(inv: &Inventory) -> Vec<ClientView> {
    inv.clients
        .iter()
        .filter_map(|c| {
            Some(ClientView {
                name: c.name.clone(),
                session: c.session?,
                window: c.window?,
                activity: c.activity,
                flags: c.flags,
            })
        })
        .collect()
}
