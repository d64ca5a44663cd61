//! The daemon: one core loop (`select!` over tmux notifications, answers to work in flight,
//! probe answers, socket requests, notification clicks, signals and the nearest deadline) that
//! hands each thing to the owner of the facts it touches. Nothing runs when nothing happens: no
//! timer is armed unless some work is due. The loop never waits for tmux, for `/proc` or for the
//! disk: commands go out at once and their answers come back as events; reads that can block
//! run on a thread of their own. Shutdown ends within [`SHUTDOWN_BUDGET`] whatever tmux does.
//!
//! Who owns what:
//! - [`core`]: the [`core::Daemon`] that holds the owners below and dispatches; its
//!   [`link::Link`] owns the observer and how the next one is sought (backoff, re-list);
//! - [`panes`]: per pane, its first process, foreground, identity, screen, verdict, signals and
//!   state machine (and, in `panes::look`, when output leads to a look at its foreground);
//! - [`capture`]: which panes need a capture, when each was captured, the next round;
//! - [`prober`]: full foreground probes on their own thread, and which are outstanding;
//! - [`flood`]: per pane, whether our copy of its output is paused;
//! - [`screen_model`]: per agent pane read through its pipe, a terminal model of its screen
//!   that serves looks once a capture confirmed it; [`recent`]: the bytes that carried a state
//!   lately, for a respawned pane;
//! - [`redraw`]: per agent pane, whether our copy of its redraws is paused until its capture;
//! - [`windows`]: the rollup, what it was told about windows being looked at, the done file;
//! - [`status_line`]: the options last set, the spinner's frame and next frame;
//! - [`notifier`]: the throttle, the display switches, the focus facts, the desktop handle;
//! - [`bus`]: the subscribers and their lag (followers: other sidecars);
//! - [`machines`]: connected machines: their links, reachability, panes, pending requests;
//! - [`nested`]: local panes running ssh into a connected machine's tmux, and the client each
//!   shows there;
//! - [`terminal`]: notes waiting for the person's attached client, and when each is written;
//! - [`drive`]: `read`, `send` and `start` requests, answered off the core loop;
//! - [`pane_drift`]: the drift alarm fed by each verdict;
//! - [`ruleset`]: the rules in force and what the overrides folder held;
//! - [`sync_update`]: per agent pane, whether its program is drawing a frame (mode 2026), so
//!   looks read the last whole one;
//! - [`snapshot`]: builds `agents --json` from the above; [`ipc_server`]: the socket;
//!   [`requests`]: what each request asks and is answered; [`doctor`]: what `doctor` asks the
//!   daemon.

mod bus;
mod capture;
mod core;
mod doctor;
mod drive;
mod flood;
mod ipc_server;
mod link;
mod machines;
mod nested;
mod notifier;
mod option_batch;
mod pane_drift;
mod pane_flow;
mod pane_map;
mod panes;
mod prober;
mod recent;
mod redraw;
mod requests;
mod ruleset;
mod screen_model;
mod shutdown;
mod snapshot;
mod status_line;
mod status_options;
mod sync_update;
mod terminal;
mod verdict_memo;
mod windows;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures_util::StreamExt as _;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

use crate::clock::Now;
use crate::config::Loaded;
use crate::effects::desktop::{Desktop, DesktopConfig, DesktopEvent};
use crate::effects::sound::player::{SoundPlayer, SoundSetup};
use crate::effects::sound::{Sound, SoundConfig};
use crate::rules::{Catalog, Snapshot};
use crate::timer::Timer;
use crate::tmux::connection::Pacing;
use crate::tmux::observer::{Observed, Observer};
use crate::tmux::server::{ServerAddress, ServerChoice};
pub use ipc_server::IpcMessage;

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

/// The longest wait for tmux to answer a query (a re-list, a client list, a capture round, a
/// focus); a query that takes longer is dropped with a log line and asked again later.
pub const TMUX_REPLY_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest a connect to the server may take (spawning `tmux list-sessions`, attaching,
/// installing the hooks, the first listing).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest the loop spends attaching the control clients a re-list found missing (local
/// work only: a socket connect and three writes per client).
pub const ATTACH_BUDGET: Duration = Duration::from_secs(1);
/// What shutdown may take to clear our options and hooks and write the done marks.
pub const SHUTDOWN_BUDGET: Duration = Duration::from_millis(1500);

/// Failure that maps to a specific exit code.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Fatal {
    /// What to print.
    pub message: String,
    /// Exit code.
    pub code: i32,
}

/// What woke the core loop.
enum Wake {
    Observed(Observed),
    Link(
        crate::remote::link::MachineIndex,
        crate::remote::link::LinkEvent,
    ),
    Done(core::Done),
    Probed(prober::Answer),
    Ipc(IpcMessage),
    Desktop(DesktopEvent),
    Deadline,
    Reload,
    Shutdown,
}

/// Runs the daemon until SIGINT or SIGTERM.
pub async fn run(opts: Options) -> anyhow::Result<()> {
    let config = crate::config::load(opts.config_path.as_deref());
    for w in &config.warnings {
        tracing::warn!("{w}");
    }
    let tmux = crate::tmux::server::find_tmux();
    if tmux.is_none() {
        if config.machines.is_empty() {
            return Err(Fatal {
                message: "tmux is not installed (not found on PATH); install tmux 3.2 or later"
                    .into(),
                code: EXIT_NO_TMUX,
            }
            .into());
        }
        tracing::info!("no tmux here: serving the connected machines only");
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
    let notifier = notifier::Notifier::new(
        desktop,
        crate::effects::notification::installed_desktop_entry(),
        config.config.notify_without_focus,
        config.config.display,
        crate::panel::default_options_path(),
    );
    let (prober, mut probed_rx) = prober::Prober::start().context("starting the probe thread")?;
    let pacing = Pacing::every(
        Duration::from_millis(config.config.read_batch_ms),
        Timer::start(),
    );
    let (rules, summary) = ruleset::RuleSet::load(&crate::paths::rules_dir());
    tracing::debug!("{summary}");
    let sound = sound_player(&config);
    let (link_tx, mut link_rx) = mpsc::channel(crate::remote::link::QUEUE);
    let machines = machines::Machines::new(
        machines::local_name(&config.config.machine_name),
        &config.machines,
        link_tx,
        Instant::now(),
    );
    let mut d = core::Daemon::new(
        tmux,
        addr,
        config,
        opts.config_path,
        rules,
        prober,
        notifier,
        sound,
        machines,
        pacing,
        Instant::now(),
    );
    let mut term = signal(SignalKind::terminate()).context("SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("SIGINT handler")?;
    let mut hup = signal(SignalKind::hangup()).context("SIGHUP handler")?;
    // The wait for the nearest deadline lives across turns of the loop and is made again only
    // when that deadline moves: a wait made and dropped at every event would re-arm the timer.
    let mut armed: Option<Option<Instant>> = None;
    let mut sleep: Sleep = Box::pin(std::future::pending());
    loop {
        let deadline = d.next_deadline(Instant::now());
        if armed != Some(deadline) {
            armed = Some(deadline);
            sleep = Box::pin(sleep_opt(d.pacing.timer.clone(), deadline));
        }
        let wake = tokio::select! {
            o = next_observed(&mut d.link.observer) => Wake::Observed(o),
            Some(done) = d.tasks.next(), if !d.tasks.is_empty() => Wake::Done(done),
            Some(p) = probed_rx.recv() => Wake::Probed(p),
            Some((i, e)) = link_rx.recv() => Wake::Link(i, e),
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
        let now = Now::read();
        match wake {
            Wake::Observed(o) => d.on_observed(now, o),
            Wake::Done(done) => d.on_done(now, done).await,
            Wake::Probed(p) => d.on_probe_answer(now, p),
            Wake::Link(i, e) => d.on_link(now, i, e),
            Wake::Ipc(m) => d.on_ipc(now, m),
            Wake::Desktop(e) => d.on_desktop(now, e),
            Wake::Deadline => {
                // The readers woken by the same grid instant run first, and what they read is
                // taken in before the timers act: a capture round sees every pane that wrote.
                crate::timer::after_the_woken().await;
                while let Some(o) = d.link.observer.as_mut().and_then(Observer::try_next) {
                    d.on_observed(now, o);
                }
                d.on_deadline(now);
            }
            Wake::Reload => d.reload(None),
            Wake::Shutdown => break,
        }
        d.flush(now);
    }
    tracing::info!("shutting down");
    d.shutdown(SHUTDOWN_BUDGET).await;
    let _ = std::fs::remove_file(&sock);
    Ok(())
}

async fn next_observed(o: &mut Option<Observer>) -> Observed {
    match o {
        Some(o) => o.next().await,
        None => std::future::pending().await,
    }
}

async fn recv_opt<T>(rx: &mut Option<mpsc::Receiver<T>>) -> Option<T> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// The sound player the config asks for, with both files written out now (at start or reload,
/// not when a sound first rings).
fn sound_player(config: &Loaded) -> SoundPlayer {
    let mut p = SoundPlayer::new(
        SoundConfig {
            enabled: config.sound_enabled(),
            done_file: config.config.sound_done.clone(),
            waiting_file: config.config.sound_waiting.clone(),
        },
        SoundSetup::from_env(),
    );
    if p.enabled() && p.program().is_some() {
        for s in Sound::ALL {
            let _ = p.file(s);
        }
    }
    p
}

/// The daemon's wait for its nearest deadline.
type Sleep = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

async fn sleep_opt(timer: Timer, t: Option<Instant>) {
    match t {
        Some(t) => timer.sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// Classifies a screen offline (for `explain --file`); `progress` is an OSC 9;4 payload
/// (`4;1;50`).
pub fn explain_screen(
    catalog: &Catalog,
    agent: &str,
    screen: &str,
    title: Option<&str>,
    progress: Option<&str>,
) -> crate::rules::Explanation {
    let progress = progress.and_then(|p| crate::osc::progress::parse(format!("9;{p}").as_bytes()));
    catalog.explain(
        agent,
        &Snapshot {
            screen,
            osc_title: title,
            osc_progress: progress,
        },
    )
}
