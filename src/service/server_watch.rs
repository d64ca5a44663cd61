//! `--exit-with-server`: the daemon ends when the tmux server it was started for ends, instead
//! of waiting for the next server on that socket. The server's pid is asked once at start
//! (`display-message -p '#{pid}'`), then watched through a pidfd, which becomes readable when
//! that process exits: no timer, no polling, and a pid reused later cannot fool it. The watch
//! then sends this process SIGTERM, so the daemon leaves through its usual shutdown (options and
//! hooks cleared if tmux still answers, done marks written).

use std::path::Path;
use std::process::{Command, Stdio};

use crate::tmux::server::ServerAddress;

/// The pid of the tmux server at `addr`, asked with one `tmux` command.
pub fn server_pid(tmux: &Path, addr: &ServerAddress) -> anyhow::Result<u32> {
    let out = Command::new(tmux)
        .args(addr.tmux_args())
        .args(["display-message", "-p", "#{pid}"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run {}: {e}", tmux.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    match text.trim().parse() {
        Ok(pid) if out.status.success() => Ok(pid),
        _ => anyhow::bail!(
            "--exit-with-server: no tmux server answers at {} ({})",
            addr.socket.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    }
}

/// Waits until process `pid` has exited.
pub async fn wait_exit(pid: u32) -> std::io::Result<()> {
    use rustix::process::{pidfd_open, Pid, PidfdFlags};
    let pid = Pid::from_raw(pid as i32)
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "pid 0"))?;
    let fd = match pidfd_open(pid, PidfdFlags::NONBLOCK) {
        Ok(fd) => fd,
        // Already gone.
        Err(rustix::io::Errno::SRCH) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    // As in `crate::timer`: tokio's unchecked pipe reader is a registered, non-blocking,
    // readable descriptor and nothing more, without an `unsafe` registration; a pidfd turns
    // readable when its process exits.
    let fd = tokio::net::unix::pipe::Receiver::from_owned_fd_unchecked(fd)?;
    fd.readable().await
}

/// Starts the watch (inside the runtime): when the server at `addr` exits, this process gets
/// SIGTERM. Fails when no server answers now.
pub fn exit_with_server(tmux: &Path, addr: &ServerAddress) -> anyhow::Result<()> {
    let pid = server_pid(tmux, addr)?;
    let addr = addr.clone();
    tokio::spawn(async move {
        if let Err(e) = wait_exit(pid).await {
            // No pidfd (a kernel before 5.3): look at the socket every 2 s instead.
            tracing::warn!(
                "cannot watch the tmux server's process {pid} ({e}); polling its socket"
            );
            while addr.is_alive() {
                tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            }
        }
        tracing::info!(
            "the tmux server at {} (pid {pid}) exited: stopping (--exit-with-server)",
            addr.socket.display()
        );
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::TERM);
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waits_for_a_real_process_to_exit() {
        let mut child = Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep starts");
        let pid = child.id();
        let waiting = tokio::spawn(wait_exit(pid));
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        child.kill().expect("kill");
        // Still a zombie until reaped: a pidfd is readable as soon as the process exits.
        tokio::time::timeout(std::time::Duration::from_secs(10), waiting)
            .await
            .expect("woken within the deadline")
            .expect("task")
            .expect("watched");
        let _ = child.wait();
        // Reaped: nothing left to wait for.
        wait_exit(pid).await.expect("gone already");
    }
}
