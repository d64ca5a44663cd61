//! Full foreground probes, off the core loop. A probe reads `/proc/PID/cmdline` of each process
//! of a pane's job, and that read takes the target's memory-map lock: a process stuck in the
//! kernel with that lock held (a hung NFS page fault, a huge `mmap`) blocks the reader. So the
//! reads happen on a thread of their own; the daemon asks ([`Prober::request`]) and takes the
//! answer later as an event, and its loop never waits for `/proc`. The cheap look a pane gets
//! after output (its first process's `stat` and children, and its job leader's `stat`, which
//! take no such lock) stays in the loop.
//!
//! A second thread finds the version of each process of a probed job
//! ([`crate::process::version`]: a `package.json` beside its script or binary, else, for the
//! agents' own commands, their `--version`, once per installed binary, up to 3 s each), so
//! neither read nor run happens on the loop, and a slow `--version` never holds a probe: the
//! probe's answer goes out at once and the versions follow as an answer of their own.
//!
//! Owns: which panes have a probe outstanding (a pane is probed once at a time; asking again
//! while one runs is a no-op, and the answer reflects the moment it ran), and the re-probes of
//! answers that tmux contradicts ([`Prober::disagreed`]).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::ids::PaneId;
use crate::process::foreground::{self, Foreground, Look};
use crate::process::identify::{IdentityTable, ProcInfo};
use crate::process::version::VersionCache;

/// Room for requests (one per pane at most, so the panes of a large server fit).
pub const QUEUE: usize = 4096;
/// A probe outstanding this long is reported as stuck (once).
pub const STUCK_AFTER: Duration = Duration::from_secs(5);

/// When a pane whose probe named another program than tmux's `pane_current_command` is probed
/// again, counted from each such answer; after the last, the periodic probe takes over. tmux
/// names a pane's program from the command it was given (`respawn-pane 'node x.js'` shows as
/// `node`) until the new process has the terminal, while the process can still be the shell
/// that `exec`s it: a probe in that moment sees the shell, and nothing else would say when the
/// `exec` happened (tmux's name does not change again).
pub const CONFIRM_AFTER: [Duration; 3] = [
    Duration::from_millis(50),
    Duration::from_millis(250),
    Duration::from_secs(1),
];

/// A pane being confirmed: the first process, how many re-probes were scheduled, the next one.
#[derive(Debug)]
struct Confirm {
    pid: u32,
    tries: usize,
    at: Option<Instant>,
}

/// One probe's answer.
#[derive(Debug)]
pub struct Probed {
    /// The pane.
    pub pane: PaneId,
    /// The pane's first process, as asked (an answer for an older process is dropped).
    pub pid: u32,
    /// Its foreground job.
    pub fg: Foreground,
    /// The cheap look taken just before the probe (later looks compare against it: a change
    /// between the two is probed again).
    pub look: Look,
}

/// What the probe threads send back.
#[derive(Debug)]
pub enum Answer {
    /// A probe's answer.
    Probed(Probed),
    /// The versions found for the processes of a probed job.
    Versions {
        /// The pane.
        pane: PaneId,
        /// Its first process, as probed.
        pid: u32,
        /// Version by process id.
        versions: Vec<(u32, String)>,
    },
}

/// The daemon's side of the probe thread.
#[derive(Debug)]
pub struct Prober {
    tx: mpsc::Sender<(PaneId, u32)>,
    /// Outstanding probes: when each was asked, and whether it was reported stuck.
    outstanding: HashMap<PaneId, (Instant, bool)>,
    /// Probes asked while one of the same pane was under way (with the pid asked for).
    again: HashMap<PaneId, u32>,
    /// Panes whose last answer tmux contradicted.
    confirm: HashMap<PaneId, Confirm>,
}

impl Prober {
    /// Starts the probe thread; answers come on the returned channel.
    pub fn start() -> std::io::Result<(Prober, mpsc::Receiver<Answer>)> {
        let (tx, mut rx) = mpsc::channel::<(PaneId, u32)>(QUEUE);
        let (out, answers) = mpsc::channel(QUEUE);
        let (jobs, mut job_rx) = mpsc::channel::<(PaneId, u32, Vec<ProcInfo>)>(QUEUE);
        let version_out = out.clone();
        std::thread::Builder::new()
            .name("thinkterm-version".into())
            .spawn(move || {
                // `--version` runs only for the seed agents' own command names.
                let commands = IdentityTable::builtin()
                    .specs()
                    .iter()
                    .flat_map(|s| s.process_names.iter().cloned())
                    .collect();
                let mut cache = VersionCache::new(commands);
                while let Some((pane, pid, procs)) = job_rx.blocking_recv() {
                    let versions: Vec<(u32, String)> = procs
                        .iter()
                        .filter_map(|p| cache.version_of(p).map(|v| (p.pid, v)))
                        .collect();
                    if versions.is_empty() {
                        continue;
                    }
                    let answer = Answer::Versions {
                        pane,
                        pid,
                        versions,
                    };
                    if version_out.blocking_send(answer).is_err() {
                        return;
                    }
                }
            })?;
        std::thread::Builder::new()
            .name("thinkterm-probe".into())
            .spawn(move || {
                while let Some((pane, pid)) = rx.blocking_recv() {
                    let look = foreground::look(pid);
                    let fg = foreground::probe(pid);
                    let procs = fg.procs.clone();
                    let probed = Probed {
                        pane,
                        pid,
                        fg,
                        look,
                    };
                    if out.blocking_send(Answer::Probed(probed)).is_err() {
                        return;
                    }
                    // Only now: the versions go on the same channel, so they always come after
                    // the answer that identifies the agent they belong to (sent first, a cached
                    // version could arrive before the identity and be dropped for good).
                    // Full: the versions of this job wait for the next probe.
                    let _ = jobs.try_send((pane, pid, procs));
                }
            })?;
        Ok((
            Prober {
                tx,
                outstanding: HashMap::new(),
                again: HashMap::new(),
                confirm: HashMap::new(),
            },
            answers,
        ))
    }

    /// Asks for a probe of `pane` (first process `pid`), unless one is outstanding.
    pub fn request(&mut self, pane: PaneId, pid: u32, now: Instant) {
        if self.outstanding.contains_key(&pane) {
            // The probe under way may have looked before what made this one wanted (a program
            // that execs a moment after it starts): ask again when it answers.
            self.again.insert(pane, pid);
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
        if let Some(pid) = self.again.remove(&pane) {
            self.request(pane, pid, Instant::now());
        }
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
        self.again.clear();
        self.confirm.clear();
    }

    /// The answer for `pane` (first process `pid`) named another program than tmux does: probe
    /// it again after the next step of [`CONFIRM_AFTER`], unless those are used up for this
    /// process.
    pub fn disagreed(&mut self, pane: PaneId, pid: u32, now: Instant) {
        let c = self.confirm.entry(pane).or_insert(Confirm {
            pid,
            tries: 0,
            at: None,
        });
        if c.pid != pid {
            *c = Confirm {
                pid,
                tries: 0,
                at: None,
            };
        }
        c.at = CONFIRM_AFTER.get(c.tries).map(|d| now + *d);
        c.tries += 1;
    }

    /// The answer for `pane` agreed with tmux, or tmux named a new program (a new budget of
    /// re-probes for the next disagreement).
    pub fn settled(&mut self, pane: PaneId) {
        self.confirm.remove(&pane);
    }

    /// When the next re-probe is due.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.confirm.values().filter_map(|c| c.at).min()
    }

    /// The panes whose re-probe is due at `now` (each comes once).
    pub fn due(&mut self, now: Instant) -> Vec<PaneId> {
        let mut out = Vec::new();
        for (pane, c) in &mut self.confirm {
            if c.at.is_some_and(|at| at <= now) {
                c.at = None;
                out.push(*pane);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_answer_tmux_contradicts_is_probed_again_a_few_times_then_left_to_the_periodic_probe(
    ) {
        let (mut p, _answers) = Prober::start().expect("thread");
        let t = Instant::now();
        let pane = PaneId(3);
        assert_eq!(p.next_deadline(), None);
        // Each contradicted answer schedules the next step, and only that one.
        let mut now = t;
        for step in CONFIRM_AFTER {
            p.disagreed(pane, 40, now);
            assert_eq!(p.next_deadline(), Some(now + step));
            assert!(p.due(now + step - Duration::from_millis(1)).is_empty());
            now += step;
            assert_eq!(p.due(now), vec![pane]);
            assert!(p.due(now).is_empty(), "once");
        }
        // Used up: no more for this process.
        p.disagreed(pane, 40, now);
        assert_eq!(p.next_deadline(), None);
        // A new process, or a new program named by tmux, starts again.
        p.disagreed(pane, 41, now);
        assert_eq!(p.next_deadline(), Some(now + CONFIRM_AFTER[0]));
        p.settled(pane);
        assert_eq!(p.next_deadline(), None);
        p.disagreed(pane, 41, now);
        assert_eq!(p.next_deadline(), Some(now + CONFIRM_AFTER[0]));
        p.reset();
        assert_eq!(p.next_deadline(), None);
    }

    #[tokio::test]
    async fn a_probe_is_answered_once_and_repeats_coalesce_into_one_more() {
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
        let Answer::Probed(a) = a else {
            panic!("a probe's answer first: {a:?}");
        };
        assert_eq!((a.pane, a.pid), (PaneId(1), me));
        // The repeats asked while it was under way make one more probe after it (the first may
        // have looked too early), and no more.
        p.request(PaneId(1), me, t);
        p.answered(a.pane);
        assert!(p.is_outstanding(PaneId(1)), "asked again");
        let b = loop {
            let b = tokio::time::timeout(Duration::from_secs(5), answers.recv())
                .await
                .expect("answered again")
                .expect("open");
            if let Answer::Probed(b) = b {
                break b;
            }
        };
        assert_eq!((b.pane, b.pid), (PaneId(1), me));
        p.answered(b.pane);
        assert!(!p.is_outstanding(PaneId(1)));
        // Only those two answers for the three requests.
        assert!(
            tokio::time::timeout(Duration::from_millis(200), answers.recv())
                .await
                .is_err()
        );
    }
}
