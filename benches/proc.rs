//! What reading `/proc` costs per call, for the two ways the daemon reads it
//! (`src/process/foreground.rs`):
//!
//! - the cheap look, `look(pid)` (the first process's `stat`, the job leader's when it is
//!   another process, `main_children`), made on the daemon's loop after a pane's output (at
//!   most every 250 ms per pane, once a second where an agent runs) and for every pane on a
//!   10 s timer; measured
//!   on this process's own pid and on an interactive shell's pid (a tmux pane's `bash` running
//!   a job);
//! - the full `probe(pid)` of a pane's process tree, made on the prober's own thread; measured
//!   on two panes of a private tmux server: `bash` running `sleep 300 | cat` (3 processes) and
//!   `bash` running a `sh` that started 40 `sleep`s (42 processes, near `MAX_PROCS`).
//!
//! The daemon makes the cheap look with hand-written reads of files each pane keeps open
//! (`kept look`; `look` opens them by path each time, as it did before) and the probe through the `procfs`
//! crate; for comparison the bench also makes the cheap look through procfs (`procfs tpgid`,
//! `procfs children`, and `procfs look`: one `Process` for both files) and parses the
//! hand-written `stat` read with procfs's `Stat::from_read` (`tpgid procfs parse`). The figures
//! and the choice are in the module doc of `foreground.rs`.
//!
//! For each case it prints the time per call (median of 11 samples), the heap allocations per
//! call (a counting global allocator) and, when `strace` is on the PATH, the system calls per
//! call: the bench runs itself under `strace -f -c` making the call N + 1 times and once, and
//! divides the difference by N (start-up and one-time costs cancel out).
//!
//! `cargo bench --bench proc` (needs `tmux`; `strace` optional). Everything it starts (one tmux
//! server, `tmux -L ttproc<pid>`, and the panes' processes) is ended by pid when it finishes,
//! also on panic.
#![allow(missing_docs)]
// The counting allocator below is the only unsafe code, and it only forwards to `System`.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use thinkterm_sidecar::process::foreground;
use thinkterm_sidecar::process::look_files::LookFiles;

// ---------------------------------------------------------------------------------------------
// Allocations per call.

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the counter
// is a relaxed atomic that allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

// ---------------------------------------------------------------------------------------------
// The calls measured, by name (the name is how the bench asks itself to loop under strace).

type Call = fn(u32);

fn look(pid: u32) {
    black_box(foreground::look(pid));
}

/// The cheap look the daemon makes: through the files a pane keeps open
/// (`process::look_files`), one per thread here as one per pane there.
fn kept_look(pid: u32) {
    thread_local! {
        static FILES: std::cell::RefCell<LookFiles> = std::cell::RefCell::default();
    }
    FILES.with_borrow_mut(|f| black_box(f.look(pid)));
}

/// The cheap look through procfs, for comparison with the hand-written reads the daemon uses:
/// one `Process` (a directory descriptor) for both files, `Stat` parsed in full, the children
/// as a `Vec<u32>`.
fn procfs_look(pid: u32) {
    let Some(p) = procfs_process(pid) else {
        return;
    };
    black_box(p.stat().map(|s| s.tpgid).ok());
    black_box(p.task_from_tid(p.pid).and_then(|t| t.children()).ok());
}

fn procfs_process(pid: u32) -> Option<procfs::process::Process> {
    procfs::process::Process::new(i32::try_from(pid).ok()?).ok()
}

/// The hand-written single read of `stat`, parsed by procfs (`Stat::from_read` on the bytes).
fn stat_read_procfs_parse(pid: u32) {
    use procfs::FromRead as _;
    use std::io::Read as _;
    let Ok(mut f) = std::fs::File::open(format!("/proc/{pid}/stat")) else {
        return;
    };
    let mut buf = vec![0u8; 4096];
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    black_box(
        procfs::process::Stat::from_read(&buf[..n])
            .map(|s| s.tpgid)
            .ok(),
    );
}

fn calls() -> Vec<(&'static str, Call)> {
    vec![
        ("procfs tpgid", |p| {
            black_box(
                procfs_process(p)
                    .and_then(|p| p.stat().ok())
                    .map(|s| s.tpgid),
            );
        }),
        ("procfs children", |p| {
            let c = procfs_process(p).and_then(|p| p.task_from_tid(p.pid).ok());
            black_box(c.and_then(|t| t.children().ok()));
        }),
        ("procfs look", procfs_look),
        ("tpgid procfs parse", stat_read_procfs_parse),
        ("tpgid", |p| {
            black_box(foreground::tpgid(p));
        }),
        ("main_children", |p| {
            black_box(foreground::main_children(p));
        }),
        ("look", look),
        ("kept look", kept_look),
        ("read_proc", |p| {
            black_box(foreground::read_proc(p));
        }),
        ("probe", |p| {
            black_box(foreground::probe(p));
        }),
    ]
}

fn call(name: &str) -> Call {
    calls()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| f)
        .unwrap_or_else(|| panic!("no call named {name}"))
}

// ---------------------------------------------------------------------------------------------
// The fixture: a private tmux server whose panes run interactive shells with a job each.

struct Fixture {
    server: String,
    /// Every process of the panes' trees, ended by pid on drop.
    pids: Vec<u32>,
    /// `bash` running `sleep 300 | cat`.
    pipeline: u32,
    /// `bash` running a `sh` with 40 `sleep`s.
    wide: u32,
}

fn tmux(server: &str, args: &[&str]) -> Option<String> {
    let out = Command::new("tmux")
        .args(["-L", server, "-f", "/dev/null"])
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Starts a pane running an interactive `bash`, types `job` into it and waits until `probe`
/// sees at least `procs` processes in its foreground job. Returns the pane's pid.
fn pane_with_job(fx: &mut Fixture, first: bool, job: &str, procs: usize) -> u32 {
    let shell = "exec bash --norc --noprofile";
    let print = ["-d", "-P", "-F", "#{pane_id} #{pane_pid}"];
    let made = if first {
        let size = ["-s", "p", "-x", "120", "-y", "40", shell];
        tmux(&fx.server, &[&["new-session"][..], &print, &size].concat())
    } else {
        tmux(
            &fx.server,
            &[&["new-window"][..], &print, &["-t", "p", shell]].concat(),
        )
    };
    let made = made.expect("tmux starts a pane");
    let (target, pid) = made.split_once(' ').expect("a pane id and pid");
    let pid: u32 = pid.parse().expect("a pane pid");
    fx.pids.push(pid);
    tmux(&fx.server, &["send-keys", "-t", target, job, "Enter"]).expect("tmux types");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let fg = foreground::probe(pid);
        fx.pids.extend(fg.procs.iter().map(|p| p.pid));
        if fg.tpgid.is_some_and(|t| t != pid) && fg.procs.len() >= procs {
            return pid;
        }
        assert!(Instant::now() < deadline, "the job {job:?} did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Fixture {
    fn start() -> Fixture {
        let mut fx = Fixture {
            server: format!("ttproc{}", std::process::id()),
            pids: Vec::new(),
            pipeline: 0,
            wide: 0,
        };
        fx.pipeline = pane_with_job(&mut fx, true, "sleep 300 | cat", 2);
        fx.wide = pane_with_job(
            &mut fx,
            false,
            "sh -c 'for i in $(seq 40); do sleep 300 & done; wait'",
            41,
        );
        fx
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(pid) = tmux(&self.server, &["display-message", "-p", "#{pid}"]) {
            self.pids.push(pid.parse().unwrap_or(0));
        }
        let _ = tmux(&self.server, &["kill-server"]);
        self.pids.sort_unstable();
        self.pids.dedup();
        self.pids.retain(|&p| p > 1);
        if !self.pids.is_empty() {
            let _ = Command::new("kill")
                .arg("-KILL")
                .args(self.pids.iter().map(u32::to_string))
                .stderr(Stdio::null())
                .status();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Measuring.

/// Median time per call over 11 samples of about 20 ms each, and allocations per call.
fn time(f: Call, pid: u32) -> (f64, f64) {
    for _ in 0..100 {
        f(pid);
    }
    let mut n = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..n {
            f(pid);
        }
        if t.elapsed() >= Duration::from_millis(20) {
            break;
        }
        n *= 2;
    }
    let mut samples = Vec::new();
    let mut allocs = 0;
    for _ in 0..11 {
        let a = ALLOCS.load(Ordering::Relaxed);
        let t = Instant::now();
        for _ in 0..n {
            f(pid);
        }
        samples.push(t.elapsed().as_nanos() as f64 / n as f64);
        allocs += ALLOCS.load(Ordering::Relaxed) - a;
    }
    samples.sort_by(|a, b| a.total_cmp(b));
    (samples[5], allocs as f64 / (11 * n) as f64)
}

/// `strace -f -c` of this binary making `name`'s call `n` times on `pid`: calls per syscall.
fn strace(name: &str, n: u64, pid: u32) -> Option<BTreeMap<String, u64>> {
    let exe = std::env::current_exe().ok()?;
    let out = std::env::temp_dir().join(format!("ttproc-strace-{}", std::process::id()));
    let status = Command::new("strace")
        .arg("-f")
        .arg("-c")
        .arg("-o")
        .arg(&out)
        .arg("--")
        .arg(exe)
        .args(["--loop", name, &n.to_string(), &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    let text = std::fs::read_to_string(&out).ok();
    let _ = std::fs::remove_file(&out);
    if !status.success() {
        return None;
    }
    // Rows: % time, seconds, usecs/call, calls, [errors,] syscall.
    let mut counts = BTreeMap::new();
    for line in text?.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 5 || f[f.len() - 1] == "total" {
            continue;
        }
        if let Ok(calls) = f[3].parse::<u64>() {
            counts.insert(f[f.len() - 1].to_string(), calls);
        }
    }
    Some(counts)
}

/// System calls per call of `name` on `pid`, by syscall, from two strace runs.
fn syscalls(name: &str, pid: u32, n: u64) -> Option<(f64, String)> {
    let once = strace(name, 1, pid)?;
    let many = strace(name, n + 1, pid)?;
    let mut total = 0.0;
    let mut parts = Vec::new();
    for (sys, &c) in &many {
        let per = c.saturating_sub(once.get(sys).copied().unwrap_or(0)) as f64 / n as f64;
        if per >= 0.005 {
            total += per;
            parts.push(format!("{sys} {}", fmt(per)));
        }
    }
    Some((total, parts.join(", ")))
}

fn fmt(x: f64) -> String {
    if (x - x.round()).abs() < 0.005 {
        format!("{}", x.round())
    } else {
        format!("{x:.2}")
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--loop") {
        // Child under strace: make the call n times and exit.
        let f = call(&args[i + 1]);
        let n: u64 = args[i + 2].parse().expect("a count");
        let pid: u32 = args[i + 3].parse().expect("a pid");
        for _ in 0..n {
            f(pid);
        }
        return;
    }
    let has_strace = Command::new("strace")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let fx = Fixture::start();
    let me = std::process::id();
    let rows: &[(&str, &str, u32, u64)] = &[
        ("tpgid", "self", me, 2000),
        ("procfs tpgid", "self", me, 2000),
        ("tpgid procfs parse", "self", me, 2000),
        ("main_children", "self", me, 2000),
        ("procfs children", "self", me, 2000),
        ("look", "self", me, 2000),
        ("procfs look", "self", me, 2000),
        ("tpgid", "shell", fx.pipeline, 2000),
        ("procfs tpgid", "shell", fx.pipeline, 2000),
        ("main_children", "shell", fx.pipeline, 2000),
        ("procfs children", "shell", fx.pipeline, 2000),
        ("look", "shell", fx.pipeline, 2000),
        ("procfs look", "shell", fx.pipeline, 2000),
        ("read_proc", "shell", fx.pipeline, 2000),
        ("probe", "pipeline (3)", fx.pipeline, 200),
        ("probe", "wide (42)", fx.wide, 50),
    ];
    println!(
        "{:<19} {:<13} {:>10} {:>8} {:>9}  by syscall",
        "call", "pid", "ns/call", "allocs", "syscalls"
    );
    for &(name, label, pid, n) in rows {
        let f = call(name);
        let (ns, allocs) = time(f, pid);
        let (sys, parts) = if has_strace {
            syscalls(name, pid, n).unwrap_or((f64::NAN, "strace failed".into()))
        } else {
            (f64::NAN, "no strace on the PATH".into())
        };
        println!(
            "{name:<19} {label:<13} {ns:>10.0} {:>8} {:>9}  {parts}",
            fmt(allocs),
            fmt(sys)
        );
    }
    drop(fx);
}
