//! The foreground job of a pane, read from procfs: field `tpgid` of `/proc/<pane_pid>/stat`
//! (tcgetpgrp on the pane's tty does not work from outside), then the job's processes found by
//! walking the pane's process tree through `/proc/PID/task/TID/children`. Only files are read:
//! no process is spawned.

use std::collections::VecDeque;
use std::fs;
use std::io::Read as _;
use std::path::Path;

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

/// Room for a `/proc` file in one read: `stat` is a few hundred bytes, a long `cmdline` a few
/// kilobytes (the buffer grows for longer ones).
const PROC_READ: usize = 4096;

/// Reads a whole `/proc` file with as few system calls as it takes: procfs reports a size of 0,
/// which makes `fs::read` start with a 32-byte probe and grow from there (six reads for a
/// `stat`). One read into room for the whole file, one more to see its end.
fn read_proc_file(path: impl AsRef<Path>) -> Option<Vec<u8>> {
    let mut f = fs::File::open(path).ok()?;
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

/// [`read_proc_file`] as text (`None` for a file that is not UTF-8).
fn read_proc_text(path: impl AsRef<Path>) -> Option<String> {
    String::from_utf8(read_proc_file(path)?).ok()
}

/// Fields of `/proc/PID/stat` after the command name.
struct Stat {
    pgrp: u32,
    tpgid: i64,
}

fn read_stat(pid: u32) -> Option<Stat> {
    let s = read_proc_text(format!("/proc/{pid}/stat"))?;
    // The name can contain spaces and parentheses: split after the last ')'.
    let rest = &s[s.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // state ppid pgrp session tty_nr tpgid
    Some(Stat {
        pgrp: f.get(2)?.parse().ok()?,
        tpgid: f.get(5)?.parse().ok()?,
    })
}

/// The foreground process group of a pane (field `tpgid` of its first process): one small
/// read, to tell whether a full [`probe`] could find anything new.
pub fn tpgid(pane_pid: u32) -> Option<u32> {
    read_stat(pane_pid).and_then(|s| u32::try_from(s.tpgid).ok().filter(|&t| t > 0))
}

/// The children of a process's main thread, as `/proc` lists them (one small read): with
/// [`tpgid`], a cheap sign that something started or ended under the pane's first process.
pub fn main_children(pid: u32) -> String {
    read_proc_text(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default()
}

/// Reads one process's comm and argv.
pub fn read_proc(pid: u32) -> Option<ProcInfo> {
    let comm = read_proc_text(format!("/proc/{pid}/comm"))?
        .trim_end_matches('\n')
        .to_string();
    let raw = read_proc_file(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let argv = raw
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    Some(ProcInfo { pid, comm, argv })
}

fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        if let Some(s) = read_proc_text(t.path().join("children")) {
            out.extend(s.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
        }
    }
    out
}

/// Probes the foreground job of the pane whose first process is `pane_pid`.
pub fn probe(pane_pid: u32) -> Foreground {
    let Some(stat) = read_stat(pane_pid) else {
        return Foreground::default();
    };
    let tpgid = u32::try_from(stat.tpgid).ok().filter(|&t| t > 0);
    let Some(tpgid) = tpgid else {
        return Foreground {
            tpgid: None,
            at_shell: false,
            procs: read_proc(pane_pid).into_iter().collect(),
        };
    };
    let at_shell = tpgid == pane_pid || stat.pgrp == tpgid;
    // Breadth-first over the pane's tree, sorting members of the job before the rest.
    let mut members = Vec::new();
    let mut others = Vec::new();
    let mut queue = VecDeque::from([pane_pid]);
    let mut seen = 0usize;
    while let Some(pid) = queue.pop_front() {
        seen += 1;
        if seen > MAX_PROCS {
            break;
        }
        let in_job = read_stat(pid).map(|s| s.pgrp == tpgid).unwrap_or(false);
        if in_job {
            if let Some(p) = read_proc(pid) {
                if pid == tpgid {
                    members.insert(0, p);
                } else {
                    members.push(p);
                }
            }
        } else if pid != pane_pid && !members.is_empty() {
            if let Some(p) = read_proc(pid) {
                others.push(p);
            }
        }
        queue.extend(children(pid));
    }
    if members.is_empty() {
        // The job leader is not under the pane's first process (rare: a re-parented job).
        if let Some(p) = read_proc(tpgid) {
            members.push(p);
        }
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

    #[test]
    fn reads_this_process() {
        let me = std::process::id();
        let p = read_proc(me).expect("own /proc entry");
        assert_eq!(p.pid, me);
        assert!(!p.comm.is_empty());
        assert!(!p.argv.is_empty());
        assert!(read_stat(me).is_some());
    }

    #[test]
    fn the_job_of_this_process_is_read_cheaply() {
        let me = std::process::id();
        assert_eq!(tpgid(me), probe(me).tpgid);
        assert_eq!(tpgid(u32::MAX - 1), None);
        // A shell's main thread starts a child, which the shell's list shows.
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & echo $!; wait"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let out = sh.stdout.take().unwrap();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(out), &mut line).unwrap();
        let listed = main_children(sh.id())
            .split_whitespace()
            .any(|c| c == line.trim());
        let _ = std::process::Command::new("kill").arg(line.trim()).status();
        let _ = sh.kill();
        let _ = sh.wait();
        assert!(listed, "a new child is listed");
    }

    #[test]
    fn missing_process_reads_as_nothing() {
        assert_eq!(probe(u32::MAX - 1), Foreground::default());
    }
}
