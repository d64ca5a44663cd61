//! The command line: clap definitions, and the connection to the daemon that the small clients
//! in the submodules share (one per command family: `agents`, `events`, `rules`,
//! `report`, `actions`, [`card`], [`drive`]). Glue only: meaning lives in the library
//! modules.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::ipc::{socket_path, Client};
use crate::tmux::server::{ServerAddress, ServerChoice};

mod actions;
mod agents;
pub mod card;
pub mod drive;
mod events;
mod report;
mod rules;
mod screen_file;

pub use actions::{focus, notify};
pub use agents::{agents, status};
pub use events::events;
pub use report::{report, ReportCmd};
pub use rules::{explain, rules_local, rules_reload};

/// Watches every tmux pane and tells you which AI coding agent needs you.
#[derive(Debug, Parser)]
#[command(
    name = "thinkterm-sidecar",
    version,
    about,
    after_long_help = crate::generate::AFTER_HELP
)]
pub struct Cli {
    /// tmux server socket name (like `tmux -L NAME`).
    #[arg(
        short = 'L',
        global = true,
        value_name = "NAME",
        conflicts_with = "socket_path"
    )]
    pub socket_name: Option<String>,
    /// tmux server socket path (like `tmux -S PATH`).
    #[arg(short = 'S', global = true, value_name = "PATH")]
    pub socket_path: Option<PathBuf>,
    /// Config file (default `$XDG_CONFIG_HOME/thinkterm/config.toml`).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the daemon (one per tmux server): in the foreground, or in the background with
    /// `--detach`.
    Run(crate::service::RunArgs),
    /// List every pane with its agent and state.
    Agents {
        /// Print the documented JSON schema instead of a table.
        #[arg(long)]
        json: bool,
        /// Only windows that need attention or are done (S4.2), most urgent first.
        #[arg(long)]
        attention: bool,
        /// Only the panes of this machine (this computer's name, or a connected machine's).
        #[arg(long, value_name = "NAME")]
        machine: Option<String>,
    },
    /// Stream state changes as they happen.
    Events {
        /// JSON lines (the documented schema).
        #[arg(long)]
        json: bool,
    },
    /// Print the effective configuration and where each value came from.
    Config,
    /// Bring a pane to the front in a client (switching its session if needed).
    Focus {
        /// The pane (`%3`, or `MACHINE:%3` on a connected machine).
        pane: crate::ids::PaneTarget,
        /// Prefer this client (its name or tty).
        #[arg(long)]
        client: Option<String>,
    },
    /// Send a notification about a pane through the sidecar (desktop, the machine that follows
    /// this one, or the terminal): `make; thinkterm-sidecar notify "build finished"`. A click
    /// brings the pane to the front.
    Notify {
        /// The text.
        #[arg(required = true)]
        text: Vec<String>,
        /// A title, after the window's name in the summary.
        #[arg(long)]
        title: Option<String>,
        /// The pane (`%3`, or `MACHINE:%3`); default: the pane this runs in (`$TMUX_PANE`).
        #[arg(long)]
        pane: Option<crate::ids::PaneTarget>,
    },
    /// Print a pane's screen as text, after a line with its agent and state.
    Read {
        /// The pane: `%3`, `MACHINE:%3`, or `SESSION:WINDOW[.PANE]`.
        pane: drive::PaneName,
        /// Also this many lines of history before the screen.
        #[arg(long, default_value_t = 0)]
        lines: u32,
        /// JSON: `{pane, agent, state, title, screen, …}`.
        #[arg(long)]
        json: bool,
    },
    /// Type text into a pane, literally (key names such as `C-c` are text), then Enter. `-`
    /// reads the text from standard input (a newline in it is Enter).
    Send {
        /// The pane: `%3`, `MACHINE:%3`, or `SESSION:WINDOW[.PANE]`.
        pane: drive::PaneName,
        /// The text (words are joined by spaces).
        #[arg(required = true, allow_hyphen_values = true, trailing_var_arg = true)]
        text: Vec<String>,
        /// Do not press Enter after it.
        #[arg(long)]
        no_enter: bool,
        /// First wait until the pane is idle (exit 3 after `--timeout`, nothing sent).
        #[arg(long)]
        when_idle: bool,
        /// Seconds `--when-idle` waits.
        #[arg(long, default_value_t = 600.0, value_name = "SECS")]
        timeout: f64,
    },
    /// Wait until a pane reaches a state; print its state line (`%3 claude idle`). Exit 0, 3
    /// on timeout, 4 when the pane closes.
    Wait {
        /// The pane: `%3`, `MACHINE:%3`, or `SESSION:WINDOW[.PANE]`.
        pane: drive::PaneName,
        /// The state: `done` (a turn ended during the wait: working or blocked, then idle or
        /// error; or a result nobody has seen yet), `idle`, `blocked`, `working`, `any-change`.
        #[arg(long = "for", value_enum, default_value = "done")]
        goal: drive::Goal,
        /// Give up after this many seconds (exit 3).
        #[arg(long, value_name = "SECS")]
        timeout: Option<f64>,
        /// Print the pane's row as JSON (`agents --json`'s schema).
        #[arg(long)]
        json: bool,
    },
    /// Start a command in a new window (not selected) and print its pane id:
    /// `thinkterm-sidecar start --name review -- claude`.
    Start {
        /// The session (default: the one this runs in).
        #[arg(long)]
        session: Option<String>,
        /// The working directory (default: this one).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// The window's name.
        #[arg(long)]
        name: Option<String>,
        /// On this connected machine.
        #[arg(long)]
        machine: Option<String>,
        /// The command and its arguments.
        #[arg(required = true, last = true)]
        command: Vec<String>,
    },
    /// One line for the status bar (`#(thinkterm-sidecar status)`); see `--format`.
    Status {
        /// Text with `{error}`, `{attention}`, `{running}`, `{done}`, `{idle}` (window counts) and
        /// `{summary}`; default `{summary}`.
        #[arg(long, default_value = "{summary}")]
        format: String,
    },
    /// A window's card (S4.3): its name, its agents and their states, as many as fit, then
    /// `N more`; printed, as JSON, or as a tmux menu whose items go to the agents' panes.
    Card(card::CardArgs),
    /// The agents panel (a TUI; made for `tmux display-popup -E`).
    Panel {
        /// The pane the panel was opened from (default `$TMUX_PANE`): its card is raised.
        #[arg(long)]
        origin: Option<crate::ids::PaneId>,
        /// Where view options are saved (default `$XDG_STATE_HOME/thinkterm/panel.json`).
        #[arg(long)]
        options: Option<PathBuf>,
    },
    /// Send a status report (OSC 7501) or THINKTERM_AGENT from a shell or script.
    Report(ReportCmd),
    /// Why a pane (or a saved screen) has its state.
    Explain(ExplainArgs),
    /// Detection rules.
    Rules {
        /// What to do with them.
        #[command(subcommand)]
        action: RulesAction,
    },
    /// Join stdin and stdout to this machine's daemon socket (what another machine's sidecar
    /// runs over ssh: `ssh HOST thinkterm-sidecar bridge`).
    Bridge {
        /// Start the daemon first (detached) when none runs and a tmux server does.
        #[arg(long)]
        start: bool,
    },
    /// Connected machines: list them, or connect one more to the running daemon.
    Machines {
        /// What to do (default: list).
        #[command(subcommand)]
        action: Option<crate::remote::commands::MachinesAction>,
    },
    /// Check everything a first run depends on, for this tmux server, and say how to fix each
    /// miss (exit 1 when something is wrong).
    Doctor {
        /// JSON instead of text (`docs/schema.md`).
        #[arg(long)]
        json: bool,
    },
    /// Give Claude Code and Codex a skill and a session-start hook for driving the other panes
    /// (run by the person; detection never needs it).
    Skill {
        /// What to do.
        #[command(subcommand)]
        action: crate::skill::SkillAction,
    },
    /// Print shell completions for SHELL (generated from this command line).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), or write it and one page per subcommand into a folder.
    Man {
        /// Write `thinkterm-sidecar.1` and `thinkterm-sidecar-SUBCOMMAND.1` here.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
}

/// `rules` subcommands.
#[derive(Debug, Subcommand)]
pub enum RulesAction {
    /// Reload rules and config in the running daemon.
    Reload,
    /// Every known agent: mark, id, name, source, version, rule count, how it is supported.
    List,
    /// One agent's rules and the override file that would replace them.
    Explain {
        /// Agent id or alias.
        id: String,
    },
    /// Validate rule files (exit 1 with `file:line: reason` on failure).
    Check {
        /// Files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// `explain` arguments: a live pane, or a screen file.
#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// A pane (`%3`, or `MACHINE:%3`) of the running daemon.
    #[arg(conflicts_with = "file")]
    pub pane: Option<crate::ids::PaneTarget>,
    /// With a pane: save its screen, title, process and verdict as a fixture in this folder
    /// (`NNN-<state>.txt` and `.json`, the format of `tests/fixtures/agents`).
    #[arg(long, requires = "pane")]
    pub save: Option<PathBuf>,
    /// A screen saved with `capture-pane -p -J` (or by `--save`: the `.json` beside it gives
    /// the agent and title when they are not given).
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// The agent whose rules apply (with `--file`).
    #[arg(long)]
    pub agent: Option<String>,
    /// The title the program sent (with `--file`).
    #[arg(long)]
    pub title: Option<String>,
    /// The OSC 9;4 payload the program sent (with `--file`).
    #[arg(long)]
    pub progress: Option<String>,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

impl Cli {
    /// The tmux server the user picked.
    pub fn server(&self) -> ServerChoice {
        if let Some(p) = &self.socket_path {
            ServerChoice::Path(p.clone())
        } else if let Some(n) = &self.socket_name {
            ServerChoice::Name(n.clone())
        } else {
            ServerChoice::Default
        }
    }

    /// The daemon socket for the picked server.
    pub fn daemon_socket(&self) -> PathBuf {
        socket_path(&ServerAddress::resolve(&self.server()))
    }
}

/// Connects to the daemon, with a message that says how to start it when it is not running.
pub async fn connect(cli: &Cli) -> anyhow::Result<Client> {
    let sock = cli.daemon_socket();
    Client::connect(&sock).await.map_err(|e| {
        let addr = ServerAddress::resolve(&cli.server());
        anyhow::anyhow!(
            "no thinkterm-sidecar daemon for the tmux server at {} ({}: {e}); start one with `thinkterm-sidecar run`",
            addr.socket.display(),
            sock.display()
        )
    })
}
