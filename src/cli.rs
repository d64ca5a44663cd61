//! The command line: clap definitions and the small clients that talk to the daemon.
//! Glue only: meaning lives in the library modules.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::ipc::schema::{PaneRow, Reply, Request};
use crate::ipc::{socket_path, Client};
use crate::tmux::server::{ServerAddress, ServerChoice};

pub mod card;
pub mod drive;
mod screen_file;

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

/// `agents`.
pub async fn agents(
    cli: &Cli,
    json: bool,
    attention: bool,
    machine: Option<&str>,
) -> anyhow::Result<()> {
    let mut c = connect(cli).await?;
    let reply = c.request(&Request::Agents).await?;
    let Reply::Snapshot {
        schema,
        mut panes,
        mut windows,
        machines,
        clients,
    } = reply
    else {
        anyhow::bail!("unexpected reply from the daemon: {reply:?}");
    };
    if let Some(m) = machine {
        if !machines.is_empty() && !machines.iter().any(|r| r.name == m) {
            anyhow::bail!("no machine named {m:?}");
        }
        panes.retain(|p| p.machine.as_deref() == Some(m));
        windows.retain(|w| w.machine.as_deref() == Some(m));
    }
    if attention {
        let mut ws: Vec<_> = windows
            .into_iter()
            .filter(|w| {
                w.mark < crate::ipc::schema::WindowMark::Running
                    || w.mark == crate::ipc::schema::WindowMark::Done
            })
            .collect();
        ws.sort_by_key(|w| (w.mark, std::cmp::Reverse(w.since_ms)));
        if json {
            println!(
                "{}",
                serde_json::to_string_pretty(
                    &serde_json::json!({ "schema": schema, "windows": ws, "machines": machines })
                )?
            );
        } else {
            for w in ws {
                println!(
                    "{:<9} {}:{} {}  {}",
                    w.mark.as_str(),
                    w.session_name,
                    w.window_index,
                    w.window_name,
                    w.message.unwrap_or_default()
                );
            }
        }
        return Ok(());
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "schema": schema, "panes": panes, "windows": windows, "machines": machines,
                "clients": clients
            }))?
        );
    } else {
        // The MACHINE column once there is more than this computer to tell apart.
        let local = machines.iter().find(|m| m.local).map(|m| m.name.as_str());
        print!("{}", table(&panes, machines.len() > 1, local));
        for m in machines.iter().filter(|m| !m.reachable) {
            println!(
                "# {}: unreachable ({})",
                m.name,
                m.reason.as_deref().unwrap_or("no answer")
            );
        }
    }
    Ok(())
}

fn table(panes: &[PaneRow], machines: bool, local: Option<&str>) -> String {
    let head = format!(
        "{:<16} {:<20} {:<5} {:<14} {:<10} {:<8}\n",
        "SESSION", "WINDOW", "PANE", "PROCESS", "AGENT", "STATE"
    );
    let mut out = if machines {
        format!("{:<12} {head}", "MACHINE")
    } else {
        head
    };
    for p in panes {
        if machines {
            out.push_str(&format!(
                "{:<12} ",
                trunc(p.machine.as_deref().unwrap_or("-"), 12)
            ));
        }
        let window = format!("{}:{}", p.window_index, p.window_name);
        let process = if p.process_less {
            format!("{} (remote)", p.fg_process.clone().unwrap_or_default())
        } else {
            p.fg_process
                .clone()
                .unwrap_or_else(|| p.current_command.clone())
        };
        out.push_str(&format!(
            "{:<16} {:<20} {:<5} {:<14} {:<10} {:<8}\n",
            trunc(&p.session_name, 16),
            trunc(&window, 20),
            p.pane.to_string(),
            trunc(&process, 14),
            p.agent.as_deref().unwrap_or("-"),
            state_cell(p),
        ));
    }
    for p in panes.iter().filter(|p| p.unrecognised) {
        let name = match p.machine.as_deref() {
            Some(m) if Some(m) != local => format!("{m}:{}", p.pane),
            _ => p.pane.to_string(),
        };
        out.push_str(&format!(
            "# {name}: * unrecognised, its rules do not match the screen (`thinkterm-sidecar explain {name}`)\n"
        ));
    }
    out
}

/// The STATE cell: the state, with `*` when the drift alarm says the rules no longer recognise
/// the screen (the state then comes from the fallback).
fn state_cell(p: &PaneRow) -> String {
    let state = p.state.map(|s| s.as_str()).unwrap_or("unknown");
    if p.unrecognised {
        format!("{state}*")
    } else {
        state.to_string()
    }
}

fn trunc(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// `events`.
pub async fn events(cli: &Cli, json: bool) -> anyhow::Result<()> {
    let mut c = connect(cli).await?;
    // This computer's name: its events are printed without it.
    let local = match c.request(&Request::Machines).await {
        Ok(Reply::Machines { machines }) => machines.into_iter().find(|m| m.local).map(|m| m.name),
        _ => None,
    };
    c.send(&Request::Events).await?;
    while let Some(reply) = c.next().await? {
        if let Reply::Machine(m) = &reply {
            if json {
                println!("{}", serde_json::to_string(&reply)?);
            } else if m.reachable {
                println!("# {} is reachable", m.name);
            } else {
                println!(
                    "# {} is unreachable: {}",
                    m.name,
                    m.reason.as_deref().unwrap_or("no answer")
                );
            }
            continue;
        }
        if let Reply::Lagged { dropped } = reply {
            // The stream fell behind: say so, and print what holds now (the snapshot that
            // follows), so that a reader never acts on a silent gap.
            if json {
                println!("{}", serde_json::to_string(&reply)?);
            } else {
                println!("# {dropped} events dropped: this reader was too slow");
            }
            continue;
        }
        if let Reply::Snapshot { .. } = reply {
            if json {
                println!("{}", serde_json::to_string(&reply)?);
            }
            continue;
        }
        if let Reply::Event(e) = reply {
            if json {
                println!("{}", serde_json::to_string(&e)?);
            } else {
                let st = |s: Option<crate::state::AgentState>| {
                    s.map(|s| s.as_str()).unwrap_or("unknown")
                };
                let machine = match &e.machine {
                    Some(m) if local.as_ref() != Some(m) => format!("{m}/"),
                    _ => String::new(),
                };
                println!(
                    "{} {machine}{}:{} {} {} {} -> {}  {}",
                    e.time_ms,
                    e.session_name,
                    e.window_name,
                    e.pane,
                    e.agent.as_deref().unwrap_or("-"),
                    st(e.old),
                    st(e.new),
                    e.message.unwrap_or_default()
                );
            }
        }
    }
    Ok(())
}

/// `rules reload`.
pub async fn rules_reload(cli: &Cli) -> anyhow::Result<()> {
    let mut c = connect(cli).await?;
    match c.request(&Request::Reload).await? {
        Reply::Done { message } => {
            println!("{message}");
            Ok(())
        }
        Reply::Error { message } => anyhow::bail!(message),
        other => anyhow::bail!("unexpected reply: {other:?}"),
    }
}

/// `rules list|explain|check` (local: the rules of this machine).
pub fn rules_local(action: &RulesAction) -> anyhow::Result<i32> {
    use crate::rules::{render, Catalog};
    let dir = crate::paths::rules_dir();
    let report = Catalog::load(&dir);
    for r in &report.rejected {
        for reason in &r.reasons {
            eprintln!("warning: rejected: {reason}");
        }
    }
    match action {
        RulesAction::List => {
            print!(
                "{}",
                render::render_list(&report.catalog, &render::default_command_dirs())
            );
            Ok(0)
        }
        RulesAction::Explain { id } => {
            match render::render_rules_explain(&report.catalog, id, &dir) {
                Some(text) => {
                    print!("{text}");
                    Ok(0)
                }
                None => anyhow::bail!("unknown agent {id:?} (see `thinkterm-sidecar rules list`)"),
            }
        }
        RulesAction::Check { files } => {
            let (text, ok) = render::render_check(files);
            print!("{text}");
            Ok(if ok { 0 } else { 1 })
        }
        RulesAction::Reload => Ok(0),
    }
}

/// `explain`.
pub async fn explain(cli: &Cli, args: &ExplainArgs) -> anyhow::Result<()> {
    if let Some(file) = &args.file {
        return screen_file::explain_file(args, file);
    }
    let Some(pane) = args.pane.clone() else {
        anyhow::bail!(
            "give a pane (`explain %3`) or a screen (`explain --file SCREEN.txt --agent ID`)"
        );
    };
    let mut c = connect(cli).await?;
    let explain = Request::Explain {
        pane: pane.pane,
        machine: pane.machine.clone(),
    };
    match c.request(&explain).await? {
        Reply::Value { value } => {
            if let Some(dir) = &args.save {
                let (txt, json) = screen_file::save_fixture(dir, pane.pane, &value)?;
                eprintln!("saved {} and {}", txt.display(), json.display());
            }
            if args.json {
                println!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                println!(
                    "pane {pane}: agent {}{}, state {}",
                    value["agent"].as_str().unwrap_or("-"),
                    value["agent_version"]
                        .as_str()
                        .map(|v| format!(" {v}"))
                        .unwrap_or_default(),
                    value["state"].as_str().unwrap_or("unknown")
                );
                if let Some(why) = value["unrecognised_reason"].as_str() {
                    println!("unrecognised: {why}");
                }
                if let Some(text) = value["explanation_text"].as_str() {
                    print!("{text}");
                }
            }
            Ok(())
        }
        Reply::Error { message } => anyhow::bail!(message),
        other => anyhow::bail!("unexpected reply: {other:?}"),
    }
}

/// `report` arguments.
#[derive(Debug, clap::Args)]
pub struct ReportCmd {
    /// `working`, `blocked`, `idle`, `done`, `error` or `clear` (with `--var`: working, idle, blocked).
    #[arg(long)]
    pub state: String,
    /// What the program does or did (one line).
    #[arg(long)]
    pub msg: Option<String>,
    /// The program's short name.
    #[arg(long)]
    pub app: Option<String>,
    /// Record id path (`build/test`) for subtasks.
    #[arg(long)]
    pub id: Option<String>,
    /// Progress 0-100 (with working or blocked).
    #[arg(long)]
    pub progress: Option<u8>,
    /// Heading.
    #[arg(long)]
    pub title: Option<String>,
    /// With blocked: `permission`, `question` or `auth`.
    #[arg(long)]
    pub kind: Option<String>,
    /// Send THINKTERM_AGENT (S8) instead of a status report.
    #[arg(long)]
    pub var: bool,
    /// With `--var`: the agent id.
    #[arg(long, requires = "var")]
    pub agent: Option<String>,
    /// With `--var`: send time, `now` or unix seconds.
    #[arg(long, requires = "var")]
    pub ts: Option<String>,
    /// Wrap in tmux passthrough (for a terminal outside tmux that understands the sequence).
    #[arg(long)]
    pub passthrough: bool,
    /// Write to standard output instead of /dev/tty.
    #[arg(long)]
    pub stdout: bool,
}

/// `report`: builds the sequence with the same limits the daemon applies and writes it.
pub fn report(args: &ReportCmd) -> anyhow::Result<()> {
    use crate::osc::encode;
    use std::io::Write;
    let seq = if args.var {
        let agent = args
            .agent
            .as_deref()
            .ok_or_else(|| anyhow::anyhow!("--var needs --agent NAME"))?;
        let state = match args.state.as_str() {
            "working" => crate::state::AgentState::Working,
            "idle" => crate::state::AgentState::Idle,
            "blocked" => crate::state::AgentState::Blocked,
            other => anyhow::bail!("--var --state must be working, idle or blocked, not {other:?}"),
        };
        let ts =
            match args.ts.as_deref() {
                None => None,
                Some("now") => Some(crate::clock::unix_s()),
                Some(n) => Some(n.parse().map_err(|_| {
                    anyhow::anyhow!("--ts must be `now` or unix seconds, not {n:?}")
                })?),
            };
        encode::user_var(agent, state, ts).map_err(|e| anyhow::anyhow!("{e}"))?
    } else {
        encode::status_report(&encode::ReportArgs {
            state: args.state.clone(),
            msg: args.msg.clone(),
            app: args.app.clone(),
            id: args.id.clone(),
            progress: args.progress,
            title: args.title.clone(),
            kind: args.kind.clone(),
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?
    };
    let seq = if args.passthrough {
        encode::tmux_passthrough(&seq)
    } else {
        seq
    };
    if args.stdout {
        std::io::stdout().write_all(&seq)?;
        return Ok(());
    }
    let mut tty = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/tty")
        .map_err(|e| {
            anyhow::anyhow!("cannot open /dev/tty: {e} (use --stdout to write elsewhere)")
        })?;
    tty.write_all(&seq)?;
    Ok(())
}

/// `focus`.
pub async fn focus(
    cli: &Cli,
    pane: crate::ids::PaneTarget,
    client: Option<String>,
) -> anyhow::Result<()> {
    let mut c = connect(cli).await?;
    let focus = Request::Focus {
        pane: pane.pane,
        client,
        machine: pane.machine,
    };
    match c.request(&focus).await? {
        Reply::Done { message } => {
            println!("{message}");
            Ok(())
        }
        Reply::Error { message } => anyhow::bail!(message),
        other => anyhow::bail!("unexpected reply: {other:?}"),
    }
}

/// `notify`: a notification about a pane.
pub async fn notify(
    cli: &Cli,
    text: &[String],
    title: Option<String>,
    pane: Option<crate::ids::PaneTarget>,
) -> anyhow::Result<()> {
    let pane = match pane {
        Some(p) => p,
        None => std::env::var("TMUX_PANE")
            .ok()
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("name the pane with --pane %N (not inside tmux)"))?,
    };
    let mut c = connect(cli).await?;
    let ask = Request::Notify {
        pane: pane.pane,
        machine: pane.machine,
        title,
        body: text.join(" "),
    };
    match c.request(&ask).await? {
        Reply::Done { .. } => Ok(()),
        Reply::Error { message } => anyhow::bail!(message),
        other => anyhow::bail!("unexpected reply: {other:?}"),
    }
}

/// `status`: prints one line; prints nothing (and succeeds) when no daemon runs, so a status
/// bar stays clean.
pub async fn status(cli: &Cli, format: &str) -> anyhow::Result<()> {
    use crate::ipc::schema::WindowMark;
    let Ok(mut c) = Client::connect(&cli.daemon_socket()).await else {
        return Ok(());
    };
    let Reply::Snapshot { windows, .. } = c.request(&Request::Agents).await? else {
        return Ok(());
    };
    let count = |m: WindowMark| windows.iter().filter(|w| w.mark == m).count().to_string();
    let summary = crate::thread::icon::summary(windows.iter().map(|w| w.mark));
    let out = format
        .replace("{error}", &count(WindowMark::Error))
        .replace("{attention}", &count(WindowMark::Attention))
        .replace("{running}", &count(WindowMark::Running))
        .replace("{done}", &count(WindowMark::Done))
        .replace("{idle}", &count(WindowMark::Idle))
        .replace("{summary}", &summary);
    println!("{out}");
    Ok(())
}
