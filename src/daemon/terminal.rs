//! Terminal notifications on the daemon's side (issue 15): notes waiting for the person's
//! attached tmux client, and the moment each is written to that client's terminal.
//!
//! tmux has no command that writes raw bytes to a client, so the sequence goes straight to the
//! client's tty (`client_tty`, owned by this user), in one `write`. The kernel serialises
//! writers on a tty (one `write` call holds the tty's write lock to the end), so the sequence
//! can never be cut by tmux's output, nor tmux's by it — as long as it does not land between
//! two parts of one tmux sequence. That happens only when tmux's last write was partial (the
//! terminal reads slower than tmux draws) and tmux still holds the rest. So a note waits until
//! tmux has nothing left to write to that client:
//! - no pane of the client's current window wrote for [`QUIET`] (the sidecar reads every pane's
//!   output; a pane whose copy is paused in our control client counts as writing), and the
//!   client has shown that window for as long;
//! - then two `list-clients` at least [`QUIET`] apart: the same client on the same window, no
//!   key from it in the last second (copy mode and prompts are drawn by tmux without pane
//!   output), and `client_written` — the bytes tmux has written to that terminal — unchanged
//!   between them. A tmux still draining a backlog to a slow terminal (ssh on a slow link)
//!   writes more as the terminal reads, so an unchanged count means nothing is left. The
//!   status-line spinner holds its frames during that window ([`TerminalNotes::status_hold`]),
//!   or its redraws would move the count;
//! - then the tty must take writes now (`poll`), or the note waits again.
//!
//! A note that never finds such a moment is dropped after [`PATIENCE`], with one log line per
//! run of drops; at most [`QUEUE_MAX`] wait (the oldest go first), and at most [`PER_ROUND`]
//! are written at one moment, each in its own write. Terminals read a few hundred bytes in
//! microseconds: after a quiet [`QUIET`] the tty's buffer is empty, and a note (under 2 KiB)
//! is written whole. If it ever is not (a terminal that stopped reading with its buffer nearly
//! full), the rest follows at once, within [`FINISH_BUDGET`], so the terminal never holds half
//! a sequence — and it is logged.

use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags};
use rustix::fs::{fstat, open, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::core::Daemon;
use crate::clock::Now;
use crate::effects::notification::{self, NoteInput};
use crate::effects::terminal::{self, Setting, TerminalFacts};
use crate::ids::WindowId;
use crate::tmux::inventory::ClientInfo;

/// How long the client's window must have been still before a note is written.
pub const QUIET: Duration = Duration::from_millis(300);
/// How long a note may wait for a quiet moment.
pub const PATIENCE: Duration = Duration::from_secs(30);
/// Most notes waiting at once.
pub const QUEUE_MAX: usize = 32;
/// Most notes written at one quiet moment.
pub const PER_ROUND: usize = 4;
/// How long a partly written note may take to finish.
pub const FINISH_BUDGET: Duration = Duration::from_millis(200);
/// How long a confirming `list-clients` may take before the gate asks again.
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(2);
/// How long past a written-count window the spinner still holds (the second list's answer).
const CONFIRM_SLACK: Duration = Duration::from_millis(200);

/// One note waiting for the terminal.
#[derive(Debug)]
struct Waiting {
    title: String,
    body: String,
    since: Instant,
}

/// What is known of the chosen client and its window at a check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Look {
    /// The client's name.
    pub client: String,
    /// Its current window.
    pub window: WindowId,
    /// The last output of that window's panes.
    pub last_output: Option<Instant>,
    /// One of them has its copy paused in our control client (its output is not seen).
    pub paused: bool,
    /// What a client list read just now says (None: the list is older).
    pub fresh: Option<Fresh>,
}

/// What a client list read just now says of the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fresh {
    /// `client_activity`, unix seconds.
    pub activity: u64,
    /// The time now, unix seconds.
    pub unix_now: u64,
    /// `client_written`.
    pub written: u64,
}

/// What the gate says.
#[derive(Debug, PartialEq, Eq)]
pub enum Gate {
    /// Not yet (a deadline is set).
    Wait,
    /// Quiet so far: list the clients, then look again with [`Look::fresh`].
    Confirm,
    /// Write now.
    Write,
}

/// The owner of terminal notifications.
#[derive(Debug)]
pub struct TerminalNotes {
    setting: Setting,
    bell: bool,
    queue: VecDeque<Waiting>,
    next_id: u64,
    /// The client and window last looked at, and since when.
    watch: Option<(String, WindowId, Instant)>,
    /// A confirming client list is in flight, since.
    confirming: Option<Instant>,
    /// `client_written` of the client at the first fresh list of a still window, and when.
    baseline: Option<(String, u64, Instant)>,
    /// The spinner holds its frames until then.
    hold: Option<Instant>,
    /// When to look again.
    wake: Option<Instant>,
    /// Notes dropped since the last one written (logged once per run).
    dropped: u64,
    /// The environment of the last client process read (pid, variables).
    env: Option<(u32, Vec<(String, String)>)>,
    /// Notes written, for the log and tests.
    pub written: u64,
}

impl TerminalNotes {
    /// An owner with this config; `enabled`: notifications may be shown at all (S6.3, S6.4:
    /// the config's switch and `THINKTERM_DISABLE_SOUND`).
    pub fn new(setting: &str, bell: bool, enabled: bool) -> Self {
        TerminalNotes {
            setting: Self::effective(setting, enabled),
            bell,
            queue: VecDeque::new(),
            next_id: 0,
            watch: None,
            confirming: None,
            baseline: None,
            hold: None,
            wake: None,
            dropped: 0,
            env: None,
            written: 0,
        }
    }

    fn effective(setting: &str, enabled: bool) -> Setting {
        match Setting::parse(setting) {
            Some(s) if enabled => s,
            _ => Setting::Off,
        }
    }

    /// A reload.
    pub fn configure(&mut self, setting: &str, bell: bool, enabled: bool) {
        self.setting = Self::effective(setting, enabled);
        self.bell = bell;
        if self.setting == Setting::Off {
            self.queue.clear();
            self.wake = None;
        }
    }

    /// Whether notes go to terminals.
    pub fn is_on(&self) -> bool {
        self.setting != Setting::Off
    }

    /// Queues a note (nothing when off).
    pub fn queue(&mut self, now: Instant, title: String, body: String) {
        if !self.is_on() {
            return;
        }
        if self.queue.len() == QUEUE_MAX {
            self.queue.pop_front();
            self.dropped += 1;
        }
        self.queue.push_back(Waiting {
            title,
            body,
            since: now,
        });
        self.wake = Some(self.wake.map_or(now, |w| w.min(now)));
    }

    /// When to look again.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.wake
    }

    /// Until when the status-line spinner holds its frames (a note waits for tmux's writes to
    /// this client to stop).
    pub fn status_hold(&self) -> Option<Instant> {
        self.hold.filter(|_| !self.queue.is_empty())
    }

    /// Whether a confirming client list is awaited.
    #[cfg(test)]
    pub fn confirming(&self) -> bool {
        self.confirming.is_some()
    }

    /// Drops notes that waited [`PATIENCE`]; true when some wait still.
    pub fn expire(&mut self, now: Instant) -> bool {
        while self
            .queue
            .front()
            .is_some_and(|w| now.duration_since(w.since) >= PATIENCE)
        {
            self.queue.pop_front();
            self.dropped += 1;
        }
        if self.dropped > 0 && self.queue.is_empty() {
            tracing::warn!(
                dropped = self.dropped,
                "terminal notifications not written: the client's window was never still for \
                 {} ms within {} s, or no client was attached",
                QUIET.as_millis(),
                PATIENCE.as_secs()
            );
            self.dropped = 0;
        }
        if self.queue.is_empty() {
            self.wake = None;
            return false;
        }
        true
    }

    /// No client to write to: look again later.
    pub fn no_client(&mut self, now: Instant) {
        self.watch = None;
        self.wake = Some(now + QUIET);
    }

    /// The gate (see the module docs). Pure but for its own bookkeeping.
    pub fn gate(&mut self, now: Instant, look: &Look) -> Gate {
        let same = self
            .watch
            .as_ref()
            .is_some_and(|(c, w, _)| *c == look.client && *w == look.window);
        if !same {
            self.watch = Some((look.client.clone(), look.window, now));
        }
        let since = self.watch.as_ref().map_or(now, |(_, _, t)| *t);
        let quiet_from = look.last_output.map_or(since, |o| o.max(since));
        let later = |me: &mut Self, at: Instant| {
            me.confirming = None;
            me.baseline = None;
            me.hold = None;
            me.wake = Some(at);
            Gate::Wait
        };
        if look.paused {
            return later(self, now + QUIET);
        }
        if now < quiet_from + QUIET {
            return later(self, quiet_from + QUIET);
        }
        let Some(fresh) = look.fresh else {
            if self
                .confirming
                .is_some_and(|t| now.duration_since(t) < CONFIRM_TIMEOUT)
            {
                self.wake = Some(now + CONFIRM_TIMEOUT);
                return Gate::Wait;
            }
            self.confirming = Some(now);
            self.wake = Some(now + CONFIRM_TIMEOUT);
            self.hold.get_or_insert(now + QUIET + CONFIRM_SLACK);
            return Gate::Confirm;
        };
        self.confirming = None;
        if fresh.activity + 1 >= fresh.unix_now {
            return later(self, now + QUIET);
        }
        match &self.baseline {
            Some((c, w, at)) if *c == look.client && *w == fresh.written => {
                if now.duration_since(*at) >= QUIET {
                    self.baseline = None;
                    self.hold = None;
                    return Gate::Write;
                }
                self.wake = Some(*at + QUIET);
                Gate::Wait
            }
            _ => {
                self.baseline = Some((look.client.clone(), fresh.written, now));
                self.hold = Some(now + QUIET + CONFIRM_SLACK);
                self.wake = Some(now + QUIET);
                Gate::Wait
            }
        }
    }

    /// The route a client's notes would take (None: off); reads the client's environment.
    pub fn route_for(&self, client: &ClientInfo) -> Option<terminal::Route> {
        let env = std::fs::read(format!("/proc/{}/environ", client.pid))
            .map(|image| TerminalFacts::env_from_environ(&image))
            .unwrap_or_default();
        terminal::route(
            self.setting,
            &TerminalFacts {
                termname: client.termname.clone(),
                termtype: client.termtype.clone(),
                env,
            },
        )
    }

    /// The environment variables of a client process that the auto table reads.
    fn env_of(&mut self, pid: u32) -> Vec<(String, String)> {
        if let Some((p, env)) = &self.env {
            if *p == pid {
                return env.clone();
            }
        }
        let env = std::fs::read(format!("/proc/{pid}/environ"))
            .map(|image| TerminalFacts::env_from_environ(&image))
            .unwrap_or_default();
        self.env = Some((pid, env.clone()));
        env
    }

    /// Writes up to [`PER_ROUND`] notes to `client`'s tty.
    pub fn write_to(&mut self, now: Instant, client: &ClientInfo) {
        let facts = TerminalFacts {
            termname: client.termname.clone(),
            termtype: client.termtype.clone(),
            env: self.env_of(client.pid),
        };
        let Some(route) = terminal::route(self.setting, &facts) else {
            return;
        };
        let fd = match open_tty(&client.tty) {
            Ok(fd) => fd,
            Err(why) => {
                tracing::warn!(tty = %client.tty, %why, "cannot write a terminal notification");
                self.queue.clear();
                self.wake = None;
                return;
            }
        };
        for _ in 0..PER_ROUND {
            let Some(note) = self.queue.front() else {
                break;
            };
            self.next_id += 1;
            let bytes = terminal::sequence(route, self.next_id, &note.title, &note.body, self.bell);
            match write_whole(&fd, &bytes) {
                Written::Whole => {}
                Written::Busy => break,
                Written::Finished(after) => tracing::warn!(
                    tty = %client.tty,
                    ms = after.as_millis() as u64,
                    "a terminal notification was written in parts (the terminal reads slowly)"
                ),
                Written::Failed(e) => {
                    tracing::warn!(tty = %client.tty, error = %e, "terminal notification cut short");
                    self.queue.pop_front();
                    break;
                }
            }
            self.queue.pop_front();
            self.written += 1;
            self.dropped = 0;
            tracing::debug!(tty = %client.tty, protocol = route.protocol.as_str(), nested = route.nested, "terminal notification");
        }
        self.wake = (!self.queue.is_empty()).then_some(now + QUIET);
    }
}

/// Opens a client's tty for writing, without making it our controlling terminal and without
/// ever blocking; only a character device of this user's.
fn open_tty(path: &str) -> Result<OwnedFd, String> {
    if !path.starts_with("/dev/") {
        return Err("not a device path".into());
    }
    let fd = open(
        path,
        OFlags::WRONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| e.to_string())?;
    let st = fstat(&fd).map_err(|e| e.to_string())?;
    if FileType::from_raw_mode(st.st_mode) != FileType::CharacterDevice {
        return Err("not a character device".into());
    }
    if st.st_uid != rustix::process::geteuid().as_raw() {
        return Err("owned by another user".into());
    }
    Ok(fd)
}

/// How one note's write went.
enum Written {
    /// In one write.
    Whole,
    /// The tty takes nothing now; nothing was written.
    Busy,
    /// In parts, finished after this long.
    Finished(Duration),
    /// An error, or the rest could not be written within [`FINISH_BUDGET`].
    Failed(String),
}

/// Writes `bytes` in one write when the tty takes writes now; a partial write is finished at
/// once (see the module docs).
fn write_whole(fd: &OwnedFd, bytes: &[u8]) -> Written {
    let ready = |wait: Option<&rustix::time::Timespec>| {
        let mut fds = [PollFd::new(fd, PollFlags::OUT)];
        matches!(poll(&mut fds, wait), Ok(n) if n > 0) && fds[0].revents().contains(PollFlags::OUT)
    };
    let zero = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    if !ready(Some(&zero)) {
        return Written::Busy;
    }
    let mut done = match rustix::io::write(fd, bytes) {
        Ok(n) if n == bytes.len() => return Written::Whole,
        Ok(n) => n,
        Err(Errno::AGAIN) => return Written::Busy,
        Err(e) => return Written::Failed(e.to_string()),
    };
    let start = Instant::now();
    let step = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 10_000_000,
    };
    while done < bytes.len() {
        if start.elapsed() >= FINISH_BUDGET {
            return Written::Failed(format!(
                "{} of {} bytes after {} ms",
                done,
                bytes.len(),
                FINISH_BUDGET.as_millis()
            ));
        }
        if !ready(Some(&step)) {
            continue;
        }
        match rustix::io::write(fd, &bytes[done..]) {
            Ok(n) => done += n,
            Err(Errno::AGAIN) | Err(Errno::INTR) => {}
            Err(e) => return Written::Failed(e.to_string()),
        }
    }
    Written::Finished(start.elapsed())
}

impl Daemon {
    /// A decided notification shown on this machine: on the desktop, and to the terminal when
    /// terminal notifications are on. `machine` names the connected machine it is about.
    pub(super) fn show_here(&mut self, now: Now, input: &NoteInput, machine: Option<&str>) {
        self.notifier.show(input, machine);
        if self.terminal.is_on() {
            let (summary, body) = notification::text(input, &self.notifier.switches());
            let title = match machine {
                Some(m) => format!("{} · {summary}", notification::one_line(m)),
                None => summary,
            };
            self.terminal.queue(now.at, title, body);
            self.terminal_check(now, false);
        }
    }

    /// Looks whether waiting terminal notes can be written (see the module docs); `fresh`:
    /// the client list was just read.
    pub(super) fn terminal_check(&mut self, now: Now, fresh: bool) {
        if !self.terminal.expire(now.at) {
            return;
        }
        let client = self
            .inventory()
            .and_then(|i| i.people().max_by_key(|c| c.activity).cloned());
        let Some(client) = client.filter(|c| c.window.is_some() && c.flags.attached) else {
            self.terminal.no_client(now.at);
            return;
        };
        let window = client.window.unwrap_or(WindowId(0));
        self.take_held_writes(now.at);
        let (mut last_output, mut paused) = (None, false);
        if let Some(inv) = self.inventory() {
            for p in inv.panes.values().filter(|p| p.window == window) {
                if let Some(e) = self.panes.get(&p.id) {
                    last_output = last_output.max(e.last_output);
                    // A held pipe's writes are known (its terminal is watched, drained above).
                    let held = self.link.observer.as_ref().is_some_and(|o| o.held(p.id));
                    paused |= e.flood.is_paused() && !held;
                }
            }
        }
        let look = Look {
            client: client.name.clone(),
            window,
            last_output,
            paused,
            fresh: fresh.then(|| Fresh {
                activity: client.activity,
                unix_now: now.unix_s(),
                written: client.written,
            }),
        };
        match self.terminal.gate(now.at, &look) {
            Gate::Wait => {}
            Gate::Confirm => self.start_clients(),
            Gate::Write => self.terminal.write_to(now.at, &client),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn look(last_output: Option<Instant>) -> Look {
        Look {
            client: "/dev/pts/1".into(),
            window: WindowId(1),
            last_output,
            paused: false,
            fresh: None,
        }
    }

    fn fresh(l: &Look, activity: u64, unix_now: u64, written: u64) -> Look {
        Look {
            fresh: Some(Fresh {
                activity,
                unix_now,
                written,
            }),
            ..l.clone()
        }
    }

    #[test]
    fn a_note_waits_for_a_still_window_then_two_lists_with_nothing_written_between() {
        let t = Instant::now();
        let mut n = TerminalNotes::new("osc777", false, true);
        n.queue(t, "T".into(), "B".into());
        // First look: the watch starts now, so wait QUIET.
        assert_eq!(n.gate(t, &look(None)), Gate::Wait);
        assert_eq!(n.next_deadline(), Some(t + QUIET));
        // Output 100 ms in: wait QUIET from it.
        let out = t + Duration::from_millis(100);
        let l = look(Some(out));
        assert_eq!(n.gate(t + QUIET, &l), Gate::Wait);
        assert_eq!(n.next_deadline(), Some(out + QUIET));
        // Still: list the clients, once; the spinner holds from now.
        let t1 = out + QUIET;
        assert_eq!(n.gate(t1, &l), Gate::Confirm);
        assert!(n.confirming() && n.status_hold().is_some());
        assert_eq!(n.gate(t1, &l), Gate::Wait);
        // A key in the last second: start over.
        assert_eq!(n.gate(t1, &fresh(&l, 1000, 1001, 5)), Gate::Wait);
        assert!(!n.confirming() && n.status_hold().is_none());
        assert_eq!(n.gate(t1, &l), Gate::Confirm);
        // The first list sets the baseline; the second, QUIET later, must see the same count.
        assert_eq!(n.gate(t1, &fresh(&l, 1000, 1002, 5)), Gate::Wait);
        assert_eq!(n.next_deadline(), Some(t1 + QUIET));
        let t2 = t1 + QUIET;
        assert_eq!(n.gate(t2, &l), Gate::Confirm);
        // tmux wrote meanwhile (a backlog draining): a new baseline, not a write.
        assert_eq!(n.gate(t2, &fresh(&l, 1000, 1002, 900)), Gate::Wait);
        let t3 = t2 + QUIET;
        assert_eq!(n.gate(t3, &l), Gate::Confirm);
        assert_eq!(n.gate(t3, &fresh(&l, 1000, 1003, 900)), Gate::Write);
        assert!(n.status_hold().is_none());
    }

    #[test]
    fn another_window_or_a_paused_pane_restarts_the_wait() {
        let t = Instant::now();
        let mut n = TerminalNotes::new("auto", false, true);
        n.queue(t, "T".into(), String::new());
        assert_eq!(n.gate(t, &look(None)), Gate::Wait);
        let mut other = look(None);
        other.window = WindowId(2);
        assert_eq!(n.gate(t + QUIET, &other), Gate::Wait);
        assert_eq!(n.next_deadline(), Some(t + QUIET + QUIET));
        let mut paused = other.clone();
        paused.paused = true;
        assert_eq!(n.gate(t + QUIET * 3, &paused), Gate::Wait);
        assert_eq!(n.gate(t + QUIET * 3, &other), Gate::Confirm);
    }

    #[test]
    fn notes_expire_after_the_patience_and_the_queue_is_bounded() {
        let t = Instant::now();
        let mut n = TerminalNotes::new("osc9", false, true);
        for i in 0..(QUEUE_MAX + 5) {
            n.queue(t, format!("{i}"), String::new());
        }
        assert_eq!(n.queue.len(), QUEUE_MAX);
        assert_eq!(n.queue.front().map(|w| w.title.as_str()), Some("5"));
        assert!(n.expire(t + PATIENCE - Duration::from_millis(1)));
        assert!(!n.expire(t + PATIENCE));
        assert_eq!(n.next_deadline(), None);
        // Off, or notifications off altogether, queues nothing.
        for mut off in [
            TerminalNotes::new("off", false, true),
            TerminalNotes::new("osc777", false, false),
        ] {
            off.queue(t, "T".into(), String::new());
            assert!(!off.expire(t));
        }
    }
}
