//! `thinkterm-sidecar bridge`: joins this process's stdin and stdout to the socket of the daemon
//! for the chosen tmux server (the pattern of `docker system dial-stdio`), so that any command
//! transport — `ssh host thinkterm-sidecar bridge`, `kubectl exec`, `docker exec` — reaches the
//! same JSON-lines protocol as the local CLI and panel. Nothing new listens on any port.

use std::time::Duration;

use anyhow::Context as _;
use tokio::io::AsyncWriteExt as _;
use tokio::net::UnixStream;

use crate::tmux::server::ServerAddress;

/// How long `--start` waits for the daemon it started to answer.
pub const START_WAIT: Duration = Duration::from_secs(10);

/// Why the bridge could not be made.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// No daemon answers on the socket, and none was to be started.
    #[error(
        "no thinkterm-sidecar daemon for the tmux server at {server} (socket {socket}); start one with `thinkterm-sidecar run`, or pass --start"
    )]
    NoDaemon {
        /// The tmux server.
        server: String,
        /// The socket looked at.
        socket: String,
    },
    /// `--start`, but no tmux server runs there to start a daemon for.
    #[error("no tmux server at {0}: nothing to start a daemon for")]
    NoServer(String),
}

/// Connects to the daemon of `addr`, starting it first with `start` when asked and needed.
async fn connect(
    addr: &ServerAddress,
    start: Option<&dyn Fn() -> anyhow::Result<()>>,
) -> anyhow::Result<UnixStream> {
    let sock = crate::ipc::socket_path(addr);
    if let Ok(s) = UnixStream::connect(&sock).await {
        return Ok(s);
    }
    let Some(start) = start else {
        return Err(BridgeError::NoDaemon {
            server: addr.socket.display().to_string(),
            socket: sock.display().to_string(),
        }
        .into());
    };
    if !addr.is_alive() {
        return Err(BridgeError::NoServer(addr.socket.display().to_string()).into());
    }
    start().context("starting the daemon")?;
    let deadline = tokio::time::Instant::now() + START_WAIT;
    loop {
        if let Ok(s) = UnixStream::connect(&sock).await {
            return Ok(s);
        }
        if tokio::time::Instant::now() >= deadline {
            anyhow::bail!(
                "the daemon started for {} did not answer within {START_WAIT:?} (see its log in {})",
                addr.socket.display(),
                crate::paths::state_dir().display()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Copies stdin to the daemon and the daemon to stdout until either side ends.
pub async fn run(
    addr: &ServerAddress,
    start: Option<&dyn Fn() -> anyhow::Result<()>>,
) -> anyhow::Result<()> {
    let stream = connect(addr, start).await?;
    let (mut from_daemon, mut to_daemon) = stream.into_split();
    let mut stdin = tokio::io::stdin();
    let mut stdout = tokio::io::stdout();
    let up = async {
        let r = tokio::io::copy(&mut stdin, &mut to_daemon).await;
        let _ = to_daemon.shutdown().await;
        r
    };
    let down = async {
        let r = tokio::io::copy(&mut from_daemon, &mut stdout).await;
        let _ = stdout.flush().await;
        r
    };
    // The far end closing its input ends the bridge (ssh went away); the daemon closing the
    // socket ends it too (it stopped).
    tokio::select! {
        r = up => { r.context("reading stdin")?; }
        r = down => { r.context("writing stdout")?; }
    }
    Ok(())
}
