//! The foreground job of a pane, read from procfs: field `tpgid` of `/proc/<pane_pid>/stat`
//! (tcgetpgrp on the pane's tty does not work from outside), then the job's processes found by
//! walking the pane's process tree through `/proc/PID/task/TID/children`. Only files are read:
//! no process is spawned.
//!
//! Two ways in, two ways of reading:
//!
//! - The full [`probe`] reads through the `procfs` crate: one [`Process`] per process of the
//!   tree (a directory descriptor; each file is opened relative to it), its `stat` for the
//!   group, the job and the name (`comm` in `stat` is `/proc/PID/comm`, the same 15-byte
//!   name, so that file is no longer read), [`Process::tasks`] and `Task::children` for the
//!   tree. `cmdline` is opened through procfs but split here: `Process::cmdline` fails on an
//!   argument that is not UTF-8, which would lose the whole argv of an agent started on such a
//!   file name; it is read lossily, as before.
//! - The cheap look, [`look`] (the first process's `stat` for `tpgid`, the job leader's `stat`
//!   for its name when the leader is another process, [`main_children`]), stays a hand-written
//!   single read of each file: it runs on the daemon's loop for each pane with output (at most
//!   every 250 ms per pane, every two seconds where an agent runs) and for every pane on the 10 s
//!   timer, and procfs makes it half again slower with twice the system calls and four to five
//!   times the allocations (figures below). The daemon's panes make it through files they
//!   keep open ([`super::look_files`]); [`look`] opens them by path.
//!
//! `cargo bench --bench proc`, medians of 5 runs on the 2-core machine with other builds
//! running; system calls per call from `strace -c`, allocations from a counting allocator:
//!
//! | per call | hand-written | procfs |
//! | --- | --- | --- |
//! | cheap look, an interactive shell's pid | 12.9 µs, 8 syscalls, 4 allocs | 19.0 µs, 16, 20 |
//! | cheap look, this process's pid | 11.9 µs, 8, 4 | 18.1 µs, 16, 17 |
//! | `tpgid` alone (shell) | 7.6 µs, 4, 2 | 11.4 µs, 8, 8 |
//! | `main_children` alone (shell) | 5.1 µs, 4, 2 | 9.9 µs, 10, 16 |
//! | `probe`, `bash` running `sleep \| cat` (3 processes) | 85 µs, 57, 74 | 83 µs, 75, 78 |
//! | `probe`, `bash` running a `sh` and 40 `sleep`s | 1.20 ms, 838, 1021 | 1.33 ms, 1093, 1107 |
//!
//! The hand-written probe is the one this module had before procfs; the hand-written cheap
//! look was 8.2 µs and 7 allocations for `tpgid` before its parse stopped collecting the
//! fields (same 4 system calls). procfs's extra system calls: each `Process` and `Task` is an
//! `O_PATH` directory descriptor (`openat`, `close`), its reads go through `read_to_end`, which
//! asks the size of a file that `/proc` says is empty (`statx`, `lseek`), and `tasks` opens the
//! task directory twice (`openat`, `fcntl`, `openat`). Parsing our single `stat` read with
//! procfs's `Stat::from_read` costs the same 4 system calls but 4 allocations and 8.7 µs: the
//! two-field parse stays. The probe, on its own thread, pays about 0.1 ms more for a tree of 42
//! processes (10%), which does not matter there.
//!
//! The look with the job leader's name (tenth session; one run on a quieter machine, so only
//! the rows of that run compare): a shell running a job 7.1 µs, 12 system calls, 8 allocations
//! (its leader's `stat` read too), this process (no job) 4.1 µs, 8, 5; procfs's look without
//! the name 7.0 and 6.6 µs; `tpgid` alone 2.6 µs, `main_children` 1.4 – 1.7 µs.

use std::collections::VecDeque;
use std::fs;
use std::io::Read;

use procfs::process::{Process, Stat};

use super::identify::ProcInfo;

/// Walk at most this many processes under a pane (agents spawn a few helpers; a build can
/// spawn hundreds, which we need not see).
pub const MAX_PROCS: usize = 64;

/// What runs in a pane's foreground.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Foreground {
    /// The foreground process group (the job), when readable.
    pub tpgid: Option<u32>,
    /// The foreground job is the pane's own first process (the shell at its prompt).
    pub at_shell: bool,
    /// The job's processes, leader first, then the other members, then their descendants.
    pub procs: Vec<ProcInfo>,
}

impl Foreground {
    /// The job's leader, if it could be read.
    pub fn leader(&self) -> Option<&ProcInfo> {
        self.procs.first()
    }
}

// ---------------------------------------------------------------------------------------------
// The cheap look: one read of one file.

/// Room for a `/proc` file in one read: `stat` is a few hundred bytes, a long `cmdline` a few
/// kilobytes (the buffer grows for longer ones).
pub(crate) const PROC_READ: usize = 4096;

/// Reads the rest of a `/proc` file with as few system calls as it takes: procfs reports a size
/// of 0, which makes `read_to_end` ask the size (`statx`, `lseek`) and start with a 32-byte
/// probe read, growing from there (six reads for a `stat`). One read into room for the whole
/// file, one more to see its end.
fn read_all(mut f: fs::File) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; PROC_READ];
    let mut n = 0;
    loop {
        if n == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    buf.truncate(n);
    Some(buf)
}

/// A positive process or group id (`tpgid` is -1 without a controlling terminal, 0 when the
/// terminal has no foreground group).
fn positive(id: i64) -> Option<u32> {
    u32::try_from(id).ok().filter(|&i| i > 0)
}

/// The foreground process group of a pane (field `tpgid` of its first process): one small
/// read, to tell whether a full [`probe`] could find anything new.
pub fn tpgid(pane_pid: u32) -> Option<u32> {
    stat_name_tpgid(pane_pid)?.1
}

/// A process's name (`comm`, between the first `(` and the last `)` of its `stat`) and the
/// `tpgid` of its terminal, from one read of its `stat`.
fn stat_name_tpgid(pid: u32) -> Option<(Vec<u8>, Option<u32>)> {
    let f = fs::File::open(format!("/proc/{pid}/stat")).ok()?;
    name_tpgid(&read_all(f)?)
}

/// The name and `tpgid` in the text of a `stat` file.
pub(crate) fn name_tpgid(stat: &[u8]) -> Option<(Vec<u8>, Option<u32>)> {
    // The name can hold spaces and parentheses: the fields start after the last ')'.
    let open = stat.iter().position(|&b| b == b'(')?;
    let close = stat.iter().rposition(|&b| b == b')')?;
    let name = stat.get(open + 1..close)?.to_vec();
    let rest = &stat[close + 1..];
    // state ppid pgrp session tty_nr tpgid
    let mut fields = rest
        .split(u8::is_ascii_whitespace)
        .filter(|f| !f.is_empty());
    let tpgid = fields
        .nth(5)
        .and_then(|f| std::str::from_utf8(f).ok()?.parse().ok())
        .and_then(positive);
    Some((name, tpgid))
}

/// The cheap look at a pane: what tells, in two or three small reads that take no lock a
/// stuck process holds, whether a full [`probe`] could find anything new. A job started or
/// ended changes `tpgid`; a process started or ended under the pane's first process changes
/// its children; a program `exec`ed by the job's leader (the shell's `exec claude`, a script's
/// `exec node …`) or one that renames itself changes the leader's name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Look {
    /// The foreground process group.
    pub tpgid: Option<u32>,
    /// The name (`comm`) of that group's leader (of the first process when there is none).
    pub leader: Vec<u8>,
    /// The children of the first process's main thread, as `/proc` lists them.
    pub children: String,
}

/// Looks at a pane whose first process is `pane_pid` (see [`Look`]): its `stat`, the
/// foreground leader's `stat` when that is another process, and its children, read as a
/// pane's kept files read them ([`super::look_files::LookFiles`]), opened for this look alone.
pub fn look(pane_pid: u32) -> Look {
    // The files opened for this look alone, closed when it is done.
    super::look_files::LookFiles::default().look(pane_pid)
}

/// How long ago a process started (`starttime` of `/proc/PID/stat` against `/proc/uptime`,
/// both counted from boot), to the clock tick.
pub fn age(pid: u32) -> Option<std::time::Duration> {
    let stat = read_all(fs::File::open(format!("/proc/{pid}/stat")).ok()?)?;
    let rest = &stat[stat.iter().rposition(|&b| b == b')')? + 1..];
    // Fields from `state` (3) on; `starttime` is field 22.
    let field = rest
        .split(u8::is_ascii_whitespace)
        .filter(|f| !f.is_empty())
        .nth(19)?;
    let ticks: u64 = std::str::from_utf8(field).ok()?.parse().ok()?;
    let uptime = fs::read_to_string("/proc/uptime").ok()?;
    let up: f64 = uptime.split_whitespace().next()?.parse().ok()?;
    let started = ticks as f64 / procfs::ticks_per_second().max(1) as f64;
    Some(std::time::Duration::from_secs_f64((up - started).max(0.0)))
}

/// The children of a process's main thread, as `/proc` lists them (one small read): with
/// [`tpgid`], a cheap sign that something started or ended under the pane's first process.
pub fn main_children(pid: u32) -> String {
    fs::File::open(format!("/proc/{pid}/task/{pid}/children"))
        .ok()
        .and_then(read_all)
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// The full probe, through procfs.

/// A process's `/proc` directory, and its `stat`: `None` once it has gone.
fn open(pid: u32) -> Option<(Process, Stat)> {
    let p = Process::new(i32::try_from(pid).ok()?).ok()?;
    let stat = p.stat().ok()?;
    Some((p, stat))
}

/// How often, and how far apart, [`info`] reads again the `cmdline` of a process caught in the
/// middle of an `execve`.
const EXEC_TRIES: u32 = 10;
const EXEC_PAUSE: std::time::Duration = std::time::Duration::from_millis(1);
/// `PF_KTHREAD` in a `stat`'s flags: a kernel thread, whose `cmdline` is empty for good.
const PF_KTHREAD: u32 = 0x0020_0000;

fn cmdline(p: &Process) -> Vec<u8> {
    p.open_relative("cmdline")
        .ok()
        .and_then(read_all)
        .unwrap_or_default()
}

/// One process's name (from its `stat`) and argv (`cmdline` split at NULs, lossily).
///
/// A process in the middle of an `execve` has its new memory (and, a moment later, its new
/// name) before the kernel has written its new argv: for that moment its `cmdline` is empty
/// (measured: 160 of 16,577 reads of `bash -c 'exec node …'` as it started read `node` with no
/// argv). A probe that read that moment missed an agent known by its script's path, and
/// nothing probed the pane again (a faults test failed in CI). So an empty `cmdline` of a live
/// process is read again, with its name, up to [`EXEC_TRIES`] times [`EXEC_PAUSE`] apart (on the
/// probe thread, never the daemon's loop); a zombie's or a kernel thread's stays empty.
fn info(pid: u32, p: &Process, stat: Stat) -> ProcInfo {
    let mut comm = stat.comm;
    let mut live = !matches!(stat.state, 'Z' | 'X') && stat.flags & PF_KTHREAD == 0;
    let mut raw = cmdline(p);
    let mut tries = 0;
    while raw.is_empty() && live && tries < EXEC_TRIES {
        tries += 1;
        std::thread::sleep(EXEC_PAUSE);
        let Ok(stat) = p.stat() else { break };
        live = !matches!(stat.state, 'Z' | 'X');
        comm = stat.comm;
        raw = cmdline(p);
    }
    let argv = raw
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    ProcInfo { pid, comm, argv }
}

/// Reads one process's comm and argv.
pub fn read_proc(pid: u32) -> Option<ProcInfo> {
    let (p, stat) = open(pid)?;
    Some(info(pid, &p, stat))
}

/// The children of every thread of a process (a thread that spawned a child lists it in its
/// own `children`, not the main thread's).
fn children(p: &Process) -> Vec<u32> {
    let Ok(tasks) = p.tasks() else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| t.children().ok())
        .flatten()
        .collect()
}

/// Probes the foreground job of the pane whose first process is `pane_pid`.
pub fn probe(pane_pid: u32) -> Foreground {
    let Some((pane, stat)) = open(pane_pid) else {
        return Foreground::default();
    };
    let Some(tpgid) = positive(stat.tpgid.into()) else {
        return Foreground {
            tpgid: None,
            at_shell: false,
            procs: vec![info(pane_pid, &pane, stat)],
        };
    };
    let in_job = |stat: &Stat| positive(stat.pgrp.into()) == Some(tpgid);
    let at_shell = tpgid == pane_pid || in_job(&stat);
    // Breadth-first over the pane's tree, sorting members of the job before the rest.
    let mut members = Vec::new();
    let mut others = Vec::new();
    let mut queue = VecDeque::from([pane_pid]);
    let mut first = Some((pane, stat));
    let mut seen = 0usize;
    while let Some(pid) = queue.pop_front() {
        seen += 1;
        if seen > MAX_PROCS {
            break;
        }
        let Some((p, stat)) = first.take().or_else(|| open(pid)) else {
            continue; // gone since its parent listed it
        };
        if in_job(&stat) {
            let i = info(pid, &p, stat);
            if pid == tpgid {
                members.insert(0, i);
            } else {
                members.push(i);
            }
        } else if pid != pane_pid && !members.is_empty() {
            others.push(info(pid, &p, stat));
        }
        queue.extend(children(&p));
    }
    if members.is_empty() {
        // The job leader is not under the pane's first process (rare: a re-parented job).
        members.extend(read_proc(tpgid));
    }
    members.extend(others);
    Foreground {
        tpgid: Some(tpgid),
        at_shell,
        procs: members,
    }
}

#[cfg(test)]
#[path = "foreground_tests.rs"]
mod tests;
