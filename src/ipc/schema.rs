//! The daemon's vocabulary on its socket: requests, replies and events, as JSON lines. These types
//! are the documented, stable schema of `agents --json` and `events --json` (see `docs/`).
//! Adding optional fields is compatible; renaming or removing one is not.

use serde::{Deserialize, Serialize};

use crate::ids::{PaneId, SessionId, WindowId};
use crate::state::{AgentState, BlockedKind};
// The shared vocabulary, re-exported: it is part of the wire format, but the core uses it from
// `state` and never imports this module.
pub use crate::state::{StateSource, Subtask, WindowMark};

/// Version of the schema below, carried in every reply.
pub const SCHEMA_VERSION: u32 = 1;

/// One pane as `agents --json` lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PaneRow {
    /// Pane id (`%3`).
    pub pane: PaneId,
    /// Window id (`@2`).
    pub window: WindowId,
    /// Session id (`$1`).
    pub session: SessionId,
    /// Session name.
    pub session_name: String,
    /// Window index in its session.
    pub window_index: u32,
    /// Window name.
    pub window_name: String,
    /// Pane index in its window.
    pub pane_index: u32,
    /// The pane's title as the program set it (empty when it never did).
    pub title: String,
    /// Whether this pane is its window's active pane.
    pub active: bool,
    /// Whether its window is its session's current window.
    pub window_active: bool,
    /// Current working directory of the pane (tmux `pane_current_path`).
    pub current_path: String,
    /// tmux's `pane_current_command` as of the last list of panes (see `docs/schema.md`).
    pub current_command: String,
    /// The foreground process's pid, when it could be read.
    pub fg_pid: Option<u32>,
    /// The foreground process's program name.
    pub fg_process: Option<String>,
    /// The foreground process's argv.
    #[serde(default)]
    pub fg_argv: Vec<String>,
    /// The program hides processes behind it (ssh, mosh, nested tmux, serial).
    pub process_less: bool,
    /// The identified agent's id, if any.
    pub agent: Option<String>,
    /// Its display name.
    pub agent_name: Option<String>,
    /// Its mark glyph (None: it has none; show the generic mark and the name).
    pub agent_mark: Option<String>,
    /// The running agent's version, when it was found (`docs/detection.md`).
    #[serde(default)]
    pub agent_version: Option<String>,
    /// The agent's screen is one its rules no longer recognise: the drift alarm
    /// (`docs/detection.md`); `explain` says why.
    #[serde(default)]
    pub unrecognised: bool,
    /// The pane's state; None = unknown.
    pub state: Option<AgentState>,
    /// Finished, result not yet seen (a status report's `done`, or the window's done mark).
    #[serde(default)]
    pub unseen_result: bool,
    /// Where the state came from.
    pub source: StateSource,
    /// The screen rule that matched, if that decided.
    pub rule: Option<String>,
    /// What the program reports doing (status report `msg`).
    pub message: Option<String>,
    /// The report's heading (`title`).
    #[serde(default)]
    pub report_title: Option<String>,
    /// What a blocked program waits for.
    pub kind: Option<BlockedKind>,
    /// Progress 0..=100, when reported.
    pub progress: Option<u8>,
    /// Subtasks of a reporting program.
    #[serde(default)]
    pub subtasks: Vec<Subtask>,
    /// Unix milliseconds of the last state change.
    pub since_ms: u64,
    /// The mark of this pane's window.
    pub window_mark: WindowMark,
    /// The machine the pane is on: this computer's name, or a connected machine's (S5.1).
    #[serde(default)]
    pub machine: Option<String>,
    /// A pane running ssh into a connected machine's tmux: what it shows there.
    #[serde(default)]
    pub shows: Option<PaneShows>,
}

/// What a local pane running ssh into a connected machine's tmux shows there (nested tmux).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneShows {
    /// The machine.
    pub machine: String,
    /// The session its client shows.
    pub session: String,
    /// That session's most urgent window mark.
    pub mark: WindowMark,
}

/// A person's tmux client of the server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientRow {
    /// Its name (tty).
    pub name: String,
    /// The session it shows.
    pub session_name: String,
    /// Its process's `SSH_CONNECTION` (`CLIENT_IP CLIENT_PORT SERVER_IP SERVER_PORT`), when it
    /// came over ssh.
    #[serde(default)]
    pub ssh_connection: Option<String>,
}

/// A window's rollup, as `agents --attention` and the notifications section list them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WindowRow {
    /// Window id.
    pub window: WindowId,
    /// Session id.
    pub session: SessionId,
    /// Session name.
    pub session_name: String,
    /// Window index.
    pub window_index: u32,
    /// Window name.
    pub window_name: String,
    /// Its mark.
    pub mark: WindowMark,
    /// Number of agents in it.
    pub agents: u32,
    /// The most urgent pane of the window, if any.
    pub pane: Option<PaneId>,
    /// What the most urgent program reported.
    pub message: Option<String>,
    /// Unix milliseconds of the last mark change.
    pub since_ms: u64,
    /// The machine the window is on.
    #[serde(default)]
    pub machine: Option<String>,
}

/// One state change, as `events --json` streams it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StateEvent {
    /// Unix milliseconds.
    pub time_ms: u64,
    /// Pane.
    pub pane: PaneId,
    /// Window.
    pub window: WindowId,
    /// Session.
    pub session: SessionId,
    /// Session name.
    pub session_name: String,
    /// Window name.
    pub window_name: String,
    /// The agent, if any.
    pub agent: Option<String>,
    /// State before (None = unknown).
    pub old: Option<AgentState>,
    /// State after (None = unknown).
    pub new: Option<AgentState>,
    /// What decided the new state.
    pub source: StateSource,
    /// Rule id, when a screen rule decided.
    pub rule: Option<String>,
    /// Message, if reported.
    pub message: Option<String>,
    /// Blocked kind, if any.
    pub kind: Option<BlockedKind>,
    /// Progress, if any.
    pub progress: Option<u8>,
    /// The window's mark after the change.
    pub window_mark: WindowMark,
    /// The machine the pane is on.
    #[serde(default)]
    pub machine: Option<String>,
}

/// A request to the daemon (one JSON line).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "snake_case")]
pub enum Request {
    /// Every pane and window now.
    Agents,
    /// Subscribe: a `Snapshot` now, then `Event`s as they happen and a fresh `Snapshot`
    /// whenever anything else changes.
    Subscribe,
    /// `Event`s as they happen, and nothing else (no snapshot is built for this stream).
    Events,
    /// Reload detection rules and config.
    Reload,
    /// Explain one pane's verdict.
    Explain {
        /// The pane.
        pane: PaneId,
        /// On this connected machine (None: this computer).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        machine: Option<String>,
    },
    /// Bring a pane to the front in a client.
    Focus {
        /// The pane.
        pane: PaneId,
        /// Prefer this client (tty name) if given.
        #[serde(default)]
        client: Option<String>,
        /// On this connected machine (None: this computer).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        machine: Option<String>,
    },
    /// Mark a window's results seen (the panel jumped there).
    Seen {
        /// The pane.
        pane: PaneId,
        /// On this connected machine (None: this computer).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        machine: Option<String>,
    },
    /// A stream for another sidecar (over `bridge`): a `Snapshot` now, `Event`s as they
    /// happen, a fresh `Snapshot` at most every half second while anything else changes, and,
    /// with `notifications`, the daemon's decisions to notify and to ring (`notify`, `sound`)
    /// instead of showing them itself.
    Follow {
        /// Take this daemon's notifications and sounds.
        #[serde(default)]
        notifications: bool,
    },
    /// The connected machines and how they are.
    Machines,
    /// Connect one more machine (for as long as the daemon runs; the config file's
    /// `[[machines]]` are the lasting ones).
    AddMachine {
        /// How to reach it.
        machine: MachineSpec,
    },
    /// Notify about a pane, through whatever shows this daemon's notifications (the desktop,
    /// a follower that takes them, the terminal): `thinkterm-sidecar notify`.
    Notify {
        /// The pane a click goes to.
        pane: PaneId,
        /// On this connected machine (None: this computer).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        machine: Option<String>,
        /// A title (after the window's name in the summary).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// The text.
        body: String,
    },
    /// What the daemon knows that `doctor` checks (a `Value`; `docs/schema.md`).
    Doctor,
    /// A pane's visible screen as text (and the last `lines` lines of its history before it),
    /// with its agent and state: a `Value` `{pane, agent, state, title, screen}`.
    Read {
        /// The pane.
        pane: PaneId,
        /// On this connected machine (None: this computer).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        machine: Option<String>,
        /// History lines before the visible screen (0: the screen only).
        #[serde(default)]
        lines: u32,
    },
    /// Types `text` into a pane literally (tmux `send-keys -l`: never read as key names; a
    /// newline is Enter), then Enter when `enter`. The pane's results count as seen, as when
    /// a person types there.
    Send {
        /// The pane.
        pane: PaneId,
        /// On this connected machine (None: this computer).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        machine: Option<String>,
        /// The text.
        text: String,
        /// Press Enter after it.
        #[serde(default = "yes")]
        enter: bool,
    },
    /// Starts a command in a new window (not selected: nobody's view changes) and answers a
    /// `Value` `{pane, window, session}` naming it.
    Start {
        /// On this connected machine (None: this computer).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        machine: Option<String>,
        /// The session to add the window to, by name or `$N`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<String>,
        /// Else the session of this pane (the caller's `$TMUX_PANE`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        near: Option<PaneId>,
        /// The working directory.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dir: Option<String>,
        /// The window's name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// The command and its arguments (one word: run by the shell; several: run directly).
        command: Vec<String>,
    },
}

/// How to reach a machine's sidecar: a command whose stdin and stdout are that sidecar's
/// socket (`thinkterm-sidecar bridge` run there).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineSpec {
    /// Its name, shown in every view (`devbox`).
    pub name: String,
    /// An ssh destination (a `~/.ssh/config` alias works): the command is then `ssh -T -o
    /// BatchMode=yes … DEST REMOTE_COMMAND`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh: Option<String>,
    /// More ssh arguments, before the destination (`["-p", "2222"]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ssh_args: Vec<String>,
    /// What ssh runs there (default `thinkterm-sidecar bridge --start`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_command: Option<String>,
    /// Or a whole command, for any other transport (`kubectl exec …`, `docker exec …`, or
    /// `thinkterm-sidecar -L other bridge` for a second local tmux server).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
}

/// One connected machine, as the snapshot lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineRow {
    /// Its name.
    pub name: String,
    /// This computer (the daemon's own tmux server).
    #[serde(default)]
    pub local: bool,
    /// Whether its sidecar answers now.
    pub reachable: bool,
    /// Why not, when it does not.
    #[serde(default)]
    pub reason: Option<String>,
    /// Unix milliseconds since it is reachable or not.
    pub since_ms: u64,
}

/// A notification that a followed daemon decided on (its background rule and 30 s throttle
/// applied), for the follower to show with its own switches and its machine's name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoteRequest {
    /// Window.
    pub window: WindowId,
    /// The pane a click goes to.
    pub pane: PaneId,
    /// `session:window`.
    pub window_name: String,
    /// `done`, `blocked`, `error` or `message`.
    pub kind: String,
    /// A message's title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The program's report (`msg`), or a message's text.
    #[serde(default)]
    pub message: Option<String>,
    /// What a blocked program waits for.
    #[serde(default)]
    pub waiting: Option<BlockedKind>,
    /// Progress 0..=100.
    #[serde(default)]
    pub progress: Option<u8>,
    /// Subtasks.
    #[serde(default)]
    pub subtasks: Vec<Subtask>,
}

/// A reply or pushed message from the daemon (one JSON line).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    /// Every pane and window now.
    Snapshot {
        /// Schema version.
        schema: u32,
        /// Panes, ordered by machine (this computer first), session, window index, pane index.
        panes: Vec<PaneRow>,
        /// Windows.
        windows: Vec<WindowRow>,
        /// This computer and each connected machine (empty from a daemon without machines
        /// support).
        #[serde(default)]
        machines: Vec<MachineRow>,
        /// The people's tmux clients of this computer's server.
        #[serde(default)]
        clients: Vec<ClientRow>,
    },
    /// One state change (only after `Subscribe`).
    Event(StateEvent),
    /// A request was done; `message` says what happened.
    Done {
        /// Human-readable result (`Detection rules reloaded.`).
        message: String,
    },
    /// A structured answer (explain).
    Value {
        /// The answer.
        value: serde_json::Value,
    },
    /// The request failed.
    Error {
        /// Why.
        message: String,
    },
    /// A stream's reader fell behind and `dropped` replies did not reach it; a `Snapshot` of
    /// everything now follows at once, so what the reader knows is whole again.
    Lagged {
        /// How many replies were dropped.
        dropped: u64,
    },
    /// (`Follow` with notifications) show this notification.
    Notify(NoteRequest),
    /// (`Follow` with notifications) ring this sound.
    Sound {
        /// `done` or `waiting`.
        sound: String,
        /// The window it is about.
        window: WindowId,
    },
    /// (On the streams) a connected machine became reachable or unreachable.
    Machine(MachineRow),
    /// The connected machines (answer to `Machines`).
    Machines {
        /// Each machine, this computer first.
        machines: Vec<MachineRow>,
    },
}

/// `true`: the default of a flag that is on unless a request turns it off.
fn yes() -> bool {
    true
}
