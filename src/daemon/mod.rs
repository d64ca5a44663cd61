//! The daemon: owns every task and all state, and wires the pieces together. One core loop
//! (`select!` over tmux notifications, socket requests, signals and the nearest deadline) so
//! that each piece of state has one owner and nothing runs when nothing happens: no timer is
//! armed unless some work is due.

mod capture;
mod flood;
mod ipc_server;
mod panes;
mod snapshot;
mod windows;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

use crate::config::{self, Loaded};
use crate::effects::desktop::{Desktop, DesktopConfig, DesktopEvent};
use crate::effects::notification::Note;
use crate::effects::sound::player::{SoundPlayer, SoundSetup};
use crate::effects::sound::SoundConfig;
use crate::effects::throttle::Throttle;
use crate::ids::PaneId;
use crate::ipc::schema::{Reply, Request};
use crate::ipc::schema::{StateEvent, WindowMark};
use crate::pane::{PaneEffect, PaneInput};
use crate::process::identify::IdentityTable;
use crate::rules::{Catalog, Snapshot};
use crate::thread::icon::IconStyle;
use crate::thread::{Rollup, RollupInput};
use crate::timer::Timer;
use crate::tmux::connection::{CommandError, Pacing};
use crate::tmux::observer::{Captures, Observed, Observer};
use crate::tmux::server::{ServerAddress, ServerChoice};
pub use ipc_server::IpcMessage;
use panes::{Clock, PaneEntry};

/// How the daemon was asked to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Which tmux server.
    pub server: ServerChoice,
    /// `--config`.
    pub config_path: Option<PathBuf>,
}

/// The exit code for "tmux is not installed".
pub const EXIT_NO_TMUX: i32 = 2;

/// Failure that maps to a specific exit code.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Fatal {
    /// What to print.
    pub message: String,
    /// Exit code.
    pub code: i32,
}

/// Delay between structural notifications and the re-listing they cause (they come in bursts).
const RELIST_DELAY: Duration = Duration::from_millis(15);
/// Longest wait between attempts to reach a tmux server that is not there.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

enum Wake {
    Observed(Observed),
    Captured(Vec<(PaneId, Result<String, CommandError>)>),
    Desktop(DesktopEvent),
    Ipc(IpcMessage),
    Deadline,
    Reload,
    Shutdown,
}

struct Daemon {
    tmux: PathBuf,
    addr: ServerAddress,
    config: Loaded,
    config_path: Option<PathBuf>,
    identities: IdentityTable,
    catalog: Catalog,
    rules_stamp: Vec<(PathBuf, u64, std::time::SystemTime)>,
    observer: Option<Observer>,
    panes: HashMap<PaneId, PaneEntry>,
    /// Streams: every one gets the events; those with `true` also get fresh snapshots.
    subscribers: Vec<(mpsc::Sender<Reply>, bool)>,
    clock: Clock,
    relist_at: Option<Instant>,
    capture_at: Option<Instant>,
    /// The capture round in flight (its grid instant and its replies): the daemon goes on
    /// taking in output while tmux answers. `capture_at` waits until it ends.
    capturing: Option<(Instant, Captures)>,
    changed: bool,
    probe_at: Option<Instant>,
    reconnect_at: Option<Instant>,
    backoff: Duration,
    waiting_logged: bool,
    rollup: Rollup,
    windows: windows::Windows,
    throttle: Throttle<Note>,
    desktop: Option<Desktop>,
    sound: SoundPlayer,
    icon_style: IconStyle,
    desktop_entry: Option<String>,
    /// The grid busy control clients are read on (timers that can wait land on it too), and
    /// the timer that wakes the daemon and the readers.
    pacing: Pacing,
}

/// Runs the daemon until SIGINT or SIGTERM.
pub async fn run(opts: Options) -> anyhow::Result<()> {
    let tmux = crate::tmux::server::find_tmux().ok_or_else(|| Fatal {
        message: "tmux is not installed (not found on PATH); install tmux 3.2 or later".into(),
        code: EXIT_NO_TMUX,
    })?;
    let config = config::load(opts.config_path.as_deref());
    for w in &config.warnings {
        tracing::warn!("{w}");
    }
    let addr = ServerAddress::resolve(&opts.server);
    let sock = crate::ipc::socket_path(&addr);
    let listener = crate::ipc::bind(&sock).map_err(|e| Fatal {
        message: e.to_string(),
        code: 1,
    })?;
    tracing::info!(socket = %sock.display(), tmux = %addr.socket.display(), "thinkterm-sidecar running");
    let (ipc_tx, mut ipc_rx) = mpsc::channel(64);
    tokio::spawn(ipc_server::serve(listener, ipc_tx));

    let (desktop, mut desktop_rx) = if config.notifications_enabled() {
        let (d, rx) = Desktop::spawn(DesktopConfig::default());
        (Some(d), Some(rx))
    } else {
        (None, None)
    };
    let sound = sound_player(&config);
    let pacing = Pacing::every(
        Duration::from_millis(config.config.read_batch_ms),
        Timer::start(),
    );
    let mut d = Daemon {
        pacing,
        rollup: Rollup::new(),
        windows: windows::Windows::default(),
        throttle: Throttle::default(),
        desktop,
        sound,
        icon_style: IconStyle::default(),
        desktop_entry: crate::effects::notification::installed_desktop_entry(),
        tmux,
        addr,
        config,
        config_path: opts.config_path,
        identities: IdentityTable::builtin(),
        catalog: Catalog::bundled(),
        rules_stamp: Vec::new(),
        observer: None,
        panes: HashMap::new(),
        subscribers: Vec::new(),
        clock: Clock::new(),
        relist_at: None,
        capture_at: None,
        capturing: None,
        changed: false,
        probe_at: None,
        reconnect_at: Some(Instant::now()),
        backoff: Duration::from_millis(100),
        waiting_logged: false,
    };
    d.load_rules();
    let mut term = signal(SignalKind::terminate()).context("SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("SIGINT handler")?;
    let mut hup = signal(SignalKind::hangup()).context("SIGHUP handler")?;
    // The wait for the nearest deadline lives across turns of the loop and is made again only
    // when that deadline moves: a wait made and dropped at every event would re-arm the timer.
    let mut armed: Option<Option<Instant>> = None;
    let mut sleep: Sleep = Box::pin(std::future::pending());
    loop {
        let deadline = d.next_deadline();
        if armed != Some(deadline) {
            armed = Some(deadline);
            sleep = Box::pin(sleep_opt(d.pacing.timer.clone(), deadline));
        }
        let wake = tokio::select! {
            o = next_observed(&mut d.observer) => Wake::Observed(o),
            c = capture::captured(&mut d.capturing) => Wake::Captured(c),
            Some(m) = ipc_rx.recv() => Wake::Ipc(m),
            Some(e) = recv_opt(&mut desktop_rx) => Wake::Desktop(e),
            _ = &mut sleep => {
                armed = None;
                Wake::Deadline
            }
            _ = hup.recv() => Wake::Reload,
            _ = term.recv() => Wake::Shutdown,
            _ = int.recv() => Wake::Shutdown,
        };
        match wake {
            Wake::Observed(o) => d.on_observed(o).await,
            Wake::Captured(screens) => d.on_captured(screens),
            Wake::Ipc(m) => d.on_ipc(m).await,
            Wake::Desktop(e) => d.on_desktop(e),
            Wake::Deadline => {
                // The readers woken by the same grid instant run first, and what they read is
                // taken in before the timers act: a capture round sees every pane that wrote.
                tokio::task::yield_now().await;
                while let Some(o) = d.observer.as_mut().and_then(Observer::try_next) {
                    d.on_observed(o).await;
                }
                d.on_deadline().await
            }
            Wake::Reload => {
                let msg = d.reload();
                tracing::info!("{msg}");
            }
            Wake::Shutdown => break,
        }
        d.flush_changes();
    }
    tracing::info!("shutting down");
    d.clear_options().await;
    if let Some(o) = d.observer.take() {
        o.uninstall().await;
    }
    let _ = std::fs::remove_file(&sock);
    Ok(())
}

async fn next_observed(o: &mut Option<Observer>) -> Observed {
    match o {
        Some(o) => o.next().await,
        None => std::future::pending().await,
    }
}

async fn recv_opt<T>(rx: &mut Option<mpsc::UnboundedReceiver<T>>) -> Option<T> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

fn sound_player(config: &Loaded) -> SoundPlayer {
    SoundPlayer::new(
        SoundConfig {
            enabled: config.sound_enabled(),
            done_file: config.config.sound_done.clone(),
            waiting_file: config.config.sound_waiting.clone(),
        },
        SoundSetup::from_env(),
    )
}

/// The daemon's wait for its nearest deadline.
type Sleep = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

async fn sleep_opt(timer: Timer, t: Option<Instant>) {
    match t {
        Some(t) => timer.sleep_until(t).await,
        None => std::future::pending().await,
    }
}

fn min_opt(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

impl Daemon {
    fn next_deadline(&self) -> Option<Instant> {
        let trackers = self
            .panes
            .values()
            .filter_map(|p| min_opt(p.tracker.next_deadline(), p.flood.next_deadline()))
            .min();
        [
            self.relist_at,
            // A round in flight holds the next one back until its replies are in.
            self.capture_at.filter(|_| self.capturing.is_none()),
            self.windows.animate_at,
            self.throttle.next_deadline(),
            self.probe_at,
            self.reconnect_at,
            trackers,
        ]
        .into_iter()
        .fold(None, min_opt)
    }

    async fn on_deadline(&mut self) {
        let now = Instant::now();
        if self.reconnect_at.is_some_and(|t| t <= now) {
            self.reconnect_at = None;
            self.try_connect().await;
        }
        if self.relist_at.is_some_and(|t| t <= now) {
            self.relist_at = None;
            self.relist().await;
        }
        if self.capturing.is_none() {
            if let Some(round) = self.capture_at.filter(|t| *t <= now) {
                self.capture_at = None;
                self.capture_dirty(round);
            }
        }
        if self.windows.animate_at.is_some_and(|t| t <= now) {
            self.animate();
        }
        if self.throttle.next_deadline().is_some_and(|t| t <= now) {
            self.send_due_notes();
        }
        let due: Vec<PaneId> = self
            .panes
            .iter()
            .filter(|(_, p)| p.tracker.next_deadline().is_some_and(|t| t <= now))
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            if let Some(p) = self.panes.get_mut(&id) {
                let fx = p.tracker.on_input(now, PaneInput::Tick);
                self.on_pane_effects(id, fx);
            }
        }
        let resumed: Vec<(PaneId, flood::FloodAction)> = self
            .panes
            .iter_mut()
            .filter_map(|(id, p)| p.flood.on_deadline(now).map(|a| (*id, a)))
            .collect();
        for (id, a) in resumed {
            self.flood_action(id, a);
        }
        if self.probe_at.is_some_and(|t| t <= now) {
            if self.rules_changed() {
                let msg = self.reload();
                tracing::info!("rule files changed: {msg}");
            }
            self.probe_all(false);
            self.probe_at = Some(
                self.pacing
                    .reads()
                    .at_or_after(now + Duration::from_secs(self.config.config.probe_interval_s)),
            );
        }
    }

    async fn try_connect(&mut self) {
        let pacing = self.pacing.clone();
        match Observer::connect_paced(self.tmux.clone(), self.addr.clone(), pacing).await {
            Ok(o) => {
                tracing::info!(
                    tmux = %self.addr.socket.display(),
                    sessions = o.inventory().sessions.len(),
                    panes = o.inventory().panes.len(),
                    "attached to tmux server"
                );
                self.observer = Some(o);
                self.waiting_logged = false;
                self.backoff = Duration::from_millis(100);
                self.read_focus_events().await;
                self.restore_done();
                self.sync_panes();
                self.update_looked();
                self.refresh_all_options();
                self.probe_at = Some(self.pacing.reads().at_or_after(
                    Instant::now() + Duration::from_secs(self.config.config.probe_interval_s),
                ));
                self.broadcast_snapshot();
            }
            Err(e) => {
                if !self.waiting_logged {
                    tracing::info!(reason = %e, "waiting for tmux server at {}", self.addr.socket.display());
                    self.waiting_logged = true;
                }
                self.reconnect_at = Some(Instant::now() + self.backoff);
                self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
            }
        }
    }

    async fn on_observed(&mut self, o: Observed) {
        match o {
            Observed::Output { pane, data } => {
                let detection = self.config.config.agent_status_detection;
                let Some(p) = self.panes.get_mut(&pane) else {
                    return;
                };
                let out = p.on_output(
                    Instant::now(),
                    panes::unix_ms() / 1000,
                    &data,
                    &self.identities,
                    detection,
                );
                let wants = p.wants_capture();
                if out.title_changed && wants {
                    p.needs_capture = true;
                }
                let flood = p
                    .flood
                    .on_output(Instant::now(), data.wire_len(), p.unread());
                if let Some(a) = flood {
                    self.flood_action(pane, a);
                }
                self.on_pane_effects(pane, out.effects);
                if out.prompt {
                    self.on_prompt(pane);
                }
                if wants {
                    self.schedule_capture(pane);
                }
                self.flush_changes();
            }
            Observed::Structure => {
                self.relist_at.get_or_insert(Instant::now() + RELIST_DELAY);
            }
            Observed::Clients => {
                if let Some(obs) = &mut self.observer {
                    if let Err(e) = obs.refresh_clients().await {
                        tracing::debug!(error = %e, "list-clients failed");
                    }
                }
                self.update_looked();
                self.flush_changes();
            }
            Observed::Title(_) => {}
            Observed::Command(pane) => {
                // Another program: whatever it writes may matter.
                if let Some(a) = self.panes.get_mut(&pane).and_then(|p| p.flood.release()) {
                    self.flood_action(pane, a);
                }
                self.probe(pane);
            }
            Observed::Paused(_) => {}
            Observed::Continued(pane) => {
                // Output was dropped while paused: look at the screen again.
                if let Some(p) = self.panes.get_mut(&pane).filter(|p| p.wants_capture()) {
                    p.needs_capture = true;
                    self.schedule_capture(pane);
                }
            }
            Observed::ServerGone => {
                tracing::warn!(
                    "tmux server at {} went away; waiting for it to come back",
                    self.addr.socket.display()
                );
                self.observer = None;
                self.panes.clear();
                self.rollup = Rollup::new();
                self.windows = windows::Windows::default();
                self.throttle = Throttle::default();
                self.relist_at = None;
                self.probe_at = None;
                self.capturing = None;
                self.waiting_logged = true;
                self.backoff = Duration::from_millis(100);
                self.reconnect_at = Some(Instant::now() + self.backoff);
                self.broadcast_snapshot();
            }
        }
    }

    async fn relist(&mut self) {
        let Some(obs) = &mut self.observer else {
            return;
        };
        if let Err(e) = obs.refresh().await {
            tracing::debug!(error = %e, "re-listing failed");
            return;
        }
        self.read_focus_events().await;
        self.sync_panes();
        self.update_looked();
        self.broadcast_snapshot();
    }

    /// Adds entries for new panes (probing them) and drops entries of closed ones.
    fn sync_panes(&mut self) {
        let Some(obs) = &self.observer else { return };
        let inv = obs.inventory();
        let gone: Vec<PaneId> = self
            .panes
            .keys()
            .filter(|id| !inv.panes.contains_key(id))
            .copied()
            .collect();
        for id in gone {
            self.panes.remove(&id);
            self.rollup(RollupInput::PaneGone(id));
        }
        let Some(obs) = &self.observer else { return };
        let inv = obs.inventory();
        let new: Vec<(PaneId, u32)> = inv
            .panes
            .values()
            .filter(|p| !self.panes.contains_key(&p.id))
            .map(|p| (p.id, p.pid))
            .collect();
        for (id, pid) in new {
            let limit = self.config.config.flood_pause_kib_s * 1024;
            self.panes
                .insert(id, PaneEntry::new(pid, Instant::now(), limit));
            self.probe(id);
        }
    }

    fn probe(&mut self, pane: PaneId) {
        let detection = self.config.config.agent_status_detection;
        let Some(p) = self.panes.get_mut(&pane) else {
            return;
        };
        let before = p.agent().map(str::to_string);
        let fx = p.probe(Instant::now(), &self.identities, detection);
        if p.agent().is_some() && p.agent() != before.as_deref() {
            // A newly identified agent: look at its screen now.
            p.needs_capture = true;
            self.schedule_capture(pane);
        }
        let released = self
            .panes
            .get_mut(&pane)
            .filter(|p| !p.unread())
            .and_then(|p| p.flood.release());
        if let Some(a) = released {
            self.flood_action(pane, a);
        }
        self.on_pane_effects(pane, fx);
    }

    /// Pauses or resumes our copy of a pane's output (see [`flood`]).
    fn flood_action(&mut self, pane: PaneId, action: flood::FloodAction) {
        let on = action == flood::FloodAction::Resume;
        tracing::debug!(%pane, on, "flooding pane: output copy {}", if on { "resumed" } else { "paused" });
        if let Some(obs) = &mut self.observer {
            obs.set_output(pane, on);
        }
    }

    /// An OSC 133 A mark: a prompt starts. Programs draw their own prompts with it too (Pi
    /// does), so it ends ongoing reports only when the shell is back in the foreground.
    fn on_prompt(&mut self, pane: PaneId) {
        self.probe(pane);
        if let Some(p) = self.panes.get_mut(&pane) {
            if p.fg.at_shell {
                let fx = p.end_ongoing(Instant::now());
                self.on_pane_effects(pane, fx);
            }
        }
    }

    /// Acts on what a pane's state machine returned.
    fn on_pane_effects(&mut self, pane: PaneId, fx: Vec<PaneEffect>) {
        for effect in fx {
            match effect {
                PaneEffect::Changed(change) => {
                    self.changed = true;
                    self.rollup_pane(pane, change.new.clone());
                    if change.is_transition() {
                        self.emit_event(pane, &change);
                    }
                }
                PaneEffect::ProgramExited { pid } => {
                    tracing::debug!(pane = %pane, pid, "program left the pane");
                    // S7.4: working/blocked reports end with their program.
                    if let Some(p) = self.panes.get_mut(&pane) {
                        let fx = p.end_ongoing(Instant::now());
                        self.on_pane_effects(pane, fx);
                    }
                }
            }
        }
    }

    fn emit_event(&mut self, pane: PaneId, change: &crate::pane::PaneChange) {
        let Some(info) = self
            .observer
            .as_ref()
            .and_then(|o| o.inventory().panes.get(&pane))
        else {
            return;
        };
        let new = &change.new;
        let ev = StateEvent {
            time_ms: self.clock.ms(new.since),
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
            window_mark: self.window_mark(info.window),
        };
        tracing::debug!(pane = %pane, old = ?ev.old, new = ?ev.new, source = ?ev.source, "state change");
        let reply = Reply::Event(ev);
        self.subscribers
            .retain(|(s, _)| s.try_send(reply.clone()).is_ok() || !s.is_closed());
    }

    /// After a round of inputs: if any pane changed, subscribers get a fresh snapshot (events
    /// went out already, one per transition).
    fn flush_changes(&mut self) {
        if std::mem::take(&mut self.changed) {
            self.broadcast_snapshot();
        }
    }

    fn window_mark(&self, window: crate::ids::WindowId) -> WindowMark {
        self.rollup.mark(window)
    }

    /// Whether tmux reports focus (`focus-events`), which decides the background rule.
    async fn read_focus_events(&mut self) {
        if let Some(obs) = &self.observer {
            if let Ok(body) = obs.command("show-options -gv focus-events").await {
                self.windows.focus_events = body.first().is_some_and(|v| v.trim() == "on");
            }
        }
    }

    fn on_desktop(&mut self, e: DesktopEvent) {
        match e {
            DesktopEvent::Clicked { pane, .. } => match self.focus(pane, None) {
                Ok(done) => {
                    tokio::spawn(async move {
                        match done.await {
                            Ok(msg) => tracing::info!("notification clicked: {msg}"),
                            Err(e) => {
                                tracing::warn!("notification clicked, cannot focus {pane}: {e}")
                            }
                        }
                    });
                }
                Err(e) => tracing::warn!("notification clicked, cannot focus {pane}: {e}"),
            },
            DesktopEvent::Closed { .. } => {}
            DesktopEvent::Unavailable(why) => tracing::debug!("notifications unavailable: {why}"),
        }
    }

    /// Loads the bundled rules and the overrides; returns the one-line summary.
    fn load_rules(&mut self) -> String {
        let dir = crate::paths::rules_dir();
        let report = Catalog::load(&dir);
        for r in &report.rejected {
            for reason in &r.reasons {
                tracing::warn!("rejected rule file: {reason}");
            }
        }
        self.catalog = report.catalog.clone();
        self.identities = self.catalog.identity_table();
        self.rules_stamp = rules_stamp(&dir);
        report.summary()
    }

    fn rules_changed(&self) -> bool {
        rules_stamp(&crate::paths::rules_dir()) != self.rules_stamp
    }

    /// Probes every pane; unless `full` (the rules changed), an idle shell whose job did not
    /// change costs one `stat` read (see [`PaneEntry::unchanged`]).
    fn probe_all(&mut self, full: bool) {
        let now = Instant::now();
        let ids: Vec<PaneId> = self.panes.keys().copied().collect();
        for id in ids {
            if full
                || self
                    .panes
                    .get_mut(&id)
                    .is_some_and(|p| !p.unchanged(now, true))
            {
                self.probe(id);
            }
        }
    }

    fn reload(&mut self) -> String {
        self.config = config::load(self.config_path.as_deref());
        for w in &self.config.warnings {
            tracing::warn!("{w}");
        }
        let summary = self.load_rules();
        self.sound = sound_player(&self.config);
        // New identities: every pane is probed in full.
        self.probe_all(true);
        if !self.config.config.agent_status_detection {
            // S1.2: only native escape sequences still count.
            let now = Instant::now();
            let ids: Vec<PaneId> = self.panes.keys().copied().collect();
            for id in ids {
                let Some(p) = self.panes.get_mut(&id) else {
                    continue;
                };
                let mut fx = p.tracker.on_input(now, PaneInput::Report(None));
                fx.extend(p.tracker.on_input(now, PaneInput::UserVar(None)));
                fx.extend(p.tracker.on_input(now, PaneInput::Screen(None)));
                self.on_pane_effects(id, fx);
            }
        }
        let mut agents = Vec::new();
        for (id, p) in self.panes.iter_mut() {
            if p.agent().is_some() {
                p.needs_capture = true;
                agents.push(*id);
            }
        }
        for id in agents {
            self.schedule_capture(id);
        }
        self.broadcast_snapshot();
        summary
    }

    fn snapshot(&self) -> Reply {
        snapshot::build(
            &self.clock,
            &|w| self.window_mark(w),
            self.window_rows(),
            self.observer.as_ref().map(|o| o.inventory()),
            &self.panes,
            &self.catalog,
        )
    }

    fn broadcast_snapshot(&mut self) {
        // Building and sending a snapshot of every pane costs: only for those who asked.
        if !self.subscribers.iter().any(|(_, snapshots)| *snapshots) {
            return;
        }
        let snap = self.snapshot();
        self.subscribers.retain(|(s, snapshots)| {
            !*snapshots || s.try_send(snap.clone()).is_ok() || !s.is_closed()
        });
    }

    async fn on_ipc(&mut self, m: IpcMessage) {
        let reply = match m.request {
            Request::Agents => self.snapshot(),
            Request::Subscribe => {
                let _ = m.reply.send(self.snapshot()).await;
                self.subscribers.push((m.reply, true));
                return;
            }
            Request::Events => {
                self.subscribers.push((m.reply, false));
                return;
            }
            Request::Reload => Reply::Done {
                message: self.reload(),
            },
            Request::Explain { pane } => match self.panes.get(&pane) {
                Some(p) => Reply::Value {
                    value: p.explain(&self.catalog),
                },
                None => Reply::Error {
                    message: format!("no pane {pane}"),
                },
            },
            Request::Focus { pane, client } => match self.focus(pane, client.as_deref()) {
                Ok(done) => {
                    // Answered once tmux has run the commands, without holding up the loop.
                    tokio::spawn(async move {
                        let reply = match done.await {
                            Ok(message) => Reply::Done { message },
                            Err(message) => Reply::Error { message },
                        };
                        let _ = m.reply.send(reply).await;
                    });
                    return;
                }
                Err(message) => Reply::Error { message },
            },
            Request::Seen { pane } => {
                self.seen(pane);
                self.flush_changes();
                Reply::Done {
                    message: format!("Results of {pane} seen."),
                }
            }
        };
        let _ = m.reply.send(reply).await;
    }
}

/// What the override folder holds (name, size, mtime per `.toml`): compared on the slow timer to
/// reload when a file is added, changed or removed.
fn rules_stamp(dir: &std::path::Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "toml"))
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((e.path(), m.len(), m.modified().ok()?))
        })
        .collect();
    out.sort();
    out
}

/// Classifies a screen offline (for `explain --file`).
pub fn explain_screen(
    catalog: &Catalog,
    agent: &str,
    screen: &str,
    title: Option<&str>,
    progress: Option<&str>,
) -> crate::rules::Explanation {
    catalog.explain(
        agent,
        &Snapshot {
            screen,
            osc_title: title,
            osc_progress: progress,
        },
    )
}

/// Unix seconds now.
pub fn unix_seconds() -> u64 {
    panes::unix_ms() / 1000
}
