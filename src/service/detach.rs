//! Starting a long-lived process of ours in the background, at most once per socket: the
//! daemon (`run --detach`), and anything else that serves a unix socket the same way (the
//! remote bridge reuses [`start`]).
//!
//! Once: a process that answers on the socket means "already running"; concurrent starters are
//! serialized by an `flock` on `SOCKET.start.lock` held until the new process answers (or
//! failed), so two `source-file` of the plugin in a row start one daemon. The started process
//! inherits no terminal: standard input, output and error are `/dev/null` (it logs to its own
//! file), and it calls [`become_session_leader`] first, so closing the terminal or the tmux job
//! that started it does not signal it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What to start.
#[derive(Clone, Debug)]
pub struct Detach {
    /// What to call it in messages (`thinkterm-sidecar daemon`).
    pub what: &'static str,
    /// Arguments for this executable (re-run): they must make it call
    /// [`become_session_leader`], log to `log` and bind `socket`.
    pub args: Vec<OsString>,
    /// The unix socket it answers on once ready.
    pub socket: PathBuf,
    /// Its log file (named in messages).
    pub log: PathBuf,
    /// How long to wait for it to answer.
    pub ready_within: Duration,
}

/// What [`start`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Started {
    /// Something already answered on the socket: nothing was started.
    Already,
    /// A new process, answering now.
    New {
        /// Its pid.
        pid: u32,
    },
}

/// Whether a process accepts connections on `socket`.
pub fn answers(socket: &Path) -> bool {
    std::os::unix::net::UnixStream::connect(socket).is_ok()
}

/// Starts `d` in the background unless something answers on its socket; returns once the new
/// process answers, or fails saying why (it exited: with the end of its log; it did not answer
/// in time).
pub fn start(d: &Detach) -> anyhow::Result<Started> {
    if answers(&d.socket) {
        return Ok(Started::Already);
    }
    if let Some(dir) = d.socket.parent() {
        crate::paths::ensure_private_dir(dir)?;
    }
    let lock_path = PathBuf::from(format!("{}.start.lock", d.socket.display()));
    let _lock = lock(&lock_path, d.ready_within)?;
    if answers(&d.socket) {
        return Ok(Started::Already);
    }
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot find this program's own path: {e}"))?;
    let mut child = Command::new(&exe)
        .args(&d.args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .env_remove("JOURNAL_STREAM")
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot start {}: {e}", exe.display()))?;
    let pid = child.id();
    let deadline = Instant::now() + d.ready_within;
    loop {
        if answers(&d.socket) {
            return Ok(Started::New { pid });
        }
        if let Some(status) = child.try_wait()? {
            if answers(&d.socket) {
                // Another starter (not serialized by our lock: `run` in a terminal) won.
                return Ok(Started::Already);
            }
            anyhow::bail!(
                "the {} exited at once ({status}); {}",
                d.what,
                log_tail(&d.log)
            );
        }
        if Instant::now() > deadline {
            anyhow::bail!(
                "the {} (pid {pid}) did not answer on {} within {:?}; see {}",
                d.what,
                d.socket.display(),
                d.ready_within,
                d.log.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Makes this process the leader of a new session (no controlling terminal, its own process
/// group): called first by a process [`start`] started. Already a leader: nothing to do.
pub fn become_session_leader() {
    let _ = rustix::process::setsid();
}

/// Takes the exclusive lock on `path` (created 0600), waiting at most `within`.
fn lock(path: &Path, within: Duration) -> anyhow::Result<std::fs::File> {
    use rustix::fs::{flock, FlockOperation};
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let deadline = Instant::now() + within;
    loop {
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(file),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => anyhow::bail!(
                "cannot take {} (another start holds it for more than {within:?}?): {e}",
                path.display()
            ),
        }
    }
}

/// The last lines of a log, for an error message.
fn log_tail(log: &Path) -> String {
    match std::fs::read_to_string(log) {
        Ok(text) if !text.trim().is_empty() => {
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(3)..].join("\n  ");
            format!("{} ends with:\n  {tail}", log.display())
        }
        _ => format!("nothing in {}", log.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_serializes_and_is_released_on_drop() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.start.lock");
        let held = lock(&path, Duration::from_millis(0)).expect("first");
        let e = lock(&path, Duration::from_millis(60)).expect_err("held");
        assert!(e.to_string().contains("x.start.lock"), "{e}");
        drop(held);
        // Not at once: a test beside this one that forks (to run a program) in the moment the
        // lock is held gives its child a copy of the descriptor, which holds the lock until the
        // child execs (the descriptor is close-on-exec). Seen with both cores busy.
        lock(&path, Duration::from_secs(5)).expect("free again");
    }

    #[test]
    fn a_process_that_exits_at_once_is_reported_with_its_log() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("d.log");
        std::fs::write(&log, "one\ntwo\nthree\nfour: the reason\n").expect("write");
        // The test binary itself, asked for a test that does not exist: it exits at once.
        let d = Detach {
            what: "test process",
            args: vec!["--exact".into(), "no_such_test_here".into()],
            socket: dir.path().join("s.sock"),
            log: log.clone(),
            ready_within: Duration::from_secs(10),
        };
        let e = start(&d).expect_err("exits");
        let msg = e.to_string();
        assert!(msg.contains("the test process exited at once"), "{msg}");
        assert!(
            msg.contains("four: the reason") && !msg.contains("one"),
            "{msg}"
        );
    }
}
