//! Running the daemon alongside tmux instead of in a terminal: started in the background for
//! one tmux server, at most once ([`detach`]), and tied to that server's life
//! ([`server_watch`]). The tmux plugin (`thinkterm.tmux`) runs
//! `thinkterm-sidecar -S SOCKET run --detach --exit-with-server`.

pub mod detach;
pub mod server_watch;

use std::ffi::OsString;
use std::time::Duration;

use crate::cli::Cli;
use crate::tmux::server::ServerAddress;

/// `run` arguments.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct RunArgs {
    /// Start the daemon in the background and return once it answers; start nothing when one
    /// already serves this tmux server. It logs to `$XDG_STATE_HOME/thinkterm/daemon-KEY.log`
    /// (rotated at 1 MiB, three old files kept).
    #[arg(long)]
    pub detach: bool,
    /// Exit when this tmux server exits instead of waiting for the next one (what the tmux
    /// plugin asks for). The server must be running.
    #[arg(long)]
    pub exit_with_server: bool,
    /// Internal: this process is the background daemon that `--detach` started.
    #[arg(long, hide = true)]
    pub detached_child: bool,
}

/// How long `run --detach` waits for the new daemon to answer on its socket.
pub const READY_WITHIN: Duration = Duration::from_secs(10);

/// Starts the daemon for the picked server in the background unless one already answers
/// (what `run --detach` and `bridge --start` do); prints nothing.
pub fn start_in_background(cli: &Cli, exit_with_server: bool) -> anyhow::Result<detach::Started> {
    let addr = ServerAddress::resolve(&cli.server());
    if exit_with_server && !addr.is_alive() {
        anyhow::bail!(
            "--exit-with-server: no tmux server is running at {}",
            addr.socket.display()
        );
    }
    let log = crate::logging::daemon_log_path(&addr.key());
    let mut child_args: Vec<OsString> = vec!["-S".into(), addr.socket.clone().into()];
    if let Some(c) = &cli.config {
        child_args.extend(["--config".into(), c.clone().into()]);
    }
    child_args.extend(["run".into(), "--detached-child".into()]);
    if exit_with_server {
        child_args.push("--exit-with-server".into());
    }
    let spec = detach::Detach {
        what: "thinkterm-sidecar daemon",
        args: child_args,
        socket: cli.daemon_socket(),
        log,
        ready_within: READY_WITHIN,
    };
    detach::start(&spec)
}

/// `run --detach`: starts the daemon for the picked server in the background unless one
/// already answers; prints what it did.
pub fn run_detached(cli: &Cli, args: &RunArgs) -> anyhow::Result<()> {
    let addr = ServerAddress::resolve(&cli.server());
    let socket = cli.daemon_socket();
    let log = crate::logging::daemon_log_path(&addr.key());
    match start_in_background(cli, args.exit_with_server)? {
        detach::Started::Already => println!(
            "a thinkterm-sidecar daemon already serves the tmux server at {} (socket {}); started nothing",
            addr.socket.display(),
            socket.display()
        ),
        detach::Started::New { pid } => println!(
            "started thinkterm-sidecar daemon (pid {pid}) for the tmux server at {}; log: {}",
            addr.socket.display(),
            log.display()
        ),
    }
    Ok(())
}
