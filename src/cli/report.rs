//! `report`: a program's status report or `THINKTERM_AGENT` value, written to its terminal.

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
