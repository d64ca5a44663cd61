//! What the load bench reads of processes: CPU of a process tree (each live process's threads
//! from `/proc/PID/task/TID/schedstat`, in nanoseconds; reaped children from `/proc/PID/stat`,
//! in clock ticks), the tmux server's CPU from `/proc/PID/schedstat` (it is one thread),
//! resident sizes from `/proc/PID/status`, and the machine's load average.
//!
//! Why not `utime + stime` for live processes too: they count 10 ms ticks, and the sidecar's
//! own CPU at the 50-pane load is 12 or 13 ticks in a 20 s window, too coarse to tell a tenth
//! of it. A thread that ends within a window takes its time with it (the sidecar's runtime
//! starts a thread for blocking work now and then, for well under a millisecond of work).

use std::collections::HashMap;
use std::process::Command;

/// Fields of `/proc/PID/stat` after the command name (index 0 = state).
fn stat_fields(pid: u32) -> Option<Vec<u64>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    Some(
        rest.split(' ')
            .map(|f| f.trim().parse::<u64>().unwrap_or(0))
            .collect(),
    )
}

/// (ppid, utime+stime, cutime+cstime) in clock ticks.
pub fn cpu_ticks(pid: u32) -> Option<(u32, u64, u64)> {
    let f = stat_fields(pid)?;
    // after ')': state(0) ppid(1) pgrp(2) session(3) tty(4) tpgid(5) flags(6) minflt(7)
    // cminflt(8) majflt(9) cmajflt(10) utime(11) stime(12) cutime(13) cstime(14)
    Some((f[1] as u32, f[11] + f[12], f[13] + f[14]))
}

/// Clock ticks per second.
pub fn clk_tck() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// Nanoseconds the live threads of `pid` have run, or `None` once it has gone.
fn threads_ns(pid: u32) -> Option<u64> {
    let rd = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    Some(
        rd.flatten()
            .filter_map(|e| schedstat_ns(e.path().join("schedstat")))
            .sum(),
    )
}

/// CPU nanoseconds of `root` and every live descendant, by pid, plus root's reaped children
/// (their ticks, as nanoseconds).
fn tree_ns(root: u32, tck: f64) -> (HashMap<u32, u64>, u64) {
    let ticks_ns = |t: u64| (t as f64 * 1e9 / tck) as u64;
    let (ticks, reaped) = tree_ticks(root);
    let ns = ticks
        .into_iter()
        .map(|(pid, t)| (pid, threads_ns(pid).unwrap_or_else(|| ticks_ns(t))))
        .collect();
    (ns, ticks_ns(reaped))
}

/// CPU ticks of `root` and every live descendant, by pid, plus root's reaped children.
fn tree_ticks(root: u32) -> (HashMap<u32, u64>, u64) {
    let mut parent = HashMap::new();
    let mut ticks = HashMap::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Some((ppid, t, _)) = cpu_ticks(pid) {
                parent.insert(pid, ppid);
                ticks.insert(pid, t);
            }
        }
    }
    let mut out = HashMap::new();
    for (&pid, &t) in &ticks {
        let mut p = pid;
        for _ in 0..64 {
            if p == root {
                out.insert(pid, t);
                break;
            }
            match parent.get(&p) {
                Some(&pp) if pp != 0 => p = pp,
                _ => break,
            }
        }
    }
    let reaped = cpu_ticks(root).map(|(_, _, c)| c).unwrap_or(0);
    (out, reaped)
}

/// A CPU meter over a process tree (the process, its live descendants and its reaped
/// children).
pub struct TreeMeter {
    roots: Vec<u32>,
    tck: f64,
    start: Vec<(HashMap<u32, u64>, u64)>,
}

impl TreeMeter {
    /// Meters the process trees of `roots` together (the first is the observer "itself", or
    /// every root is when they are alike: the bare pipes' `cat`s). `tck`: clock ticks a second.
    pub fn start(roots: &[u32], tck: f64) -> TreeMeter {
        TreeMeter {
            roots: roots.to_vec(),
            tck,
            start: roots.iter().map(|r| tree_ns(*r, tck)).collect(),
        }
    }

    /// CPU seconds since `start`: the whole trees, and the roots' processes alone.
    pub fn seconds(&self) -> (f64, f64) {
        let (mut t, mut own): (u64, u64) = (0, 0);
        for (root, start) in self.roots.iter().zip(&self.start) {
            let (now, reaped) = tree_ns(*root, self.tck);
            for (pid, v) in &now {
                t += v.saturating_sub(start.0.get(pid).copied().unwrap_or(0));
            }
            t += reaped.saturating_sub(start.1);
            own += now
                .get(root)
                .copied()
                .unwrap_or(0)
                .saturating_sub(start.0.get(root).copied().unwrap_or(0));
        }
        (t as f64 / 1e9, own as f64 / 1e9)
    }
}

/// Nanoseconds a single-threaded process (the tmux server) has run on a CPU.
pub fn run_ns(pid: u32) -> Option<u64> {
    schedstat_ns(format!("/proc/{pid}/schedstat"))
}

/// The first field of a `schedstat` file: nanoseconds run.
fn schedstat_ns(path: impl AsRef<std::path::Path>) -> Option<u64> {
    std::fs::read_to_string(path)
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A `/proc/PID/status` size in kB (`VmHWM:`, `VmRSS:`).
pub fn vm_kb(pid: u32, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Direct children of `pid`.
pub fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            if let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) {
                if cpu_ticks(p).map(|(pp, _, _)| pp) == Some(pid) {
                    out.push(p);
                }
            }
        }
    }
    out
}

/// The 1-minute load average.
pub fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}
