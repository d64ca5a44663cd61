//! Full foreground probes, off the core loop. A probe reads `/proc/PID/cmdline` of each process
//! of a pane's job, and that read takes the target's memory-map lock: a process stuck in the
//! kernel with that lock held (a hung NFS page fault, a huge `mmap`) blocks the reader. So the
//! reads happen on a thread of their own; the daemon asks ([`Prober::request`]) and takes the
//! answer later as an event, and its loop never waits for `/proc`. The cheap look a pane gets on
//! output (its first process's `stat` and children, which take no such lock) stays in the loop.
//!
//! The same thread finds the version of each process of the job where that is cheap
//! ([`crate::process::version`]: a `package.json` beside its script or binary, else, for the
//! agents' own commands, their `--version`, once per installed binary), so neither read nor run
//! happens on the loop.
//!
//! Owns: which panes have a probe outstanding (a pane is probed once at a time; asking again
//! while one runs is a no-op, and the answer reflects the moment it ran).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::ids::PaneId;
use crate::process::foreground::{self, Foreground};
use crate::process::identify::IdentityTable;
use crate::process::version::VersionCache;

/// Room for requests (one per pane at most, so the panes of a large server fit).
pub const QUEUE: usize = 4096;
/// A probe outstanding this long is reported as stuck (once).
pub const STUCK_AFTER: Duration = Duration::from_secs(5);

/// One probe's answer.
#[derive(Debug)]
pub struct Probed {
    /// The pane.
    pub pane: PaneId,
    /// The pane's first process, as asked (an answer for an older process is dropped).
    pub pid: u32,
    /// Its foreground job.
    pub fg: Foreground,
    /// The children of its first process (the cheap look compares against these).
    pub children: String,
    /// The versions found for processes of the job, by pid.
    pub versions: Vec<(u32, String)>,
}

/// The daemon's side of the probe thread.
#[derive(Debug)]
pub struct Prober {
    tx: mpsc::Sender<(PaneId, u32)>,
    /// Outstanding probes: when each was asked, and whether it was reported stuck.
    outstanding: HashMap<PaneId, (Instant, bool)>,
}

impl Prober {
    /// Starts the probe thread; answers come on the returned channel.
    pub fn start() -> std::io::Result<(Prober, mpsc::Receiver<Probed>)> {
        let (tx, mut rx) = mpsc::channel::<(PaneId, u32)>(QUEUE);
        let (out, answers) = mpsc::channel(QUEUE);
        std::thread::Builder::new()
            .name("thinkterm-probe".into())
            .spawn(move || {
                // `--version` runs only for the seed agents' own command names.
                let commands = IdentityTable::builtin()
                    .specs()
                    .iter()
                    .flat_map(|s| s.process_names.iter().cloned())
                    .collect();
                let mut versions = VersionCache::new(commands);
                while let Some((pane, pid)) = rx.blocking_recv() {
                    let fg = foreground::probe(pid);
                    let found = fg
                        .procs
                        .iter()
                        .filter_map(|p| versions.version_of(p).map(|v| (p.pid, v)))
                        .collect();
                    let probed = Probed {
                        pane,
                        pid,
                        fg,
                        children: foreground::main_children(pid),
                        versions: found,
                    };
                    if out.blocking_send(probed).is_err() {
                        return;
                    }
                }
            })?;
        Ok((
            Prober {
                tx,
                outstanding: HashMap::new(),
            },
            answers,
        ))
    }

    /// Asks for a probe of `pane` (first process `pid`), unless one is outstanding.
    pub fn request(&mut self, pane: PaneId, pid: u32, now: Instant) {
        if self.outstanding.contains_key(&pane) {
            return;
        }
        match self.tx.try_send((pane, pid)) {
            Ok(()) => {
                self.outstanding.insert(pane, (now, false));
            }
            Err(e) => tracing::warn!(%pane, "foreground probe not queued: {e}"),
        }
    }

    /// An answer arrived for `pane`.
    pub fn answered(&mut self, pane: PaneId) {
        self.outstanding.remove(&pane);
    }

    /// Whether a probe of `pane` is outstanding.
    #[cfg(test)]
    fn is_outstanding(&self, pane: PaneId) -> bool {
        self.outstanding.contains_key(&pane)
    }

    /// Reports (once each) probes outstanding for longer than [`STUCK_AFTER`]: the probe
    /// thread is blocked reading `/proc` (later probes wait behind it).
    pub fn report_stuck(&mut self, now: Instant) {
        for (pane, (asked, reported)) in &mut self.outstanding {
            if !*reported && now.duration_since(*asked) >= STUCK_AFTER {
                *reported = true;
                tracing::warn!(%pane, "foreground probe stuck for {:?}: a process of this pane does not let /proc be read", now.duration_since(*asked));
            }
        }
    }

    /// Forgets everything outstanding (another tmux server; late answers are dropped by pid).
    pub fn reset(&mut self) {
        self.outstanding.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_probe_is_answered_once_and_repeats_coalesce() {
        let (mut p, mut answers) = Prober::start().expect("thread");
        let me = std::process::id();
        let t = Instant::now();
        p.request(PaneId(1), me, t);
        p.request(PaneId(1), me, t);
        assert!(p.is_outstanding(PaneId(1)));
        let a = tokio::time::timeout(Duration::from_secs(5), answers.recv())
            .await
            .expect("answered")
            .expect("open");
        assert_eq!((a.pane, a.pid), (PaneId(1), me));
        p.answered(a.pane);
        assert!(!p.is_outstanding(PaneId(1)));
        // Only one answer for the two requests.
        assert!(
            tokio::time::timeout(Duration::from_millis(200), answers.recv())
                .await
                .is_err()
        );
    }
}
