//! End-to-end load benchmark: one private tmux server with 50 panes (44 idle shells, 5 fake
//! Claude Code agents replaying a real recording at its recorded pace, 1 pane streaming as fast
//! as it can), watched in turn by the sidecar and by a baseline poller (`capture-pane` per pane
//! every 500 ms plus a regex pass), each for the same duration. Prints CPU, peak RSS, detection
//! latency, missed transitions and the tmux server's own CPU for each, and their ratios; then the
//! streaming pane's cost and the sidecar's peak RSS at 100 panes.
//!
//! `cargo bench --bench load [-- --duration SECS] [-- --quick]` (also `LOAD_DURATION`,
//! `LOAD_QUICK=1`). The same binary is also the fake agent (run through a symlink named `claude`)
//! and the poller (`--poll`), so every measured process is a separate process.
#![allow(missing_docs)]

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use regex::Regex;
use thinkterm_sidecar::ipc::schema::StateEvent;

#[path = "../tests/support/fixtures.rs"]
mod fixtures;

/// The recording the fake agents replay, under `tests/fixtures/agents`.
const FIXTURE: &str = "claude-code/2.1.328";
const RAW: &str = "raw-main-120x40.bin";
const AGENTS: usize = 5;
const IDLE_SHELLS: usize = 44;
const SESSIONS: usize = 5;
/// Quiet time after the last recorded frame before the replay loops.
const LOOP_TAIL_S: f64 = 1.5;
/// Pace of the chunks written between two frames of the same state.
const CHUNK_S: f64 = 0.05;
/// A labelled state stays on screen at least this long before the next bytes go out (longer
/// than the spec's 450 ms debounce; see `schedule`).
const DWELL_S: f64 = 1.0;
/// Transitions written in the last `GRACE` of a run are not scored (nothing could see them yet).
const GRACE: Duration = Duration::from_secs(3);
const POLL_EVERY: Duration = Duration::from_millis(500);
/// The streaming pane's program.
const STREAM: &str = "exec yes thinkterm load stream";

// ---------------------------------------------------------------------------------------------
// Cleanup: every process and server we start is registered here and killed by pid at the end,
// on panic, and by the watchdog.

enum Owned {
    Pid(u32),
    Server {
        name: String,
        pid: u32,
        socket: PathBuf,
    },
}

static OWNED: Mutex<Vec<Owned>> = Mutex::new(Vec::new());
/// The run's temporary directory, removed by `cleanup` (an interrupted run skips its drop).
static SCRATCH: Mutex<Option<PathBuf>> = Mutex::new(None);

fn own(o: Owned) {
    if let Ok(mut v) = OWNED.lock() {
        v.push(o);
    }
}

fn kill_pid(pid: u32, sig: &str) {
    let _ = Command::new("kill")
        .args([sig, &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

fn cleanup() {
    let owned: Vec<Owned> = match OWNED.lock() {
        Ok(mut v) => v.drain(..).collect(),
        Err(_) => return,
    };
    for o in owned.iter().rev() {
        match o {
            Owned::Pid(pid) => kill_pid(*pid, "-KILL"),
            Owned::Server { name, pid, socket } => {
                let _ = tmux_cmd(name, &["kill-server"]);
                kill_pid(*pid, "-KILL");
                let _ = std::fs::remove_file(socket);
            }
        }
    }
    if let Some(dir) = SCRATCH.lock().ok().and_then(|mut d| d.take()) {
        let _ = std::fs::remove_dir_all(dir);
    }
}

// ---------------------------------------------------------------------------------------------
// Small helpers.

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn tmux_cmd(name: &str, args: &[&str]) -> Option<String> {
    let out = Command::new("tmux")
        .args(["-L", name, "-f", "/dev/null"])
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn tmux(name: &str, args: &[&str]) -> String {
    tmux_cmd(name, args).unwrap_or_else(|| panic!("tmux {args:?} failed"))
}

fn wait_until<T>(limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() > deadline {
            eprintln!("load: gave up after {limit:?} waiting for {what}");
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

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
fn cpu_ticks(pid: u32) -> Option<(u32, u64, u64)> {
    let f = stat_fields(pid)?;
    // after ')': state(0) ppid(1) pgrp(2) session(3) tty(4) tpgid(5) flags(6) minflt(7)
    // cminflt(8) majflt(9) cmajflt(10) utime(11) stime(12) cutime(13) cstime(14)
    Some((f[1] as u32, f[11] + f[12], f[13] + f[14]))
}

fn clk_tck() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
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

/// A CPU meter over a process tree.
struct CpuMeter {
    root: u32,
    start: (HashMap<u32, u64>, u64),
}

impl CpuMeter {
    fn start(root: u32) -> CpuMeter {
        CpuMeter {
            root,
            start: tree_ticks(root),
        }
    }

    /// CPU seconds since `start`: the whole tree, and the root process alone.
    fn seconds(&self, tck: f64) -> (f64, f64) {
        let (now, reaped) = tree_ticks(self.root);
        let mut t: u64 = 0;
        for (pid, v) in &now {
            t += v.saturating_sub(self.start.0.get(pid).copied().unwrap_or(0));
        }
        t += reaped.saturating_sub(self.start.1);
        let own = now
            .get(&self.root)
            .copied()
            .unwrap_or(0)
            .saturating_sub(self.start.0.get(&self.root).copied().unwrap_or(0));
        (t as f64 / tck, own as f64 / tck)
    }
}

fn vm_kb(pid: u32, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn children(pid: u32) -> Vec<u32> {
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

// ---------------------------------------------------------------------------------------------
// The recording: frames with offsets, times and ground-truth states.

#[derive(Clone, Debug)]
struct Frame {
    t: f64,
    offset: usize,
    state: String,
    label: String,
}

fn fixture_dir() -> PathBuf {
    fixtures::path(FIXTURE)
}

fn load_frames(dir: &Path) -> Vec<Frame> {
    let mut frames = Vec::new();
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    names.sort();
    for p in names {
        if p.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        if v["raw_file"].as_str() != Some(RAW) {
            continue;
        }
        let (Some(t), Some(offset), Some(state)) = (
            v["t_since_start"].as_f64(),
            v["raw_offset"].as_u64(),
            v["state"].as_str(),
        ) else {
            continue;
        };
        frames.push(Frame {
            t,
            offset: offset as usize,
            state: state.to_string(),
            label: v["label"].as_str().unwrap_or("").to_string(),
        });
    }
    frames.sort_by(|a, b| a.offset.cmp(&b.offset).then(a.t.total_cmp(&b.t)));
    frames
}

/// One write of the replay: at `t` seconds into the loop, bytes `from..to` (after a terminal
/// reset when `reset`); `label` when this write is the one that changes the ground-truth state.
struct Step {
    t: f64,
    from: usize,
    to: usize,
    reset: bool,
    label: Option<(String, String)>,
}

/// Between two frames of the same state the bytes go out in `CHUNK_S` chunks at the recorded
/// pace (spinners, redraws); the bytes between two frames of different states go out in one
/// write at the later frame's time, so the instant the screen changes state is known exactly.
/// After such a write the next bytes wait `DWELL_S`: the recording only fixes the pace at its
/// frames, and between two frames of one state it can pass through others (after frame 010 the
/// next prompt's working and blocked screens come before frame 011's idle), which would
/// otherwise leave the labelled state on screen for less than the debounce.
fn schedule(frames: &[Frame], len: usize) -> (Vec<Step>, f64) {
    let mut steps = Vec::new();
    let (mut t0, mut o0, mut prev): (f64, usize, Option<&str>) = (0.0, 0, None);
    let mut prev_labelled = false;
    for (i, f) in frames.iter().enumerate() {
        let changes = prev.is_some_and(|p| p != f.state);
        if changes || f.offset == o0 {
            steps.push(Step {
                t: f.t,
                from: o0,
                to: f.offset,
                reset: i == 0,
                label: changes.then(|| (f.state.clone(), f.label.clone())),
            });
        } else {
            if prev_labelled {
                t0 = (t0 + DWELL_S).min(f.t);
            }
            let n = (((f.t - t0) / CHUNK_S).floor() as usize).clamp(1, f.offset - o0);
            for j in 0..n {
                let a = o0 + (f.offset - o0) * j / n;
                let b = o0 + (f.offset - o0) * (j + 1) / n;
                steps.push(Step {
                    t: t0 + (f.t - t0) * (j + 1) as f64 / n as f64,
                    from: a,
                    to: b,
                    reset: i == 0 && j == 0,
                    label: None,
                });
            }
        }
        prev_labelled = changes;
        t0 = f.t;
        o0 = f.offset;
        prev = Some(&f.state);
    }
    if o0 < len {
        steps.push(Step {
            t: t0 + 0.5,
            from: o0,
            to: len,
            reset: false,
            label: None,
        });
    }
    (steps, t0 + LOOP_TAIL_S)
}

/// Fake agent mode: `claude RAW FRAMES_DIR PHASE_S LOG`. Replays forever from `PHASE_S` into the
/// loop; logs `UNIX_MS STATE LABEL` for every labelled state change it writes.
fn replay(args: &[String]) -> ! {
    let raw = std::fs::read(&args[0]).unwrap_or_default();
    let frames = load_frames(Path::new(&args[1]));
    let phase: f64 = args[2].parse().unwrap_or(0.0);
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args[3])
        .ok();
    // A real TUI puts its tty in raw mode: otherwise tmux's answers to its queries would echo.
    let _ = Command::new("stty").args(["raw", "-echo"]).status();
    let (steps, period) = schedule(&frames, raw.len());
    // tmux resumes a pane's stopped program at once, so pausing is a file: `LOG.pause`.
    let pause = PathBuf::from(format!("{}.pause", args[3]));
    let mut out = std::io::stdout().lock();
    let mut base = Instant::now() - Duration::from_secs_f64(phase);
    let start = Instant::now();
    for lap in 0u64.. {
        for s in &steps {
            while pause.exists() {
                std::thread::sleep(Duration::from_millis(50));
            }
            let due = base + Duration::from_secs_f64(lap as f64 * period + s.t);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            } else if due > start && now - due > Duration::from_secs(1) {
                // We were stopped (SIGSTOP) or starved: keep the pace from here, no burst.
                base += now - due;
            }
            if s.reset {
                let _ = out.write_all(b"\x1bc");
            }
            let _ = out.write_all(&raw[s.from..s.to]);
            let _ = out.flush();
            if let (Some((state, label)), Some(log)) = (&s.label, log.as_mut()) {
                if due >= start {
                    let _ = writeln!(log, "{} {state} {label}", unix_ms());
                    let _ = log.flush();
                }
            }
        }
    }
    std::process::exit(0)
}

// ---------------------------------------------------------------------------------------------
// The baseline poller: what typical peers do.

/// Poller mode: `--poll SERVER LOG`. Every 500 ms: list panes, `tmux capture-pane -p` each as
/// its own process, regex pass; logs `UNIX_MS PANE STATE` whenever a pane's verdict changes.
fn poll(args: &[String]) -> ! {
    let server = &args[0];
    let mut log = std::fs::File::create(&args[1]).ok();
    let blocked = Regex::new(r"(?i)do you want to proceed\?|esc to cancel").ok();
    let working = Regex::new(r"(?i)esc to interrupt").ok();
    let mut last: HashMap<String, &'static str> = HashMap::new();
    let mut next = Instant::now();
    loop {
        let panes = tmux_cmd(server, &["list-panes", "-a", "-F", "#{pane_id}"]).unwrap_or_default();
        for pane in panes.split_whitespace() {
            let Some(screen) = tmux_cmd(server, &["capture-pane", "-p", "-t", pane]) else {
                continue;
            };
            let state = if blocked.as_ref().is_some_and(|r| r.is_match(&screen)) {
                "blocked"
            } else if working.as_ref().is_some_and(|r| r.is_match(&screen)) {
                "working"
            } else {
                "idle"
            };
            if last.get(pane) != Some(&state) {
                last.insert(pane.to_string(), state);
                if let Some(log) = log.as_mut() {
                    let _ = writeln!(log, "{} {pane} {state}", unix_ms());
                    let _ = log.flush();
                }
            }
        }
        next += POLL_EVERY;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The load.

struct Load {
    server: String,
    server_pid: u32,
    dir: PathBuf,
    /// Agent panes and their transition logs.
    agents: Vec<(String, PathBuf)>,
    /// The streaming pane.
    stream: String,
    shells: usize,
}

fn build_load(dir: &Path) -> Load {
    let server = format!("ttload{}", std::process::id());
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir bin");
    let exe = std::env::current_exe().expect("current exe");
    let claude = bin.join("claude");
    std::os::unix::fs::symlink(&exe, &claude).expect("symlink claude");
    let fixtures = fixture_dir();
    let raw = fixtures.join(RAW);
    assert!(raw.exists(), "missing recording {}", raw.display());
    let frames = load_frames(&fixtures);
    assert!(
        !frames.is_empty(),
        "no frames for {RAW} in {}",
        fixtures.display()
    );
    let (_, period) = schedule(&frames, 0);
    let mut agents = Vec::new();
    let mut server_pid = 0;
    for k in 0..SESSIONS {
        let log = dir.join(format!("agent-{k}.log"));
        let phase = format!("{:.3}", period * k as f64 / AGENTS as f64);
        let sess = format!("s{k}");
        let pane = tmux(
            &server,
            &[
                "new-session",
                "-d",
                "-s",
                &sess,
                "-x",
                "120",
                "-y",
                "40",
                "-P",
                "-F",
                "#{pane_id}",
                &claude.to_string_lossy(),
                &raw.to_string_lossy(),
                &fixtures.to_string_lossy(),
                &phase,
                &log.to_string_lossy(),
            ],
        );
        if k == 0 {
            server_pid = tmux(&server, &["display-message", "-p", "#{pid}"])
                .trim()
                .parse()
                .expect("server pid");
            let socket = tmux(&server, &["display-message", "-p", "#{socket_path}"]);
            own(Owned::Server {
                name: server.clone(),
                pid: server_pid,
                socket: PathBuf::from(socket.trim()),
            });
        }
        agents.push((pane.trim().to_string(), log));
    }
    let stream = tmux(
        &server,
        &[
            "new-window",
            "-d",
            "-t",
            "s0",
            "-P",
            "-F",
            "#{pane_id}",
            STREAM,
        ],
    )
    .trim()
    .to_string();
    let mut load = Load {
        server,
        server_pid,
        dir: dir.to_path_buf(),
        agents,
        stream,
        shells: 0,
    };
    add_shells(&mut load, IDLE_SHELLS);
    load
}

fn add_shells(load: &mut Load, n: usize) {
    for i in 0..n {
        let sess = format!("s{}", (load.shells + i) % SESSIONS);
        tmux(&load.server, &["new-window", "-d", "-t", &sess, "sh"]);
    }
    load.shells += n;
}

fn pane_count(load: &Load) -> usize {
    tmux(&load.server, &["list-panes", "-a", "-F", "#{pane_id}"])
        .split_whitespace()
        .count()
}

/// Pauses or resumes every fake agent (see `replay`).
fn set_agents_paused(load: &Load, paused: bool) {
    for (_, log) in &load.agents {
        let f = PathBuf::from(format!("{}.pause", log.display()));
        if paused {
            let _ = std::fs::write(&f, b"");
        } else {
            let _ = std::fs::remove_file(&f);
        }
    }
}

/// Starts or stops the streaming pane's program (the pane stays, with a quiet `sh` when off).
fn set_stream(load: &Load, on: bool) {
    let prog = if on { STREAM } else { "exec sh" };
    tmux(
        &load.server,
        &["respawn-pane", "-k", "-t", &load.stream, prog],
    );
}

/// Labelled transitions written in `[from, to)`: pane → (unix ms, state, label).
fn transitions(load: &Load, from: u64, to: u64) -> BTreeMap<String, Vec<(u64, String, String)>> {
    let mut out = BTreeMap::new();
    for (pane, log) in &load.agents {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let v: Vec<(u64, String, String)> = text
            .lines()
            .filter_map(|l| {
                let mut it = l.splitn(3, ' ');
                let t = it.next()?.parse().ok()?;
                Some((
                    t,
                    it.next()?.to_string(),
                    it.next().unwrap_or("").to_string(),
                ))
            })
            .filter(|(t, _, _)| *t >= from && *t < to)
            .collect();
        out.insert(pane.clone(), v);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Scoring.

#[derive(Default)]
struct Score {
    latencies_ms: Vec<u64>,
    /// (latency, "pane state (label)") for every detected transition.
    detail: Vec<(u64, String)>,
    /// Latencies by the state the transition goes to.
    by_state: BTreeMap<String, Vec<u64>>,
    missed: Vec<String>,
    total: usize,
}

/// For each transition, the first detection on its pane of the new state at or after it and
/// before the pane's next transition; none = missed.
fn score(
    trans: &BTreeMap<String, Vec<(u64, String, String)>>,
    detections: &[(u64, String, String)],
    end_ms: u64,
) -> Score {
    let mut s = Score::default();
    for (pane, list) in trans {
        for (i, (t, state, label)) in list.iter().enumerate() {
            s.total += 1;
            let until = list.get(i + 1).map(|n| n.0).unwrap_or(end_ms);
            let hit = detections
                .iter()
                .filter(|(dt, dp, ds)| dp == pane && ds == state && *dt >= *t && *dt < until)
                .map(|(dt, _, _)| *dt)
                .min();
            match hit {
                Some(dt) => {
                    s.latencies_ms.push(dt - t);
                    s.detail.push((dt - t, format!("{pane} {state} ({label})")));
                    s.by_state.entry(state.clone()).or_default().push(dt - t);
                }
                None => s.missed.push(format!("{pane} {state} ({label})")),
            }
        }
    }
    s.latencies_ms.sort_unstable();
    s.detail.sort_by_key(|d| std::cmp::Reverse(d.0));
    for v in s.by_state.values_mut() {
        v.sort_unstable();
    }
    s
}

fn pct(v: &[u64], p: f64) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    let i = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    Some(v[i])
}

struct RunResult {
    name: String,
    cpu_s: f64,
    /// The measured process alone (without its children).
    own_cpu_s: f64,
    rss_kb: u64,
    extra_rss: String,
    tmux_cpu_s: f64,
    wall_s: f64,
    score: Option<Score>,
    note: String,
}

// ---------------------------------------------------------------------------------------------
// Runs.

struct SidecarEnv {
    root: PathBuf,
}

impl SidecarEnv {
    fn new(dir: &Path, tag: &str) -> SidecarEnv {
        let root = dir.join(format!("xdg-{tag}"));
        for d in ["run", "config", "state"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir xdg");
        }
        SidecarEnv { root }
    }

    fn cmd(&self, server: &str, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_thinkterm-sidecar"));
        c.args(["-L", server])
            .args(args)
            .env("XDG_RUNTIME_DIR", self.root.join("run"))
            .env("XDG_CONFIG_HOME", self.root.join("config"))
            .env("XDG_STATE_HOME", self.root.join("state"))
            .env("THINKTERM_DISABLE_SOUND", "1")
            .env_remove("TMUX")
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .stdin(Stdio::null());
        c
    }

    /// Panes the daemon has identified as agents; None while it does not answer.
    fn identified(&self, server: &str) -> Option<usize> {
        let out = self.cmd(server, &["agents", "--json"]).output().ok()?;
        if !out.status.success() {
            return None;
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        Some(
            v["panes"]
                .as_array()?
                .iter()
                .filter(|p| !p["agent"].is_null())
                .count(),
        )
    }
}

fn stop(child: &mut Child) {
    kill_pid(child.id(), "-TERM");
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

type Detections = Arc<Mutex<Vec<(u64, String, String)>>>;

/// Runs the sidecar daemon on the load for `dur`; scores it when `scored`.
fn run_sidecar(load: &Load, tag: &str, dur: Duration, scored: bool, tck: f64) -> RunResult {
    let env = SidecarEnv::new(&load.dir, tag);
    let log = std::fs::File::create(load.dir.join(format!("sidecar-{tag}.log"))).expect("log");
    let mut daemon = env
        .cmd(&load.server, &["run"])
        .env("THINKTERM_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start sidecar");
    own(Owned::Pid(daemon.id()));
    let want = load.agents.len();
    let ready = wait_until(
        Duration::from_secs(30),
        "the sidecar to identify the agents",
        || env.identified(&load.server).filter(|n| *n >= want),
    );
    let mut note = String::new();
    if ready.is_none() {
        note.push_str("agents not all identified before the run; ");
    }
    let detections: Detections = Arc::default();
    let mut events = env
        .cmd(&load.server, &["events", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start events client");
    own(Owned::Pid(events.id()));
    let stdout = events.stdout.take().expect("events stdout");
    let sink = detections.clone();
    let reader = std::thread::spawn(move || {
        let mut n = 0usize;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let at = unix_ms();
            n += 1;
            if let Ok(e) = serde_json::from_str::<StateEvent>(&line) {
                if let (Ok(mut v), Some(new)) = (sink.lock(), e.new) {
                    v.push((at, e.pane.to_string(), new.as_str().to_string()));
                }
            }
        }
        n
    });
    // Let the subscription settle before measuring.
    std::thread::sleep(Duration::from_millis(500));
    let cpu = CpuMeter::start(daemon.id());
    let tmux_cpu = CpuMeter::start(load.server_pid);
    let t0 = unix_ms();
    let started = Instant::now();
    std::thread::sleep(dur);
    let wall_s = started.elapsed().as_secs_f64();
    let t1 = unix_ms();
    let (cpu_s, own_cpu_s) = cpu.seconds(tck);
    // The server's own CPU: its tree would add every pane's program (`yes` included).
    let (_, tmux_cpu_s) = tmux_cpu.seconds(tck);
    let rss_kb = vm_kb(daemon.id(), "VmHWM:").unwrap_or(0);
    let kids = children(daemon.id());
    let kids_rss: u64 = kids.iter().filter_map(|p| vm_kb(*p, "VmHWM:")).sum();
    let extra_rss = format!(
        "+ {} child process(es), {:.1} MB",
        kids.len(),
        kids_rss as f64 / 1024.0
    );
    stop(&mut events);
    stop(&mut daemon);
    let lines = reader.join().unwrap_or(0);
    let score = scored.then(|| {
        let trans = transitions(load, t0, t1.saturating_sub(GRACE.as_millis() as u64));
        let det = detections.lock().map(|v| v.clone()).unwrap_or_default();
        score(&trans, &det, t1)
    });
    if lines == 0 {
        note.push_str("`events --json` printed nothing during the run");
    }
    RunResult {
        name: format!("sidecar ({tag})"),
        cpu_s,
        own_cpu_s,
        rss_kb,
        extra_rss,
        tmux_cpu_s,
        wall_s,
        score,
        note,
    }
}

/// Runs the baseline poller on the load for `dur`.
fn run_poller(load: &Load, dur: Duration, tck: f64) -> RunResult {
    let log = load.dir.join("poller.log");
    let mut poller = Command::new(std::env::current_exe().expect("current exe"))
        .arg("--poll")
        .arg(&load.server)
        .arg(&log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("start poller");
    own(Owned::Pid(poller.id()));
    // Its first sweep sets every pane's initial verdict; measure from then on.
    wait_until(Duration::from_secs(30), "the poller's first sweep", || {
        let n = std::fs::read_to_string(&log).ok()?.lines().count();
        (n >= load.agents.len()).then_some(())
    });
    std::thread::sleep(POLL_EVERY);
    let cpu = CpuMeter::start(poller.id());
    let tmux_cpu = CpuMeter::start(load.server_pid);
    let t0 = unix_ms();
    let started = Instant::now();
    std::thread::sleep(dur);
    let wall_s = started.elapsed().as_secs_f64();
    let t1 = unix_ms();
    let (cpu_s, own_cpu_s) = cpu.seconds(tck);
    // The server's own CPU: its tree would add every pane's program (`yes` included).
    let (_, tmux_cpu_s) = tmux_cpu.seconds(tck);
    let rss_kb = vm_kb(poller.id(), "VmHWM:").unwrap_or(0);
    stop(&mut poller);
    let det: Vec<(u64, String, String)> = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut it = l.split(' ');
            Some((
                it.next()?.parse().ok()?,
                it.next()?.to_string(),
                it.next()?.to_string(),
            ))
        })
        .collect();
    let trans = transitions(load, t0, t1.saturating_sub(GRACE.as_millis() as u64));
    RunResult {
        name: "baseline poller (b)".into(),
        cpu_s,
        own_cpu_s,
        rss_kb,
        extra_rss: "(capture-pane children not included)".into(),
        tmux_cpu_s,
        wall_s,
        score: Some(score(&trans, &det, t1)),
        note: String::new(),
    }
}

// ---------------------------------------------------------------------------------------------
// Report.

fn ms(v: Option<u64>) -> String {
    v.map(|v| format!("{v} ms")).unwrap_or_else(|| "n/a".into())
}

fn print_row(r: &RunResult) {
    let (p50, p95, max, missed) = match &r.score {
        Some(s) => (
            ms(pct(&s.latencies_ms, 0.50)),
            ms(pct(&s.latencies_ms, 0.95)),
            ms(s.latencies_ms.last().copied()),
            format!("{} / {}", s.missed.len(), s.total),
        ),
        None => ("-".into(), "-".into(), "-".into(), "-".into()),
    };
    println!(
        "| {} | {:.2} s ({:.1} % of a core; itself {:.2} s) | {:.1} MB {} | {p50} | {p95} | {max} | {missed} | {:.2} s |",
        r.name,
        r.cpu_s,
        100.0 * r.cpu_s / r.wall_s,
        r.own_cpu_s,
        r.rss_kb as f64 / 1024.0,
        r.extra_rss,
        r.tmux_cpu_s
    );
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.4} (1/{:.0})", a / b, b / a.max(1e-9))
    } else {
        "n/a".into()
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let argv0 = args.first().map(String::as_str).unwrap_or("");
    if Path::new(argv0).file_name().and_then(|n| n.to_str()) == Some("claude") {
        replay(&args[1..]);
    }
    if args.get(1).map(String::as_str) == Some("--poll") {
        poll(&args[2..]);
    }
    let mut quick = std::env::var("LOAD_QUICK").is_ok_and(|v| v != "0");
    let mut dur_s: f64 = std::env::var("LOAD_DURATION")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60.0);
    let mut hold = false;
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--hold" => hold = true,
            "--duration" => {
                dur_s = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--duration SECS")
            }
            _ => {} // `--bench` and criterion-style flags cargo passes
        }
    }
    if quick && std::env::var("LOAD_DURATION").is_err() && !args.iter().any(|a| a == "--duration") {
        dur_s = 10.0;
    }
    let dur = Duration::from_secs_f64(dur_s);
    let side = Duration::from_secs_f64((dur_s / 3.0).clamp(5.0, 20.0));

    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        cleanup();
        default_hook(info);
    }));
    // Ctrl-C or SIGTERM: clean up too.
    std::thread::spawn(|| {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        rt.block_on(async {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut int), Ok(mut term)) = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) else {
                return;
            };
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            eprintln!("load: interrupted, cleaning up");
            cleanup();
            std::process::exit(130);
        });
    });
    // Watchdog: whatever happens, nothing outlives a generous bound.
    let bound = dur * 2 + side * 3 + Duration::from_secs(240);
    std::thread::spawn(move || {
        std::thread::sleep(bound);
        eprintln!("load: watchdog: exceeded {bound:?}, cleaning up");
        cleanup();
        std::process::exit(2);
    });

    let tmp = tempfile::tempdir().expect("tempdir");
    if let Ok(mut d) = SCRATCH.lock() {
        *d = Some(tmp.path().to_path_buf());
    }
    let tck = clk_tck();
    let mut load = build_load(tmp.path());
    let ok = wait_until(Duration::from_secs(20), "50 panes", || {
        (pane_count(&load) >= AGENTS + 1 + IDLE_SHELLS).then_some(())
    });
    assert!(ok.is_some(), "load did not start");
    println!(
        "load: tmux -L {} with {} panes ({AGENTS} fake claude agents, 1 streaming, {} idle shells); {dur_s:.0} s per run",
        load.server,
        pane_count(&load),
        load.shells
    );

    if hold {
        // For profiling by hand: the load stays up until Ctrl-C (the watchdog still bounds it).
        println!(
            "load: holding; stream pane {}, agents' pause files {:?}.pause",
            load.stream,
            load.agents.first().map(|(_, l)| l)
        );
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    eprintln!("load: (a) sidecar, {dur_s:.0} s");
    let sidecar = run_sidecar(&load, "a", dur, true, tck);
    eprintln!("load: (b) baseline poller, {dur_s:.0} s");
    let poller = run_poller(&load, dur, tck);

    // Streaming pane alone: agents paused, so the sidecar's and tmux's CPU are the stream's.
    eprintln!(
        "load: (c) streaming pane alone, {:.0} s",
        side.as_secs_f64()
    );
    set_agents_paused(&load, true);
    let stream = run_sidecar(&load, "c", side, false, tck);
    set_agents_paused(&load, false);

    // Agents and idle shells alone: the streaming pane paused.
    eprintln!(
        "load: (e) sidecar, streaming pane paused, {:.0} s",
        side.as_secs_f64()
    );
    set_stream(&load, false);
    let quiet = run_sidecar(&load, "e", side, true, tck);
    set_stream(&load, true);

    // 100 panes: 50 more idle shells.
    add_shells(&mut load, 50);
    let n100 = pane_count(&load);
    eprintln!(
        "load: (d) sidecar at {n100} panes, {:.0} s",
        side.as_secs_f64()
    );
    let big = run_sidecar(&load, "d", side, false, tck);

    println!();
    println!("| run | CPU (user+sys) | peak RSS (VmHWM) | latency p50 | p95 | max | missed | tmux server CPU |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    print_row(&sidecar);
    print_row(&poller);
    println!();
    println!(
        "sidecar / baseline CPU: {}   (goal ≤ 1/50)",
        ratio(sidecar.cpu_s, poller.cpu_s)
    );
    println!(
        "sidecar / baseline CPU incl. tmux server: {}",
        ratio(
            sidecar.cpu_s + sidecar.tmux_cpu_s,
            poller.cpu_s + poller.tmux_cpu_s
        )
    );
    if let (Some(a), Some(b)) = (&sidecar.score, &poller.score) {
        match (pct(&a.latencies_ms, 0.95), pct(&b.latencies_ms, 0.95)) {
            (Some(x), Some(y)) => println!(
                "sidecar / baseline latency p95: {:.2}",
                x as f64 / y.max(1) as f64
            ),
            _ => println!("sidecar / baseline latency p95: n/a (no detections on one side)"),
        }
        for (who, sc) in [("sidecar", a), ("baseline", b)] {
            let parts: Vec<String> = sc
                .by_state
                .iter()
                .map(|(st, v)| {
                    format!(
                        "to {st}: n={} p50 {} p95 {} max {}",
                        v.len(),
                        ms(pct(v, 0.5)),
                        ms(pct(v, 0.95)),
                        ms(v.last().copied())
                    )
                })
                .collect();
            println!("{who} latency by new state: {}", parts.join("; "));
        }
        for (who, sc) in [("sidecar", a), ("baseline", b)] {
            let slow: Vec<String> = sc
                .detail
                .iter()
                .take(5)
                .map(|(l, what)| format!("{what} {l} ms"))
                .collect();
            println!("{who} slowest: {}", slow.join(", "));
        }
        for m in &a.missed {
            println!("sidecar missed: {m}");
        }
        for m in &b.missed {
            println!("baseline missed: {m}");
        }
    }
    println!(
        "streaming pane alone ({:.0} s, agents paused): sidecar {:.2} s, tmux server {:.2} s: sidecar/tmux {:.0} %   (goal ≤ 25 %)",
        stream.wall_s,
        stream.cpu_s,
        stream.tmux_cpu_s,
        100.0 * stream.cpu_s / stream.tmux_cpu_s.max(1e-9)
    );
    let q_rate = quiet.cpu_s / quiet.wall_s.max(1e-9);
    let p_rate = poller.cpu_s / poller.wall_s.max(1e-9);
    println!(
        "streaming pane paused ({:.0} s): sidecar {:.2} s ({:.2} % of a core), tmux server {:.2} s, latency p95 {}, missed {}; sidecar/baseline CPU per second {}",
        quiet.wall_s,
        quiet.cpu_s,
        100.0 * q_rate,
        quiet.tmux_cpu_s,
        ms(quiet.score.as_ref().and_then(|s| pct(&s.latencies_ms, 0.95))),
        quiet
            .score
            .as_ref()
            .map(|s| format!("{} / {}", s.missed.len(), s.total))
            .unwrap_or_default(),
        ratio(q_rate, p_rate)
    );
    println!(
        "sidecar at {n100} panes ({:.0} s): peak RSS {:.1} MB {}, CPU {:.2} s   (goal ≤ 15 MB)",
        big.wall_s,
        big.rss_kb as f64 / 1024.0,
        big.extra_rss,
        big.cpu_s
    );
    for r in [&sidecar, &stream, &quiet, &big] {
        if !r.note.is_empty() {
            println!("note ({}): {}", r.name, r.note);
        }
    }
    cleanup();
}
