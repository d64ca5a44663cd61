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
//!   every 250 ms per pane, once a second where an agent runs) and for every pane on the 10 s
//!   timer, and procfs makes it half again slower with twice the system calls and four to five
//!   times the allocations (figures below, measured before the leader's name was added: a
//!   job's look is one `stat` more).
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
const PROC_READ: usize = 4096;

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
    let stat = read_all(f)?;
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
/// foreground leader's `stat` when that is another process, and its children.
pub fn look(pane_pid: u32) -> Look {
    let Some((name, tpgid)) = stat_name_tpgid(pane_pid) else {
        return Look::default();
    };
    let leader = match tpgid {
        Some(t) if t != pane_pid => stat_name_tpgid(t).map(|(n, _)| n).unwrap_or_default(),
        _ => name,
    };
    Look {
        tpgid,
        leader,
        children: main_children(pane_pid),
    }
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
mod tests {
    use super::*;
    use std::io::Write as _;
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    /// Polls `f` until it answers, for at most 10 s.
    fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(v) = f() {
                return v;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn pids(list: &str) -> Vec<u32> {
        let mut v: Vec<u32> = list
            .split_whitespace()
            .map(|c| c.parse().unwrap())
            .collect();
        v.sort_unstable();
        v
    }

    /// An interactive `bash` on a terminal of its own (`script`), as a tmux pane's first
    /// process is: it runs what is typed into `script`'s stdin as a job in the foreground.
    /// Every process it is told of is killed by pid on drop.
    struct Pane {
        script: Child,
        shell: u32,
        pids: Vec<u32>,
    }

    impl Pane {
        const BASH: [&str; 4] = ["bash", "--norc", "--noprofile", "-i"];

        fn start() -> Pane {
            let script = Command::new("script")
                .args(["-qfc", "exec bash --norc --noprofile -i", "/dev/null"])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("script (util-linux) runs");
            let sid = script.id();
            let shell = wait_for("script's shell", || {
                main_children(sid).split_whitespace().next()?.parse().ok()
            });
            let mut pane = Pane {
                script,
                shell,
                pids: vec![shell],
            };
            // script's shell runs `exec bash ...`: wait for the exec.
            pane.probe_until("bash at its prompt", |f| {
                f.at_shell && f.leader().is_some_and(|p| p.argv == Pane::BASH)
            });
            pane
        }

        fn type_line(&mut self, line: &str) {
            let stdin = self.script.stdin.as_mut().unwrap();
            writeln!(stdin, "{line}").unwrap();
            stdin.flush().unwrap();
        }

        /// Probes the pane until `done` holds (the last probe is in the panic's message).
        fn probe_until(&mut self, what: &str, done: impl Fn(&Foreground) -> bool) -> Foreground {
            let mut last = Foreground::default();
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                last = probe(self.shell);
                self.pids.extend(last.procs.iter().map(|p| p.pid));
                if done(&last) {
                    return last;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            panic!("timed out waiting for {what}; last probe: {last:?}");
        }
    }

    impl Drop for Pane {
        fn drop(&mut self) {
            self.pids.sort_unstable();
            self.pids.dedup();
            let _ = Command::new("kill")
                .arg("-KILL")
                .args(self.pids.iter().map(u32::to_string))
                .stderr(Stdio::null())
                .status();
            let _ = self.script.kill();
            let _ = self.script.wait();
        }
    }

    fn argv(fg: &Foreground) -> Vec<Vec<&str>> {
        fg.procs
            .iter()
            .map(|p| p.argv.iter().map(String::as_str).collect())
            .collect()
    }

    #[test]
    fn reads_this_process() {
        let me = std::process::id();
        let p = read_proc(me).expect("own /proc entry");
        assert_eq!(p.pid, me);
        // comm is the executable's file name cut at 15 bytes; argv is ours.
        let exe = std::env::current_exe().unwrap();
        let name = exe.file_name().unwrap().to_string_lossy();
        assert_eq!(p.comm, name.chars().take(15).collect::<String>());
        let args: Vec<String> = std::env::args().collect();
        assert_eq!(p.argv, args);
        // The hand-written stat read and procfs's agree on the job; without a terminal (no
        // job) the probe reads this process alone.
        let fg = probe(me);
        assert_eq!(tpgid(me), fg.tpgid);
        if fg.tpgid.is_none() {
            assert_eq!(fg.procs, vec![p]);
        }
    }

    #[test]
    fn a_shell_s_new_child_is_listed() {
        let mut sh = Command::new("sh")
            .args(["-c", "sleep 30 & echo $!; wait"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let out = sh.stdout.take().unwrap();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(out), &mut line).unwrap();
        let child: u32 = line.trim().parse().unwrap();
        let listed = pids(&main_children(sh.id()));
        let walked = open(sh.id()).map(|(p, _)| children(&p));
        let _ = Command::new("kill").arg(child.to_string()).status();
        let _ = sh.kill();
        let _ = sh.wait();
        assert_eq!(listed, vec![child], "the main thread's children file");
        assert_eq!(walked, Some(vec![child]), "the tasks walked through procfs");
    }

    #[test]
    fn a_thread_s_children_are_walked() {
        let me = std::process::id();
        let (tx, child) = std::sync::mpsc::channel();
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let (all, main) = std::thread::scope(|s| {
            s.spawn(move || {
                let mut c = Command::new("sleep").arg("30").spawn().unwrap();
                tx.send(c.id()).unwrap();
                let _ = wait.recv();
                let _ = c.kill();
                let _ = c.wait();
            });
            let pid = child.recv().unwrap();
            let all = open(me).map(|(p, _)| children(&p)).unwrap_or_default();
            let main = pids(&main_children(me));
            done.send(()).unwrap();
            (all.contains(&pid), main.contains(&pid))
        });
        assert!(
            all,
            "a child of another thread is found by walking the tasks"
        );
        assert!(!main, "and is not in the main thread's list");
    }

    #[test]
    fn a_pane_s_job_is_read_leader_first() {
        let mut pane = Pane::start();
        let shell = pane.shell;
        let fg = probe(shell);
        assert_eq!(fg.tpgid, Some(shell), "the shell at its prompt: {fg:?}");
        assert_eq!(tpgid(shell), Some(shell));
        assert!(fg.at_shell);
        assert_eq!(argv(&fg), vec![Pane::BASH.to_vec()]);
        let at_prompt = look(shell);
        assert_eq!(
            (
                at_prompt.tpgid,
                &at_prompt.leader[..],
                &at_prompt.children[..]
            ),
            (Some(shell), &b"bash"[..], "")
        );

        // A job of two members, one of which started a process in a session of its own.
        pane.type_line("sleep 30 | sh -c 'setsid sleep 31 & exec cat'");
        let fg = pane.probe_until("the job and its descendant", |f| {
            let names: Vec<&str> = f.procs.iter().map(|p| p.comm.as_str()).collect();
            // Each has run its program (a forked child is listed before it has).
            names == ["sleep", "cat", "sleep"] && f.procs[2].argv.len() == 2
        });
        let leader = fg.procs[0].pid;
        assert_eq!(fg.tpgid, Some(leader), "{fg:?}");
        assert_eq!(tpgid(shell), Some(leader));
        // The job's leader is named in the look, not the shell.
        assert_eq!(
            (look(shell).tpgid, look(shell).leader),
            (Some(leader), b"sleep".to_vec())
        );
        assert!(!fg.at_shell);
        assert_eq!(
            argv(&fg),
            vec![vec!["sleep", "30"], vec!["cat"], vec!["sleep", "31"]]
        );
        // The shell's own children are the job's two members (the third is cat's child).
        let mut members = vec![leader, fg.procs[1].pid];
        members.sort_unstable();
        assert_eq!(pids(&main_children(shell)), members);

        // The job ends: the shell is back in the foreground.
        let _ = Command::new("kill")
            .args(members.iter().map(u32::to_string))
            .status();
        let fg = pane.probe_until("the shell's prompt again", |f| f.at_shell);
        assert_eq!(fg.tpgid, Some(shell));
        assert_eq!(tpgid(shell), Some(shell));
        assert_eq!(fg.procs.len(), 1);
        assert_eq!(main_children(shell), "");
    }

    /// The shell's `exec` keeps the job, the process and its children: only the name tells.
    #[test]
    fn a_look_sees_a_program_the_shell_execs() {
        let mut pane = Pane::start();
        let shell = pane.shell;
        let before = look(shell);
        pane.type_line("exec sleep 30");
        pane.probe_until("sleep in the shell's place", |f| {
            f.leader().is_some_and(|p| p.comm == "sleep")
        });
        let after = look(shell);
        assert_eq!(
            (after.tpgid, &after.children),
            (before.tpgid, &before.children)
        );
        assert_eq!(
            (before.leader, after.leader),
            (b"bash".to_vec(), b"sleep".to_vec())
        );
    }

    #[test]
    fn a_wide_job_is_walked_up_to_max_procs() {
        let mut pane = Pane::start();
        pane.type_line("sh -c 'for i in $(seq 80); do sleep 30 & done; wait'");
        let fg = pane.probe_until("the job's leader", |f| {
            f.leader().is_some_and(|p| p.comm == "sh")
        });
        let sh = fg.procs[0].pid;
        let started = wait_for("80 sleeps", || {
            let c = pids(&main_children(sh));
            (c.len() == 80).then_some(c)
        });
        pane.pids.extend(&started);
        // A forked child is listed before it has run sleep: wait for the ones walked to.
        let fg = pane.probe_until("the sleeps", |f| {
            f.procs.len() == MAX_PROCS - 1 && f.procs[1..].iter().all(|p| p.comm == "sleep")
        });
        // The pane's shell is one of the MAX_PROCS processes walked, the job's leader another.
        assert_eq!(fg.procs[0].pid, sh);
        assert!(fg.procs[1..].iter().all(|p| started.contains(&p.pid)));
    }

    /// Regression: a process caught between its new name and its new argv (inside `execve`)
    /// was read with no argv, and an agent known by its script's path went unidentified. Read
    /// as fast as possible while 150 shells exec `sleep`: every read that has the new name has
    /// the new argv too (before the fix about one start in two had a read without).
    #[test]
    fn a_process_read_in_the_middle_of_its_exec_has_its_new_argv() {
        let mut torn = 0;
        for _ in 0..150 {
            let mut child = Command::new("bash")
                .args(["-c", "exec sleep 30"])
                .spawn()
                .unwrap();
            let pid = child.id();
            let deadline = Instant::now() + Duration::from_secs(10);
            while let Some(read) = read_proc(pid) {
                if read.comm == "sleep" {
                    if read.argv != ["sleep", "30"] {
                        torn += 1;
                    }
                    break;
                }
                if Instant::now() > deadline {
                    break;
                }
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        assert_eq!(torn, 0, "reads named sleep without its argv");
    }

    #[test]
    fn names_and_arguments_that_are_not_utf8_are_read_lossily() {
        use std::os::unix::ffi::OsStrExt as _;
        let dir = tempfile::tempdir().unwrap();
        // The kernel names a process after the file it ran: here a link to sleep.
        let link = dir.path().join(std::ffi::OsStr::from_bytes(b"sl\xffeep"));
        let sleep = ["/usr/bin/sleep", "/bin/sleep"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .expect("sleep");
        std::os::unix::fs::symlink(sleep, &link).unwrap();
        let mut child = Command::new(&link).arg("30").spawn().unwrap();
        let pid = child.id();
        // The kernel renames the process before it maps the new argv: wait for both.
        let deadline = Instant::now() + Duration::from_secs(10);
        let read = loop {
            let read = read_proc(pid).unwrap_or_default();
            if read.comm.starts_with("sl") && !read.argv.is_empty() || Instant::now() > deadline {
                break read;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(read.comm, "sl\u{FFFD}eep");
        assert_eq!(
            read.argv,
            vec![link.to_string_lossy().into_owned(), "30".to_string()]
        );
    }

    #[test]
    fn missing_process_reads_as_nothing() {
        for pid in [u32::MAX - 1, i32::MAX as u32] {
            assert_eq!(probe(pid), Foreground::default());
            assert_eq!(tpgid(pid), None);
            assert_eq!(main_children(pid), "");
            assert_eq!(look(pid), Look::default());
            assert_eq!(read_proc(pid), None);
        }
        // A process that has ended and been reaped.
        let mut done = Command::new("true").spawn().unwrap();
        let pid = done.id();
        done.wait().unwrap();
        assert_eq!(read_proc(pid), None);
        assert_eq!(probe(pid), Foreground::default());
    }
}
