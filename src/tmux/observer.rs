//! The observer of one tmux server: its control clients, kept in step with `%sessions-changed`
//! (with pane pipes, [`piping`], the default: one for the whole server, with the [`world`]
//! subscription, plus one per session holding a pane read through its client; without: one
//! per session group); the inventory; the panes' bytes, through each pane's pipe (held closed
//! while the pane floods, [`holding`]) or its control client; and pane captures sent over a control connection (no process per capture). What
//! the connections say becomes what the observer reports in [`events`].

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use tokio::sync::mpsc;

use super::attach::AttachError;
use super::command::{format_of, quote};
use super::connection::{CommandError, ConnEvent, ConnId, Connection, Pacing, EVENT_QUEUE};
use super::escape::PaneBytes;
use super::inventory::{
    list_clients_command, list_panes_command, list_sessions_command, parse_clients, parse_panes,
    parse_sessions, ClientInfo, Inventory, PaneInfo, SessionInfo,
};
use super::pipe::{PipeConfig, Pipes};
use super::protocol::Notification;
use super::server::ServerAddress;
use crate::ids::{PaneId, SessionId, WindowId};

mod captures;
mod clients;
mod events;
mod holding;
mod piping;
mod relist;
mod world;
pub use captures::{Captured, Captures};
use clients::first_session;
pub use piping::{ClientReason, Piping, PIPE_WAIT};
pub use relist::Target;

/// Subscription name prefix for a pane's title (`thinkterm_title_5` for `%5`).
const SUB_TITLE: &str = "thinkterm_title_";
/// Subscription name prefix for a pane's current command.
const SUB_COMMAND: &str = "thinkterm_cmd_";
/// Subscription name for the focus counter our hooks bump.
const SUB_FOCUS: &str = "thinkterm_focus";
/// Index of our hooks in the `client-focus-in`/`-out` hook arrays: high, so that the user's own
/// hooks (usually at index 0) are untouched.
const HOOK_INDEX: u32 = 9871;

/// The answer of commands sent now, awaited later without holding the observer.
pub type Query<T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, CommandError>> + Send>>;

/// What a re-list found.
#[derive(Debug)]
pub struct Lists {
    /// Sessions.
    pub sessions: BTreeMap<SessionId, SessionInfo>,
    /// Panes: every pane, or the targets' only.
    pub panes: Listed,
    /// Clients.
    pub clients: Vec<ClientInfo>,
    /// `focus-events` (None when it could not be read).
    pub focus_events: Option<bool>,
}

/// The panes a re-list found.
#[derive(Debug)]
pub enum Listed {
    /// Every pane of the server (`list-panes -a`).
    All(BTreeMap<PaneId, PaneInfo>),
    /// What each target's command found (`None`: the target is gone).
    Scoped(Vec<(Target, Option<BTreeMap<PaneId, PaneInfo>>)>),
}

/// The longest wait for attaching one control client (local work: a connect and three writes).
pub const ATTACH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// What the observer reports.
#[derive(Debug, PartialEq, Eq)]
pub enum Observed {
    /// A pane wrote bytes.
    Output {
        /// The pane.
        pane: PaneId,
        /// The bytes: raw from its pipe, or still escaped as a control client carries them.
        data: PaneBytes,
    },
    /// Bytes of a pane's pipe were dropped (we fell far behind): what follows starts afresh.
    Lost(PaneId),
    /// A pane wrote faster than its pipe's bytes are taken as they are: some of its text and
    /// drawing were left out (never a part of an escape sequence), so its screen changed unseen.
    Skipped(PaneId),
    /// Something structural changed: call [`Observer::refresh`] (soon; several come in bursts).
    Structure,
    /// Clients changed (session switch, window switch, detach): refresh clients.
    Clients,
    /// A pane's title changed (the inventory is updated).
    Title(PaneId),
    /// A pane's first process changed, or tmux's name of its command did, as a re-list or (with
    /// the control clients) a pane subscription shows it (the inventory is updated): re-probe
    /// it.
    Command(PaneId),
    /// tmux paused a pane's output (we fell behind): capture it again after `Continue`.
    Paused(PaneId),
    /// tmux resumed a paused pane.
    Continued(PaneId),
    /// The server is gone (every control client ended and the socket does not answer).
    ServerGone,
}

/// Why the observer could not start.
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    /// No tmux server answers on the socket.
    #[error("no tmux server at {0}")]
    NoServer(PathBuf),
    /// The server has no session to attach to.
    #[error("the tmux server at {0} has no sessions")]
    NoSessions(PathBuf),
    /// Spawning tmux failed.
    #[error("cannot run tmux: {0}")]
    Spawn(#[from] std::io::Error),
    /// Attaching a control client failed.
    #[error("cannot attach a control client: {0}")]
    Attach(#[from] AttachError),
    /// The server ended our control client (a tmux older than 3.2 does at once: another
    /// protocol version).
    #[error("tmux ended the control client: {0} (thinkterm-sidecar needs tmux 3.2 or later)")]
    Ended(String),
    /// A command failed.
    #[error(transparent)]
    Command(#[from] CommandError),
}

/// Watches one tmux server.
pub struct Observer {
    addr: ServerAddress,
    conns: BTreeMap<SessionId, Connection>,
    by_id: HashMap<ConnId, SessionId>,
    next_id: u64,
    tx: mpsc::Sender<(ConnId, ConnEvent)>,
    rx: mpsc::Receiver<(ConnId, ConnEvent)>,
    inventory: Inventory,
    /// Notifications received but not yet reported.
    queued: std::collections::VecDeque<(ConnId, Notification)>,
    /// Changes a re-list found (reported before any notification).
    found: std::collections::VecDeque<Observed>,
    /// `pid␟start_time` of the server: distinguishes a restarted server reusing ids.
    server_identity: String,
    /// How busy control clients are read.
    pacing: Pacing,
    /// Which connection carries each pane's title and command subscriptions.
    subscribed: HashMap<PaneId, ConnId>,
    /// The connection and window that carry the focus counter's subscription (one is enough:
    /// the counter is a global option).
    focus_sub: Option<(ConnId, WindowId)>,
    /// The panes' pipes and which pane is read how.
    piping: piping::PipeState,
    /// The tmux binary (to find a session to attach to when no client is left).
    tmux: PathBuf,
    /// With pipes: the session our one client watches the server from.
    main: Option<SessionId>,
    /// With pipes: the world subscription's target, and its last text as read.
    world_sub: Option<(ConnId, WindowId)>,
    world: Option<world::World>,
    /// What the next re-list must cover.
    scope: relist::Scope,
}

impl Observer {
    /// Connects to the server: lists its sessions with one `tmux` command, attaches a control
    /// client to each, and lists everything. Every write is read at once.
    pub async fn connect(tmux: PathBuf, addr: ServerAddress) -> Result<Observer, ObserveError> {
        Observer::connect_paced(tmux, addr, Pacing::immediate()).await
    }

    /// [`Observer::connect`], with busy control clients read as `pacing` says.
    pub async fn connect_paced(
        tmux: PathBuf,
        addr: ServerAddress,
        pacing: Pacing,
    ) -> Result<Observer, ObserveError> {
        Observer::connect_with(tmux, addr, pacing, None).await
    }

    /// [`Observer::connect_paced`], reading the panes through their pipes when `pipes` says
    /// where the relay and its socket are (the control clients then take no output, but for
    /// the sessions of panes that cannot be piped); when the socket cannot be bound, or the
    /// relay is not there, through the control clients, as without.
    pub async fn connect_with(
        tmux: PathBuf,
        addr: ServerAddress,
        pacing: Pacing,
        pipes: Option<PipeConfig>,
    ) -> Result<Observer, ObserveError> {
        if !addr.is_alive() {
            return Err(ObserveError::NoServer(addr.socket.clone()));
        }
        let first = first_session(&tmux, &addr)
            .await?
            .ok_or_else(|| ObserveError::NoSessions(addr.socket.clone()))?;
        // Bounded: at the bound a reader waits. Whoever awaits a reply drains the channel
        // meanwhile ([`Observer::drain_until`] here, the daemon's loop later), so a reply that
        // sits behind notifications is always reached.
        let (tx, rx) = mpsc::channel(EVENT_QUEUE);
        let mut obs = Observer {
            addr,
            conns: BTreeMap::new(),
            by_id: HashMap::new(),
            next_id: 0,
            tx,
            rx,
            inventory: Inventory::default(),
            queued: std::collections::VecDeque::new(),
            found: std::collections::VecDeque::new(),
            server_identity: String::new(),
            pacing,
            subscribed: HashMap::new(),
            focus_sub: None,
            piping: piping::PipeState::default(),
            tmux,
            main: Some(first),
            world_sub: None,
            world: None,
            scope: relist::Scope::default(),
        };
        if let Some(cfg) = pipes {
            if !cfg.relay.is_file() {
                tracing::warn!(relay = %cfg.relay.display(), "the relay binary is missing: reading panes through the control clients");
            } else {
                match Pipes::start(cfg, obs.tx.clone(), obs.pacing.clone()) {
                    Ok(p) => obs.piping.pipes = Some(p),
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot listen for pane pipes: reading panes through the control clients")
                    }
                }
            }
        }
        obs.attach(first).await?;
        // Server-wide formats, read through a command that needs no attached client.
        let list = obs.start_command(format!(
            "list-sessions -F '{}'",
            format_of(&["pid", "start_time"])
        ));
        let body = match obs.drain_until(list).await {
            Err(CommandError::Closed) => {
                let reason = obs.conns.values().find_map(|c| c.exit_reason());
                return Err(ObserveError::Ended(
                    reason.unwrap_or_else(|| "closed at once".into()),
                ));
            }
            other => other?,
        };
        obs.install_focus_hooks().await;
        for line in obs.pipe_hook_commands() {
            let reply = obs.start_command(line);
            if let Err(e) = obs.drain_until(reply).await {
                tracing::warn!(error = %e, "cannot install a pipe hook: new panes are piped at the next list");
            }
        }
        obs.server_identity = body.first().cloned().unwrap_or_default();
        obs.refresh().await?;
        Ok(obs)
    }

    /// tmux sends no notification when a client's terminal gains or loses focus, but it runs the
    /// `client-focus-in`/`-out` hooks (with `focus-events on`). Ours bump a global user option
    /// that a subscription watches, so focus changes reach us within tmux's one-second
    /// subscription check, without polling.
    async fn install_focus_hooks(&mut self) {
        for hook in ["client-focus-in", "client-focus-out"] {
            let cmd = format!(
                "set-hook -g {hook}[{HOOK_INDEX}] {}",
                quote("set-option -gF @thinkterm_focus '#{e|+:#{@thinkterm_focus},1}'")
            );
            let reply = self.start_command(cmd);
            if let Err(e) = self.drain_until(reply).await {
                tracing::debug!(error = %e, hook, "cannot install focus hook");
            }
        }
    }

    /// A command's answer, as a future that does not hold the observer.
    fn start_command(&self, line: String) -> Query<Vec<String>> {
        match self.any_connection() {
            Ok(c) => Box::pin(c.start(line)),
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }

    /// Awaits `fut` while taking in what the control clients send meanwhile (queued for
    /// [`Observer::next`]): a reader waiting at the channel's bound must never hold up the
    /// reply `fut` waits for.
    async fn drain_until<T>(&mut self, fut: impl std::future::Future<Output = T>) -> T {
        tokio::pin!(fut);
        loop {
            tokio::select! {
                out = &mut fut => return out,
                Some((id, ev)) = self.rx.recv() => match ev {
                    ConnEvent::Batch(notes) => {
                        self.queued.extend(notes.into_iter().map(|n| (id, n)));
                    }
                    closed => {
                        if let Some(o) = self.on_event(id, closed) {
                            self.found.push_back(o);
                        }
                    }
                },
            }
        }
    }

    /// Removes what the sidecar installed in the server (the focus hooks); the control clients
    /// detach when the observer is dropped.
    pub async fn uninstall(&mut self) {
        for line in self.uninstall_commands() {
            let _ = self.command(line).await;
        }
    }

    /// The commands that remove what the sidecar installed (the focus hooks, the pipe hooks,
    /// our pipes and their marks), to send with others and await together.
    pub fn uninstall_commands(&self) -> Vec<String> {
        let mut out: Vec<String> = ["client-focus-in", "client-focus-out"]
            .iter()
            .map(|hook| format!("set-hook -gu {hook}[{HOOK_INDEX}]"))
            .collect();
        out.extend(self.pipe_uninstall_commands());
        out
    }

    /// The server's identity (`pid␟start_time`), stable while it runs.
    pub fn server_identity(&self) -> &str {
        &self.server_identity
    }

    /// The server's pid, from its identity.
    pub fn server_pid(&self) -> Option<u32> {
        self.server_identity
            .split(crate::tmux::command::SEP)
            .next()?
            .parse()
            .ok()
    }

    /// Whether the server this observer attached to still runs: its socket may already belong to
    /// a new server (killed and started again at the same path), which is another server, with
    /// ids of its own, not this one's.
    ///
    /// A server that is exiting counts as gone: a client's end can close while the dying server
    /// still holds its listening socket (a connect then succeeds), and its `/proc` entry stays
    /// until it is reaped.
    pub(super) fn server_process_alive(&self) -> bool {
        self.server_pid().is_none_or(process_running)
    }

    /// The server's address.
    pub fn address(&self) -> &ServerAddress {
        &self.addr
    }

    /// The inventory as of the last refresh (titles and commands kept current in between).
    pub fn inventory(&self) -> &Inventory {
        &self.inventory
    }

    /// Number of control clients running.
    pub fn connection_count(&self) -> usize {
        self.conns.len()
    }

    /// A live connection to send commands on.
    fn any_connection(&self) -> Result<&Connection, CommandError> {
        self.conns
            .values()
            .find(|c| c.is_open())
            .ok_or(CommandError::Closed)
    }

    /// Sends a command on one of the control connections and returns its reply body.
    pub async fn command(&mut self, line: impl Into<String>) -> Result<Vec<String>, CommandError> {
        let reply = self.start_command(line.into());
        self.drain_until(reply).await
    }

    /// A clone of a live connection, for callers that want to await a command without holding
    /// the observer (the daemon's effect tasks).
    pub fn connection(&self) -> Option<Connection> {
        self.any_connection().ok().cloned()
    }

    /// Re-lists sessions, every pane and clients and reads `focus-events` (four commands on one
    /// connection), then attaches or drops control clients so that there is exactly one per
    /// session group. [`Observer::start_relist`] and [`Observer::apply_relist`] in one await.
    pub async fn refresh(&mut self) -> Result<(), ObserveError> {
        self.want_full_relist();
        self.refresh_changed().await
    }

    /// [`Observer::refresh`], listing only the panes of what changed since the last list, as
    /// the daemon does ([`relist`]).
    pub async fn refresh_changed(&mut self) -> Result<(), ObserveError> {
        let relist = self.start_relist();
        let lists = self.drain_until(relist).await?;
        self.apply_relist(lists);
        self.attach_missing().await;
        Ok(())
    }

    /// How many re-lists listed every pane, and how many only what changed.
    pub fn relist_counts(&self) -> (u64, u64) {
        self.scope.counts()
    }

    /// Sends the re-listing commands now (every pane, or the panes of what changed since the
    /// last list: [`relist`]); the returned future gives their answers, without holding the
    /// observer (the daemon goes on taking in notifications meanwhile).
    pub fn start_relist(&mut self) -> Query<Lists> {
        self.piping.relisting = true;
        let conn = match self.any_connection() {
            Ok(c) => c.clone(),
            Err(e) => {
                self.scope.add(None);
                return Box::pin(std::future::ready(Err(e)));
            }
        };
        let plan = self.scope.take(
            std::time::Instant::now(),
            &self.inventory.panes,
            &self.inventory.sessions,
        );
        tracing::trace!(?plan, "re-list");
        let sessions = conn.start(list_sessions_command());
        let panes: Query<Listed> = match plan {
            relist::Plan::Full => {
                let all = conn.start(list_panes_command());
                Box::pin(async move { Ok(Listed::All(parse_panes(&all.await?))) })
            }
            relist::Plan::Scoped(targets) => {
                let asked: Vec<_> = targets
                    .into_iter()
                    .map(|t| (t, conn.start(t.command())))
                    .collect();
                Box::pin(async move {
                    let mut parts = Vec::with_capacity(asked.len());
                    for (t, reply) in asked {
                        parts.push((t, relist::answered(reply.await)?));
                    }
                    Ok(Listed::Scoped(parts))
                })
            }
        };
        let clients = conn.start(list_clients_command());
        let focus = conn.start("show-options -gv focus-events".into());
        Box::pin(async move {
            Ok(Lists {
                sessions: parse_sessions(&sessions.await?),
                panes: panes.await?,
                clients: parse_clients(&clients.await?),
                focus_events: focus
                    .await
                    .ok()
                    .and_then(|b| b.first().map(|v| v.trim() == "on")),
            })
        })
    }

    /// Takes in a re-list: the inventory becomes what it says, and changes that no
    /// notification will report are queued. Connections to drop go at once; the sessions that
    /// lack one are attached by [`Observer::attach_missing`].
    pub fn apply_relist(&mut self, lists: Lists) {
        let Lists {
            sessions,
            panes,
            clients,
            focus_events,
        } = lists;
        let panes = match panes {
            Listed::All(panes) => {
                self.scope.full_done(std::time::Instant::now());
                panes
            }
            Listed::Scoped(parts) => {
                match relist::merge(&self.inventory.panes, &sessions, parts) {
                    Ok(relist::Merged { panes, shrunk }) => {
                        for s in shrunk {
                            self.structure(Some(Target::Session(s)));
                        }
                        panes
                    }
                    Err(why) => {
                        // Nothing of it is taken in; another list follows, of what it lacked.
                        tracing::trace!(?why, "structure: a scoped re-list was not taken in");
                        match why {
                            relist::Unmerged::Inexact => self.structure(None),
                            relist::Unmerged::Orphaned(windows) => {
                                for w in windows {
                                    self.structure(Some(Target::Window(w)));
                                }
                            }
                        }
                        self.relist_done();
                        return;
                    }
                }
            }
        };
        // A command that changed before this list came, and whose subscription notice comes
        // after it, would otherwise go unreported: the notice finds the list already current.
        // The same for a pane whose first process changed (`respawn-pane`).
        for (id, p) in &panes {
            if self
                .inventory
                .panes
                .get(id)
                .is_some_and(|old| old.current_command != p.current_command || old.pid != p.pid)
            {
                self.found.push_back(Observed::Command(*id));
            }
        }
        self.inventory.sessions = sessions;
        self.inventory.panes = panes;
        self.inventory.clients = clients;
        if let Some(f) = focus_events {
            self.inventory.focus_events = f;
        }
        // Pipes first: which panes are read through a client decides which clients there are.
        self.relist_done();
        self.sync_pipes();
        let wanted = self.targets();
        // Dropping the handle closes its input: the client detaches.
        self.conns.retain(|s, _| wanted.contains(s));
        self.sync_subscriptions();
        self.sync_outputs();
    }

    /// Re-lists only the clients (cheap; after client notifications): the future of the list.
    pub fn start_clients(&self) -> Query<Vec<ClientInfo>> {
        let conn = match self.any_connection() {
            Ok(c) => c.clone(),
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        let clients = conn.start(list_clients_command());
        Box::pin(async move { Ok(parse_clients(&clients.await?)) })
    }

    /// Takes in a list of clients.
    pub fn apply_clients(&mut self, clients: Vec<ClientInfo>) {
        self.inventory.clients = clients;
    }

    /// Re-lists only the clients, in one await.
    pub async fn refresh_clients(&mut self) -> Result<(), ObserveError> {
        let query = self.start_clients();
        let clients = self.drain_until(query).await?;
        self.apply_clients(clients);
        Ok(())
    }
}

/// Whether process `pid` runs and is not exiting (`PF_EXITING` in the flags of
/// `/proc/PID/stat`, or a zombie): what is left of a killed process is not it.
fn process_running(pid: u32) -> bool {
    /// `PF_EXITING`, set when a process starts to exit (before its descriptors close).
    const PF_EXITING: u64 = 0x4;
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The fields after the command (which may hold spaces and parentheses): state, ppid, pgrp,
    // session, tty_nr, tpgid, flags.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return false;
    };
    let mut fields = rest.split_whitespace();
    let state = fields.next().unwrap_or("X");
    let flags: u64 = fields.nth(5).and_then(|f| f.parse().ok()).unwrap_or(0);
    !matches!(state, "Z" | "X" | "x") && flags & PF_EXITING == 0
}

#[cfg(test)]
mod tests {
    use super::process_running;

    #[test]
    fn a_running_process_runs_and_a_zombie_or_a_missing_one_does_not() {
        assert!(process_running(std::process::id()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Not waited for yet: once it has exited it is a zombie, whose /proc entry remains.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while process_running(pid) {
            assert!(std::time::Instant::now() < deadline, "`true` did not end");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
        child.wait().unwrap();
        assert!(!process_running(pid));
    }
}
