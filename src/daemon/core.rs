//! The daemon's state and what it does with each thing that wakes it. Every piece of state has
//! one owner (see the module map in [`super`]); this type holds the owners and dispatches. It
//! never waits for tmux: commands go out now and their answers come back as [`Done`] events
//! through `tasks`; the only awaits in a handler are local and bounded (attaching control
//! clients, [`super::ATTACH_BUDGET`]).

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::{Duration, Instant};

use futures_util::stream::FuturesUnordered;
use tokio::sync::mpsc;

use super::bus::{Bus, Scope};
use super::capture::CaptureScheduler;
use super::flood::FloodAction;
use super::link::{Connected, Link};
use super::machines::Machines;
use super::notifier::Notifier;
use super::option_batch::OptionBatch;
use super::pane_map::PaneMap;
use super::prober::Prober;
use super::ruleset::{Reloaded, RuleSet, SlowLook};
use super::status_line::{StatusLine, StatusLineConfig};
use super::terminal::TerminalNotes;
use super::windows::Windows;
use super::IpcMessage;
use crate::clock::Now;
use crate::config::Loaded;
use crate::effects::desktop::DesktopEvent;
use crate::effects::sound::player::SoundPlayer;
use crate::ids::PaneId;
use crate::ipc::schema::Reply;
use crate::pane::PaneInput;
use crate::tmux::connection::{CommandError, Pacing};
use crate::tmux::inventory::ClientInfo;
use crate::tmux::observer::{Captured, Lists, ObserveError};
use crate::tmux::server::ServerAddress;

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
    Captured(u64, Vec<Captured>),
    /// The config and the rules were read again, unless reading failed (and who asked, to
    /// answer).
    Reloaded(Option<Box<Reloaded>>, Option<mpsc::Sender<Reply>>),
    /// The slow timer's look at the disk.
    Looked(SlowLook),
    /// The ssh connections of local panes (nested tmux).
    Nested(Vec<(PaneId, Vec<super::nested::Ports>)>),
}

/// The daemon.
pub(super) struct Daemon {
    /// The `tmux` program, if there is one here (a laptop with only connected machines has
    /// none: local tmux is then simply absent).
    pub(super) tmux: Option<PathBuf>,
    pub(super) addr: ServerAddress,
    pub(super) config: Loaded,
    pub(super) config_path: Option<PathBuf>,
    pub(super) rules: RuleSet,
    pub(super) link: Link,
    pub(super) panes: PaneMap,
    pub(super) captures: CaptureScheduler,
    pub(super) prober: Prober,
    pub(super) windows: Windows,
    pub(super) status: StatusLine,
    /// Status-line options no person's client shows, waiting to go out together.
    pub(super) option_batch: OptionBatch,
    pub(super) notifier: Notifier,
    /// Notifications written to the person's terminal.
    pub(super) terminal: TerminalNotes,
    /// Local panes showing a connected machine's tmux.
    pub(super) nested: super::nested::Nested,
    pub(super) sound: SoundPlayer,
    pub(super) bus: Bus,
    /// Connected machines.
    pub(super) machines: Machines,
    /// When this daemon started (this computer's row in the machines list).
    pub(super) started: Instant,
    /// Work in flight.
    pub(super) tasks: FuturesUnordered<Task>,
    /// A pane or window changed since subscribers last got a snapshot.
    pub(super) changed: bool,
    /// The slow timer.
    pub(super) probe_at: Option<Instant>,
    /// A reload is in flight (asked by these, answered when it lands).
    reloading: Option<Vec<mpsc::Sender<Reply>>>,
    /// The slow timer's disk look is in flight.
    looking: bool,
    /// Requests that came before the first attempt to reach the server ended: answered when it
    /// has (within [`CONNECT_TIMEOUT`]), so a client that asks right after the daemon started
    /// sees the server, not an empty list.
    pub(super) deferred: Option<Vec<IpcMessage>>,
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
        tmux: Option<PathBuf>,
        addr: ServerAddress,
        config: Loaded,
        config_path: Option<PathBuf>,
        rules: RuleSet,
        prober: Prober,
        notifier: Notifier,
        sound: SoundPlayer,
        machines: Machines,
        pacing: Pacing,
        now: Instant,
    ) -> Daemon {
        let c = &config.config;
        let captures = CaptureScheduler::new(
            Duration::from_millis(c.capture_delay_ms),
            Duration::from_millis(c.capture_interval_ms),
            pacing.grid,
        );
        let terminal = TerminalNotes::new(
            &c.terminal_notifications,
            c.terminal_bell,
            config.notifications_enabled(),
        );
        Daemon {
            status: StatusLine::new(status_line_config(&config)),
            option_batch: OptionBatch::new(pacing.reads()),
            tmux,
            addr,
            config,
            config_path,
            rules,
            link: Link::new(now),
            panes: PaneMap::new(pacing.reads()),
            captures,
            prober,
            windows: Windows::default(),
            terminal,
            nested: Default::default(),
            notifier,
            sound,
            bus: Bus::default(),
            machines,
            started: now,
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
    pub(super) fn next_deadline(&mut self, now: Instant) -> Option<Instant> {
        let panes = self.panes.next_deadline();
        [
            self.link.deadline(),
            self.captures.next_deadline(),
            self.spinner_deadline(),
            self.notifier.next_deadline(),
            self.terminal.next_deadline(),
            self.bus.next_deadline(now),
            self.probe_at,
            self.prober.next_deadline(),
            self.option_batch_deadline(),
            panes,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The status line's next frame, held while a terminal note waits for tmux's writes to
    /// the person's client to stop (see `terminal`).
    fn spinner_deadline(&self) -> Option<Instant> {
        self.held_for_notes(self.status.next_deadline()?)
    }

    /// When the held-back options go out, held like the spinner while a terminal note waits.
    fn option_batch_deadline(&self) -> Option<Instant> {
        self.held_for_notes(self.option_batch.next_deadline()?)
    }

    /// A redraw of people's clients due at `d`, held while a terminal note waits.
    fn held_for_notes(&self, d: Instant) -> Option<Instant> {
        Some(self.terminal.status_hold().map_or(d, |h| d.max(h)))
    }

    /// Whatever is due at `now`.
    pub(super) fn on_deadline(&mut self, now: Now) {
        let t = now.at;
        let (connect, relist) = self.link.take_due(t);
        if connect {
            self.connect();
        }
        if relist {
            self.start_relist();
        }
        // A pane inside a synchronized update is captured once it ends (or its hold does);
        // one its model serves is looked at as its last whole frame (`serve_models`).
        let (panes, every) = (&self.panes, self.model_check_every());
        let round = self.captures.start(t, |id| {
            let p = panes.get(&id)?;
            p.sync.held_until(t).filter(|_| !p.model_serves(t, every))
        });
        if !round.is_empty() {
            let rest = self.serve_models(now, &round);
            tracing::trace!(?round, captured = ?rest, "capture round");
            self.start_captures(&rest);
        }
        if self.spinner_deadline().is_some_and(|d| d <= t) {
            self.animate(now);
        }
        if self.option_batch_deadline().is_some_and(|d| d <= t) {
            self.flush_options();
        }
        for pane in self.prober.due(t) {
            self.request_probe(now, pane);
        }
        let look: Vec<PaneId> = self
            .panes
            .due(t)
            .into_iter()
            .filter(|id| self.panes.look_due(id).is_some_and(|d| d <= t))
            .collect();
        for id in look {
            if self
                .panes
                .get_mut(&id)
                .is_some_and(|p| p.look_after_output(t))
            {
                self.request_probe(now, id);
            }
        }
        if self.notifier.next_deadline().is_some_and(|d| d <= t) {
            self.send_due_notes(now);
        }
        if self.terminal.next_deadline().is_some_and(|d| d <= t) {
            self.terminal_check(now, false);
        }
        let due: Vec<PaneId> = self
            .panes
            .due(t)
            .into_iter()
            .filter(|id| {
                self.panes[id]
                    .tracker
                    .next_deadline()
                    .is_some_and(|d| d <= t)
            })
            .collect();
        for id in due {
            if let Some(p) = self.panes.get_mut(&id) {
                let fx = p.tracker.on_input(t, PaneInput::Tick);
                self.on_pane_effects(now, id, fx);
            }
        }
        let floods: Vec<PaneId> = self
            .panes
            .due(t)
            .into_iter()
            .filter(|id| self.panes[id].flood.next_deadline().is_some_and(|d| d <= t))
            .collect();
        if !floods.is_empty() {
            // Whether a held pane still writes is known from its terminal, drained first.
            self.take_held_writes(t);
        }
        let resumed: Vec<(PaneId, FloodAction)> = floods
            .into_iter()
            .filter_map(|id| {
                let watched = self.link.observer.as_ref().is_some_and(|o| o.held(id));
                let p = self.panes.get_mut(&id)?;
                p.flood.on_deadline(t, watched).map(|a| (id, a))
            })
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
        self.take_held_writes(now.at);
        self.probe_all(now, false);
        self.start_nested_scan();
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

    /// An answer to work in flight.
    pub(super) async fn on_done(&mut self, now: Now, done: Done) {
        match done {
            Done::Connected(c) => self.on_connected(now, *c),
            Done::Relisted(gen, r) => self.on_relisted(now, gen, r).await,
            Done::Clients(gen, r) => self.on_clients(now, gen, r),
            Done::Captured(gen, screens) => {
                if gen == self.link.generation {
                    self.on_captured(now, screens);
                }
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
            Done::Nested(found) => self.on_nested_scan(now, found),
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
        self.terminal.configure(
            &c.terminal_notifications,
            c.terminal_bell,
            self.config.notifications_enabled(),
        );
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

    /// What the notification server said.
    pub(super) fn on_desktop(&mut self, now: Now, e: DesktopEvent) {
        match e {
            DesktopEvent::Clicked {
                pane,
                machine: Some(machine),
                ..
            } => self.focus_remote(&machine, pane),
            DesktopEvent::Clicked { pane, .. } => self.focus(now, pane, None, None),
            DesktopEvent::Closed { .. } => {}
            DesktopEvent::Unavailable(why) => tracing::debug!("notifications unavailable: {why}"),
        }
    }

    /// After a turn of the loop: subscribers get a fresh snapshot if anything changed, and
    /// lagged ones are mended when they have room.
    pub(super) fn flush(&mut self, now: Now) {
        let changed = std::mem::take(&mut self.changed);
        if self.bus.wants_snapshot(Scope::All, changed, now.at) {
            let snap = self.snapshot(now);
            self.bus.snapshot(Scope::All, &snap, changed, now.at);
        }
        if self.bus.wants_snapshot(Scope::Local, changed, now.at) {
            let snap = self.local_snapshot(now);
            self.bus.snapshot(Scope::Local, &snap, changed, now.at);
        }
    }
}
