//! The daemon's state and what it does with each thing that wakes it. Every piece of state has
//! one owner (see the module map in [`super`]); this type holds the owners and dispatches. It
//! never waits for tmux: commands go out now and their answers come back as [`Done`] events
//! through `tasks`; the only awaits in a handler are local and bounded (attaching control
//! clients, [`super::ATTACH_BUDGET`]).

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::{Duration, Instant};

use futures_util::stream::FuturesUnordered;
use tokio::sync::mpsc;

use super::bus::{Bus, Wants};
use super::capture::CaptureScheduler;
use super::flood::FloodAction;
use super::notifier::Notifier;
use super::panes::PaneEntry;
use super::prober::{Probed, Prober};
use super::ruleset::{Reloaded, RuleSet, SlowLook};
use super::status_line::{StatusLine, StatusLineConfig};
use super::windows::Windows;
use super::{snapshot, IpcMessage, ATTACH_BUDGET, CONNECT_TIMEOUT, TMUX_REPLY_TIMEOUT};
use crate::clock::Now;
use crate::config::Loaded;
use crate::effects::desktop::DesktopEvent;
use crate::effects::sound::player::SoundPlayer;
use crate::ids::{PaneId, WindowId};
use crate::ipc::schema::{Reply, Request, StateEvent};
use crate::pane::{PaneChange, PaneEffect, PaneInput};
use crate::thread::{persist, RollupInput};
use crate::tmux::connection::{CommandError, Pacing};
use crate::tmux::inventory::ClientInfo;
use crate::tmux::observer::{Lists, ObserveError, Observed, Observer};
use crate::tmux::server::ServerAddress;

/// Delay between structural notifications and the re-listing they cause (they come in bursts).
const RELIST_DELAY: Duration = Duration::from_millis(15);
/// Longest wait between attempts to reach a tmux server that is not there.
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// The first wait after a server went away.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// Work in flight, whose answer wakes the core loop.
pub(super) type Task = Pin<Box<dyn Future<Output = Done> + Send>>;

/// An answer to work in flight. Answers about tmux carry the generation of the observer they
/// were asked of: one from a server that has gone since is dropped.
pub(super) enum Done {
    /// Connecting to the server ended.
    Connected(Box<Result<Connected, ObserveError>>),
    /// A re-list came back.
    Relisted(u64, Result<Lists, CommandError>),
    /// A list of clients came back.
    Clients(u64, Result<Vec<ClientInfo>, CommandError>),
    /// A capture round came back.
    Captured(u64, Vec<(PaneId, Result<String, CommandError>)>),
    /// The config and the rules were read again, unless reading failed (and who asked, to
    /// answer).
    Reloaded(Option<Box<Reloaded>>, Option<mpsc::Sender<Reply>>),
    /// The slow timer's look at the disk.
    Looked(SlowLook),
}

/// A new observer, with this server's saved done marks.
pub(super) struct Connected {
    observer: Observer,
    done: BTreeSet<WindowId>,
    key: String,
}

/// The connection to the tmux server: the observer, and how the next one is sought.
pub(super) struct Link {
    /// The observer of the server attached to.
    pub observer: Option<Observer>,
    /// Bumped at each new observer; answers of older ones are dropped.
    pub generation: u64,
    /// A connect is in flight.
    connecting: bool,
    /// When to try to connect next.
    reconnect_at: Option<Instant>,
    backoff: Duration,
    /// "Waiting for the server" was logged for this outage.
    waiting_logged: bool,
    /// When to re-list next.
    relist_at: Option<Instant>,
    /// A re-list is in flight.
    relisting: bool,
    /// A client list is in flight; another is wanted after it.
    clients_query: bool,
    clients_again: bool,
}

impl Link {
    fn new(now: Instant) -> Link {
        Link {
            observer: None,
            generation: 0,
            connecting: false,
            reconnect_at: Some(now),
            backoff: FIRST_BACKOFF,
            waiting_logged: false,
            relist_at: None,
            relisting: false,
            clients_query: false,
            clients_again: false,
        }
    }

    /// Asks for a re-list shortly (notifications come in bursts).
    pub fn relist_soon(&mut self, now: Instant) {
        self.relist_at.get_or_insert(now + RELIST_DELAY);
    }

    /// Connecting failed: the next try after the backoff, which doubles up to [`MAX_BACKOFF`].
    fn retry(&mut self, now: Instant) {
        self.reconnect_at = Some(now + self.backoff);
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }

    fn deadline(&self) -> Option<Instant> {
        [
            self.reconnect_at.filter(|_| !self.connecting),
            self.relist_at.filter(|_| !self.relisting),
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

/// The daemon.
pub(super) struct Daemon {
    pub(super) tmux: PathBuf,
    pub(super) addr: ServerAddress,
    pub(super) config: Loaded,
    pub(super) config_path: Option<PathBuf>,
    pub(super) rules: RuleSet,
    pub(super) link: Link,
    pub(super) panes: HashMap<PaneId, PaneEntry>,
    pub(super) captures: CaptureScheduler,
    pub(super) prober: Prober,
    pub(super) windows: Windows,
    pub(super) status: StatusLine,
    pub(super) notifier: Notifier,
    pub(super) sound: SoundPlayer,
    pub(super) bus: Bus,
    /// Work in flight.
    pub(super) tasks: FuturesUnordered<Task>,
    /// A pane or window changed since subscribers last got a snapshot.
    pub(super) changed: bool,
    /// The slow timer.
    probe_at: Option<Instant>,
    /// A reload is in flight (asked by these, answered when it lands).
    reloading: Option<Vec<mpsc::Sender<Reply>>>,
    /// The slow timer's disk look is in flight.
    looking: bool,
    /// Requests that came before the first attempt to reach the server ended: answered when it
    /// has (within [`CONNECT_TIMEOUT`]), so a client that asks right after the daemon started
    /// sees the server, not an empty list.
    deferred: Option<Vec<IpcMessage>>,
    /// The grid busy control clients are read on, and the timer that wakes everything.
    pub(super) pacing: Pacing,
}

/// The status line's part of the config.
pub(super) fn status_line_config(config: &Loaded) -> StatusLineConfig {
    StatusLineConfig {
        enabled: config.config.status_line,
        spinner: config.config.spinner,
        spinner_every: Duration::from_millis(config.config.spinner_interval_ms),
    }
}

impl Daemon {
    /// A daemon with nothing attached yet, owning these parts.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        tmux: PathBuf,
        addr: ServerAddress,
        config: Loaded,
        config_path: Option<PathBuf>,
        rules: RuleSet,
        prober: Prober,
        notifier: Notifier,
        sound: SoundPlayer,
        pacing: Pacing,
        now: Instant,
    ) -> Daemon {
        let c = &config.config;
        let captures = CaptureScheduler::new(
            Duration::from_millis(c.capture_delay_ms),
            Duration::from_millis(c.capture_interval_ms),
            pacing.grid,
            pacing.reads(),
        );
        Daemon {
            status: StatusLine::new(status_line_config(&config)),
            tmux,
            addr,
            config,
            config_path,
            rules,
            link: Link::new(now),
            panes: HashMap::new(),
            captures,
            prober,
            windows: Windows::default(),
            notifier,
            sound,
            bus: Bus::default(),
            tasks: FuturesUnordered::new(),
            changed: false,
            probe_at: None,
            reloading: None,
            looking: false,
            deferred: Some(Vec::new()),
            pacing,
        }
    }

    /// The nearest deadline of every owner.
    pub(super) fn next_deadline(&self, now: Instant) -> Option<Instant> {
        let panes = self
            .panes
            .values()
            .filter_map(|p| {
                [p.tracker.next_deadline(), p.flood.next_deadline()]
                    .into_iter()
                    .flatten()
                    .min()
            })
            .min();
        [
            self.link.deadline(),
            self.captures.next_deadline(),
            self.status.next_deadline(),
            self.notifier.next_deadline(),
            self.bus.next_deadline(now),
            self.probe_at,
            panes,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Whatever is due at `now`.
    pub(super) async fn on_deadline(&mut self, now: Now) {
        let t = now.at;
        if self.link.reconnect_at.is_some_and(|d| d <= t) && !self.link.connecting {
            self.link.reconnect_at = None;
            self.connect();
        }
        if self.link.relist_at.is_some_and(|d| d <= t) && !self.link.relisting {
            self.link.relist_at = None;
            self.start_relist();
        }
        let round = self.captures.start(t);
        if !round.is_empty() {
            self.start_captures(&round);
        }
        if self.status.next_deadline().is_some_and(|d| d <= t) {
            self.animate(now);
        }
        if self.notifier.next_deadline().is_some_and(|d| d <= t) {
            self.send_due_notes(now);
        }
        let due: Vec<PaneId> = self
            .panes
            .iter()
            .filter(|(_, p)| p.tracker.next_deadline().is_some_and(|d| d <= t))
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            if let Some(p) = self.panes.get_mut(&id) {
                let fx = p.tracker.on_input(t, PaneInput::Tick);
                self.on_pane_effects(now, id, fx);
            }
        }
        let resumed: Vec<(PaneId, FloodAction)> = self
            .panes
            .iter_mut()
            .filter_map(|(id, p)| p.flood.on_deadline(t).map(|a| (*id, a)))
            .collect();
        for (id, a) in resumed {
            self.flood_action(id, a);
        }
        if self.probe_at.is_some_and(|d| d <= t) {
            self.slow_tick(now);
        }
    }

    /// The slow timer: every pane's foreground again, the disk (rules folder, panel file)
    /// looked at off the loop, stuck probes and finished players reported and reaped.
    fn slow_tick(&mut self, now: Now) {
        self.probe_all(now, false);
        self.prober.report_stuck(now.at);
        self.sound.reap();
        if !self.looking {
            self.looking = true;
            let dir = crate::paths::rules_dir();
            let (panel, known) = self.notifier.panel_file();
            self.tasks.push(Box::pin(async move {
                let look =
                    tokio::task::spawn_blocking(move || SlowLook::read(&dir, &panel, known)).await;
                Done::Looked(look.unwrap_or_else(|_| SlowLook {
                    stamp: Vec::new(),
                    panel_stamp: known,
                    panel_switches: None,
                }))
            }));
        }
        self.probe_at = Some(
            self.pacing
                .reads()
                .at_or_after(now.at + Duration::from_secs(self.config.config.probe_interval_s)),
        );
    }

    /// Starts connecting to the server (in flight until [`Done::Connected`]).
    fn connect(&mut self) {
        self.link.connecting = true;
        let (tmux, addr, pacing) = (self.tmux.clone(), self.addr.clone(), self.pacing.clone());
        let done_path = self.done_path();
        self.tasks.push(Box::pin(async move {
            let connected = tokio::time::timeout(CONNECT_TIMEOUT, async {
                let observer = Observer::connect_paced(tmux, addr, pacing).await?;
                let mut parts = observer.server_identity().split(crate::tmux::command::SEP);
                let pid = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
                let start = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
                let key = persist::server_key(pid, start);
                let k = key.clone();
                let done =
                    tokio::task::spawn_blocking(move || persist::load_or_empty(&done_path, &k))
                        .await
                        .unwrap_or_default();
                Ok(Connected {
                    observer,
                    done,
                    key,
                })
            })
            .await
            .unwrap_or_else(|_| {
                Err(ObserveError::Ended(format!(
                    "connecting took longer than {CONNECT_TIMEOUT:?}"
                )))
            });
            Done::Connected(Box::new(connected))
        }));
    }

    fn start_relist(&mut self) {
        let Some(obs) = &self.link.observer else {
            return;
        };
        self.link.relisting = true;
        let (gen, q) = (self.link.generation, obs.start_relist());
        self.tasks.push(Box::pin(async move {
            let r = tokio::time::timeout(TMUX_REPLY_TIMEOUT, q)
                .await
                .unwrap_or(Err(CommandError::Timeout(TMUX_REPLY_TIMEOUT)));
            Done::Relisted(gen, r)
        }));
    }

    fn start_clients(&mut self) {
        let Some(obs) = &self.link.observer else {
            return;
        };
        if self.link.clients_query {
            self.link.clients_again = true;
            return;
        }
        self.link.clients_query = true;
        let (gen, q) = (self.link.generation, obs.start_clients());
        self.tasks.push(Box::pin(async move {
            let r = tokio::time::timeout(TMUX_REPLY_TIMEOUT, q)
                .await
                .unwrap_or(Err(CommandError::Timeout(TMUX_REPLY_TIMEOUT)));
            Done::Clients(gen, r)
        }));
    }

    fn start_captures(&mut self, panes: &[PaneId]) {
        let Some(obs) = &self.link.observer else {
            self.captures.finish([]);
            return;
        };
        let (gen, q) = (self.link.generation, obs.start_captures(panes));
        self.tasks.push(Box::pin(async move {
            let screens = tokio::time::timeout(TMUX_REPLY_TIMEOUT, q)
                .await
                .unwrap_or_default();
            Done::Captured(gen, screens)
        }));
    }

    /// An answer to work in flight.
    pub(super) async fn on_done(&mut self, now: Now, done: Done) {
        let current = self.link.generation;
        match done {
            Done::Connected(c) => {
                self.link.connecting = false;
                let deferred = self.deferred.take();
                match *c {
                    Ok(c) => self.attached(now, c),
                    Err(e) => {
                        if !self.link.waiting_logged {
                            tracing::info!(reason = %e, "waiting for tmux server at {}", self.addr.socket.display());
                            self.link.waiting_logged = true;
                        }
                        self.link.retry(now.at);
                    }
                }
                for m in deferred.into_iter().flatten() {
                    self.on_ipc(now, m);
                }
            }
            Done::Relisted(gen, r) => {
                if gen != current {
                    return;
                }
                self.link.relisting = false;
                match r {
                    Ok(lists) => self.relisted(now, lists).await,
                    Err(e) => {
                        tracing::debug!(error = %e, "re-listing failed; again shortly");
                        if self.link.observer.is_some() {
                            self.link.relist_at = Some(now.at + self.link.backoff);
                        }
                    }
                }
            }
            Done::Clients(gen, r) => {
                if gen != current {
                    return;
                }
                self.link.clients_query = false;
                match r {
                    Ok(clients) => {
                        if let Some(o) = &mut self.link.observer {
                            o.apply_clients(clients);
                        }
                        self.update_looked(now);
                    }
                    Err(e) => tracing::debug!(error = %e, "list-clients failed"),
                }
                if std::mem::take(&mut self.link.clients_again) {
                    self.start_clients();
                }
            }
            Done::Captured(gen, screens) => {
                if gen != current {
                    return;
                }
                self.on_captured(now, screens);
            }
            Done::Reloaded(Some(r), asked) => self.reloaded(now, *r, asked),
            Done::Reloaded(None, asked) => {
                let waiting = self.reloading.take().unwrap_or_default();
                for tx in waiting.iter().chain(asked.iter()) {
                    let _ = tx.try_send(Reply::Error {
                        message: "reading the config and the rules failed".into(),
                    });
                }
            }
            Done::Looked(look) => {
                self.looking = false;
                if let Some(switches) = look.panel_switches {
                    self.notifier.panel_read(look.panel_stamp, switches);
                }
                if look.stamp != self.rules.stamp {
                    tracing::info!("rule files changed: reloading");
                    self.reload(None);
                }
            }
        }
    }

    /// A new observer: everything is listed, options set, done marks restored.
    fn attached(&mut self, now: Now, c: Connected) {
        let Connected {
            observer,
            done,
            key,
        } = c;
        tracing::info!(
            tmux = %self.addr.socket.display(),
            sessions = observer.inventory().sessions.len(),
            panes = observer.inventory().panes.len(),
            "attached to tmux server"
        );
        self.notifier
            .set_focus_events(observer.inventory().focus_events);
        self.link.observer = Some(observer);
        self.link.generation += 1;
        self.link.waiting_logged = false;
        self.link.backoff = FIRST_BACKOFF;
        self.restore_done(now, done, key);
        self.sync_panes(now);
        self.update_looked(now);
        self.refresh_all_options(now);
        self.probe_at = Some(
            self.pacing
                .reads()
                .at_or_after(now.at + Duration::from_secs(self.config.config.probe_interval_s)),
        );
        self.changed = true;
    }

    async fn relisted(&mut self, now: Now, lists: Lists) {
        let Some(obs) = &mut self.link.observer else {
            return;
        };
        obs.apply_relist(lists);
        // Local work, bounded: a stopped tmux server does not hold the loop here.
        let late = tokio::time::timeout(ATTACH_BUDGET, obs.attach_missing())
            .await
            .is_err();
        let focus_events = obs.inventory().focus_events;
        if late {
            tracing::warn!("attaching control clients took longer than {ATTACH_BUDGET:?}");
            self.link.relist_soon(now.at);
        }
        self.notifier.set_focus_events(focus_events);
        self.sync_panes(now);
        self.update_looked(now);
        self.changed = true;
    }

    /// What the observer saw.
    pub(super) fn on_observed(&mut self, now: Now, o: Observed) {
        match o {
            Observed::Output { pane, data } => {
                let detection = self.config.config.agent_status_detection;
                let Some(p) = self.panes.get_mut(&pane) else {
                    return;
                };
                let out = p.on_output(now, &data, detection);
                let wants = p.wants_capture();
                let flood = p.flood.on_output(now.at, data.wire_len(), p.unread());
                if let Some(a) = flood {
                    self.flood_action(pane, a);
                }
                self.on_pane_effects(now, pane, out.effects);
                if out.probe {
                    self.request_probe(now, pane);
                }
                if wants {
                    self.captures.want(pane, now.at);
                }
            }
            Observed::Structure => self.link.relist_soon(now.at),
            Observed::Clients => self.start_clients(),
            Observed::Title(_) => {}
            Observed::Command(pane) => {
                self.check_respawn(now, pane);
                // Another program: whatever it writes may matter.
                if let Some(a) = self.panes.get_mut(&pane).and_then(|p| p.flood.release()) {
                    self.flood_action(pane, a);
                }
                self.request_probe(now, pane);
            }
            Observed::Paused(_) => {}
            Observed::Continued(pane) => {
                // Output was dropped while paused: look at the screen again.
                if let Some(p) = self.panes.get_mut(&pane) {
                    p.output_skipped();
                    if p.wants_capture() {
                        self.captures.want(pane, now.at);
                    }
                }
            }
            Observed::ServerGone => self.server_gone(now),
        }
    }

    fn server_gone(&mut self, now: Now) {
        tracing::warn!(
            "tmux server at {} went away; waiting for it to come back",
            self.addr.socket.display()
        );
        self.link.observer = None;
        self.link.generation += 1;
        self.link.relist_at = None;
        self.link.relisting = false;
        self.link.clients_query = false;
        self.link.clients_again = false;
        self.link.waiting_logged = true;
        self.link.backoff = FIRST_BACKOFF;
        self.link.retry(now.at);
        self.panes.clear();
        self.captures.reset();
        self.prober.reset();
        self.windows.reset();
        self.status.reset();
        self.notifier.reset();
        self.probe_at = None;
        self.changed = true;
    }

    /// A pane whose first process changed (`respawn-pane -k`) is a new pane: what the old
    /// program left (state, reports, identity) goes.
    fn check_respawn(&mut self, now: Now, pane: PaneId) {
        let Some(pid) = self
            .inventory()
            .and_then(|i| i.panes.get(&pane))
            .map(|p| p.pid)
        else {
            return;
        };
        if self.panes.get(&pane).is_some_and(|p| p.pid != pid) {
            tracing::debug!(%pane, pid, "pane respawned");
            let old = self.panes.remove(&pane);
            self.captures.forget(pane);
            self.rollup(now, RollupInput::PaneGone(pane));
            self.add_pane(now, pane, pid);
            if old.is_some_and(|p| p.flood.is_paused()) {
                // The new program's output is read from its first byte.
                self.flood_action(pane, FloodAction::Resume);
            }
        }
    }

    /// Adds entries for new panes (probing them), drops closed ones, renews respawned ones.
    fn sync_panes(&mut self, now: Now) {
        let Some(inv) = self.inventory() else { return };
        let gone: Vec<PaneId> = self
            .panes
            .keys()
            .filter(|id| !inv.panes.contains_key(id))
            .copied()
            .collect();
        let found: Vec<PaneId> = inv.panes.keys().copied().collect();
        for id in gone {
            self.panes.remove(&id);
            self.captures.forget(id);
            self.rollup(now, RollupInput::PaneGone(id));
        }
        for id in found {
            if self.panes.contains_key(&id) {
                self.check_respawn(now, id);
            } else if let Some(pid) = self
                .inventory()
                .and_then(|i| i.panes.get(&id))
                .map(|p| p.pid)
            {
                self.add_pane(now, id, pid);
            }
        }
    }

    fn add_pane(&mut self, now: Now, pane: PaneId, pid: u32) {
        let limit = self.config.config.flood_pause_kib_s.saturating_mul(1024);
        self.panes.insert(pane, PaneEntry::new(pid, now.at, limit));
        self.request_probe(now, pane);
    }

    /// Asks the probe thread about a pane's foreground.
    fn request_probe(&mut self, now: Now, pane: PaneId) {
        if let Some(p) = self.panes.get(&pane) {
            self.prober.request(pane, p.pid, now.at);
        }
    }

    /// A probe's answer.
    pub(super) fn on_probed(&mut self, now: Now, probed: Probed) {
        self.prober.answered(probed.pane);
        let pane = probed.pane;
        let detection = self.config.config.agent_status_detection;
        let Some(p) = self.panes.get_mut(&pane).filter(|p| p.pid == probed.pid) else {
            return;
        };
        let before = p.agent().map(str::to_string);
        let fx = p.apply_probe(now, probed, &self.rules.identities, detection);
        let identified = p.agent().is_some() && p.agent() != before.as_deref();
        let release = if p.unread() { None } else { p.flood.release() };
        if identified {
            // A newly identified agent: look at its screen now.
            self.captures.want(pane, now.at);
        }
        if let Some(a) = release {
            self.flood_action(pane, a);
        }
        self.on_pane_effects(now, pane, fx);
    }

    /// Probes every pane; unless `full` (the rules changed), an idle shell whose job did not
    /// change costs one `stat` read (see [`PaneEntry::unchanged`]).
    fn probe_all(&mut self, now: Now, full: bool) {
        let ids: Vec<PaneId> = self.panes.keys().copied().collect();
        for id in ids {
            if full
                || self
                    .panes
                    .get_mut(&id)
                    .is_some_and(|p| !p.unchanged(now.at, true))
            {
                self.request_probe(now, id);
            }
        }
    }

    /// Pauses or resumes our copy of a pane's output (see [`super::flood`]).
    pub(super) fn flood_action(&mut self, pane: PaneId, action: FloodAction) {
        let on = action == FloodAction::Resume;
        tracing::debug!(%pane, on, "flooding pane: output copy {}", if on { "resumed" } else { "paused" });
        if let Some(obs) = &mut self.link.observer {
            obs.set_output(pane, on);
        }
        if on {
            // What was skipped may have left a sequence half open.
            if let Some(p) = self.panes.get_mut(&pane) {
                p.output_skipped();
            }
        } else {
            self.captures.forget(pane);
        }
    }

    /// Acts on what a pane's state machine returned.
    pub(super) fn on_pane_effects(&mut self, now: Now, pane: PaneId, fx: Vec<PaneEffect>) {
        for effect in fx {
            match effect {
                PaneEffect::Changed(change) => {
                    self.changed = true;
                    self.rollup_pane(now, pane, change.new.clone());
                    if change.is_transition() {
                        self.emit_event(now, pane, &change);
                    }
                }
                PaneEffect::ProgramExited { pid } => {
                    tracing::debug!(pane = %pane, pid, "program left the pane");
                    // S7.4: working/blocked reports end with their program.
                    if let Some(p) = self.panes.get_mut(&pane) {
                        let fx = p.end_ongoing(now.at);
                        self.on_pane_effects(now, pane, fx);
                    }
                }
            }
        }
    }

    fn emit_event(&mut self, now: Now, pane: PaneId, change: &PaneChange) {
        let Some(info) = self.inventory().and_then(|i| i.panes.get(&pane)) else {
            return;
        };
        let new = &change.new;
        let ev = StateEvent {
            time_ms: now.unix_ms_of(new.since),
            pane,
            window: info.window,
            session: info.session,
            session_name: info.session_name.clone(),
            window_name: info.window_name.clone(),
            agent: new.agent.clone().or(change.old.agent.clone()),
            old: change.old.state,
            new: new.state,
            source: new.source,
            rule: new.rule.clone(),
            message: new.msg.clone(),
            kind: new.kind,
            progress: new.progress,
            window_mark: self.windows.rollup.mark(info.window),
        };
        tracing::debug!(pane = %pane, old = ?ev.old, new = ?ev.new, source = ?ev.source, "state change");
        self.bus.event(&Reply::Event(ev));
    }

    /// A capture round's screens arrived: classify them.
    fn on_captured(&mut self, now: Now, screens: Vec<(PaneId, Result<String, CommandError>)>) {
        let mut captured = Vec::with_capacity(screens.len());
        for (id, r) in screens {
            let screen = match r {
                Ok(s) => s,
                Err(e) => {
                    tracing::debug!(pane = %id, error = %e, "capture failed");
                    continue;
                }
            };
            let Some(p) = self.panes.get_mut(&id) else {
                continue;
            };
            captured.push(id);
            let fx = p.classify(now.at, &self.rules.catalog, screen);
            self.on_pane_effects(now, id, fx);
        }
        self.captures.finish(captured);
    }

    /// Reads the config and the rules again, off the loop; `asked` gets the summary.
    pub(super) fn reload(&mut self, asked: Option<mpsc::Sender<Reply>>) {
        if let Some(waiting) = &mut self.reloading {
            waiting.extend(asked);
            return;
        }
        self.reloading = Some(Vec::new());
        let path = self.config_path.clone();
        let dir = crate::paths::rules_dir();
        self.tasks.push(Box::pin(async move {
            let r = tokio::task::spawn_blocking(move || Reloaded::read(path.as_deref(), &dir))
                .await
                .map_err(|e| tracing::warn!("reload failed: {e}"))
                .ok();
            Done::Reloaded(r.map(Box::new), asked)
        }));
    }

    fn reloaded(&mut self, now: Now, r: Reloaded, asked: Option<mpsc::Sender<Reply>>) {
        let waiting = self.reloading.take().unwrap_or_default();
        for w in &r.config.warnings {
            tracing::warn!("{w}");
        }
        self.config = r.config;
        self.rules = r.rules;
        let c = &self.config.config;
        self.captures.set_timing(
            Duration::from_millis(c.capture_delay_ms),
            Duration::from_millis(c.capture_interval_ms),
        );
        self.status.configure(status_line_config(&self.config));
        self.notifier.configure(c.notify_without_focus, c.display);
        self.sound = super::sound_player(&self.config);
        // New identities: every pane is probed in full.
        self.probe_all(now, true);
        if !self.config.config.agent_status_detection {
            // S1.2: only native escape sequences still count.
            let ids: Vec<PaneId> = self.panes.keys().copied().collect();
            for id in ids {
                let Some(p) = self.panes.get_mut(&id) else {
                    continue;
                };
                let mut fx = p.tracker.on_input(now.at, PaneInput::Report(None));
                fx.extend(p.tracker.on_input(now.at, PaneInput::UserVar(None)));
                fx.extend(p.tracker.on_input(now.at, PaneInput::Screen(None)));
                self.on_pane_effects(now, id, fx);
            }
        }
        let agents: Vec<PaneId> = self
            .panes
            .iter()
            .filter(|(_, p)| p.agent().is_some())
            .map(|(id, _)| *id)
            .collect();
        for id in agents {
            self.captures.want(id, now.at);
        }
        self.changed = true;
        let message = r.summary;
        tracing::info!("{message}");
        for tx in waiting.iter().chain(asked.iter()) {
            let _ = tx.try_send(Reply::Done {
                message: message.clone(),
            });
        }
    }

    /// A request on the socket.
    pub(super) fn on_ipc(&mut self, now: Now, m: IpcMessage) {
        if let Some(waiting) = &mut self.deferred {
            waiting.push(m);
            return;
        }
        let reply = match m.request {
            Request::Agents => self.snapshot(now),
            Request::Subscribe => {
                let _ = m.reply.try_send(self.snapshot(now));
                self.bus.add(m.reply, Wants::EventsAndSnapshots);
                return;
            }
            Request::Events => {
                self.bus.add(m.reply, Wants::Events);
                return;
            }
            Request::Reload => return self.reload(Some(m.reply)),
            Request::Explain { pane } => match self.panes.get(&pane) {
                Some(p) => Reply::Value {
                    value: p.explain(&self.rules.catalog),
                },
                None => Reply::Error {
                    message: format!("no pane {pane}"),
                },
            },
            Request::Focus { pane, client } => {
                return self.focus(now, pane, client.as_deref(), Some(m.reply));
            }
            Request::Seen { pane } => {
                self.seen(now, pane);
                Reply::Done {
                    message: format!("Results of {pane} seen."),
                }
            }
        };
        let _ = m.reply.try_send(reply);
    }

    /// What the notification server said.
    pub(super) fn on_desktop(&mut self, now: Now, e: DesktopEvent) {
        match e {
            DesktopEvent::Clicked { pane, .. } => self.focus(now, pane, None, None),
            DesktopEvent::Closed { .. } => {}
            DesktopEvent::Unavailable(why) => tracing::debug!("notifications unavailable: {why}"),
        }
    }

    /// Every pane and window now.
    pub(super) fn snapshot(&self, now: Now) -> Reply {
        snapshot::build(
            now,
            &|w| self.windows.rollup.mark(w),
            self.window_rows(now),
            self.inventory(),
            &self.panes,
            &self.rules.catalog,
        )
    }

    /// After a turn of the loop: subscribers get a fresh snapshot if anything changed, and
    /// lagged ones are mended when they have room.
    pub(super) fn flush(&mut self, now: Now) {
        let changed = std::mem::take(&mut self.changed);
        if self.bus.wants_snapshot(changed) {
            let snap = self.snapshot(now);
            self.bus.snapshot(&snap, changed);
        }
    }

    /// Removes what the sidecar set in tmux, within `budget` whatever tmux does: every command
    /// goes out at once and the answers are awaited together.
    pub(super) async fn shutdown(&mut self, budget: Duration) {
        let started = Instant::now();
        if let Some(obs) = &self.link.observer {
            let mut lines = self.clear_options_commands();
            lines.extend(obs.uninstall_commands());
            if let Some(conn) = obs.connection() {
                let replies: Vec<_> = lines.into_iter().map(|l| conn.start(l)).collect();
                let all = async {
                    for r in replies {
                        let _ = r.await;
                    }
                };
                if tokio::time::timeout(budget, all).await.is_err() {
                    tracing::warn!(
                        "tmux did not answer within {budget:?}; leaving options as they are"
                    );
                }
            }
        }
        let left = budget.saturating_sub(started.elapsed());
        self.windows.flush(left).await;
    }
}
