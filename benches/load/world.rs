//! The load: one private tmux server (`tmux -L ttload<pid> -f /dev/null`) with its sessions,
//! fake agents, idle shells, a streaming pane and, for the scale run, sessions created and
//! killed all along. Everything started here is registered and killed by pid at the end, on
//! panic and by the watchdog.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::fixtures;
use super::fixtures::{load_pace, PACE};
use super::replay::{load_frames, schedule, RAW};

// ---------------------------------------------------------------------------------------------
// Cleanup.

pub enum Owned {
    Pid(u32),
    Server {
        name: String,
        pid: u32,
        socket: PathBuf,
    },
}

static OWNED: Mutex<Vec<Owned>> = Mutex::new(Vec::new());
/// The run's temporary directory, removed by `cleanup` (an interrupted run skips its drop).
pub static SCRATCH: Mutex<Option<PathBuf>> = Mutex::new(None);

pub fn own(o: Owned) {
    if let Ok(mut v) = OWNED.lock() {
        v.push(o);
    }
}

pub fn kill_pid(pid: u32, sig: &str) {
    let _ = Command::new("kill")
        .args([sig, &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

pub fn cleanup() {
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
// tmux.

pub fn tmux_cmd(name: &str, args: &[&str]) -> Option<String> {
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

pub fn tmux(name: &str, args: &[&str]) -> String {
    tmux_cmd(name, args).unwrap_or_else(|| panic!("tmux {args:?} failed"))
}

// ---------------------------------------------------------------------------------------------
// What a load is made of.

/// A fake agent: the command it runs as, its recording's folder (`tests/fixtures/agents`),
/// and the folder of a recording of the same version with its pace (`tests/fixtures/paced`),
/// where there is one.
#[derive(Clone, Copy, Debug)]
pub struct AgentKind {
    pub command: &'static str,
    pub fixture: &'static str,
    pub paced: Option<&'static str>,
}

/// Where the paced recordings are: one per agent version, each with its [`super::fixtures::PACE`].
pub const PACED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/paced");

impl AgentKind {
    /// The recording this agent replays: the paced one unless `chunked` (or there is none).
    pub fn recording(&self, chunked: bool) -> PathBuf {
        match self.paced.filter(|_| !chunked) {
            Some(rel) => {
                let p = Path::new(PACED).join(rel);
                assert!(
                    p.join(RAW).exists() && p.join(PACE).exists(),
                    "paced recording missing: {} (see tests/fixtures/README.md)",
                    p.display()
                );
                p
            }
            None => fixtures::version_dir(self.fixture),
        }
    }
}

/// What the load's fake agents write, one line per kind: the replay's writes a second (what
/// costs tmux a turn of its loop each) against the capture's reads a second where the
/// recording has its pace.
pub fn pace_summary(spec: &Spec) -> Vec<String> {
    let mut kinds: Vec<AgentKind> = Vec::new();
    for k in &spec.agents {
        if !kinds.iter().any(|x| x.fixture == k.fixture) {
            kinds.push(*k);
        }
    }
    kinds
        .iter()
        .map(|k| {
            let dir = k.recording(spec.chunked);
            let frames = load_frames(&dir);
            let pace = load_pace(&dir);
            let (steps, period) = schedule(&frames, 0, pace.as_deref());
            let last = frames.last().map_or(0.0, |f| f.t);
            let real = pace.as_ref().map_or(String::new(), |p| {
                let n = p.iter().filter(|r| r.t <= last).count();
                format!(
                    ", the agent {:.1} (its capture's pipe reads)",
                    n as f64 / last
                )
            });
            format!(
                "{}: {:.1} writes a second{real}",
                dir.strip_prefix(env!("CARGO_MANIFEST_DIR"))
                    .unwrap_or(&dir)
                    .display(),
                steps.len() as f64 / period
            )
        })
        .collect()
}

/// The agents with a raw recording whose frames carry their timing.
pub const CLAUDE: AgentKind = AgentKind {
    command: "claude",
    fixture: "claude-code/2.1.332",
    paced: Some("claude-code/2.1.332"),
};
pub const CLAUDE_328: AgentKind = AgentKind {
    command: "claude",
    fixture: "claude-code/2.1.328",
    paced: Some("claude-code/2.1.328"),
};
pub const CODEX: AgentKind = AgentKind {
    command: "codex",
    fixture: "codex/0.171.0",
    paced: Some("codex/0.171.0"),
};
pub const COPILOT: AgentKind = AgentKind {
    command: "copilot",
    fixture: "copilot/1.0.102",
    paced: Some("copilot/1.0.102"),
};
pub const GEMINI: AgentKind = AgentKind {
    command: "gemini",
    fixture: "gemini-cli/0.61.0",
    paced: Some("gemini-cli/0.61.0"),
};
pub const KIMI: AgentKind = AgentKind {
    command: "kimi",
    fixture: "kimi/1.51.0",
    paced: None,
};
pub const OPENCODE: AgentKind = AgentKind {
    command: "opencode",
    fixture: "opencode/1.18.33",
    paced: Some("opencode/1.18.33"),
};
pub const PI: AgentKind = AgentKind {
    command: "pi",
    fixture: "pi/0.73.1",
    paced: Some("pi/0.73.1"),
};

/// The shape of a load.
pub struct Spec {
    pub name: &'static str,
    pub sessions: usize,
    /// One per session, from the first.
    pub agents: Vec<AgentKind>,
    pub shells: usize,
    /// The streaming pane's bytes per second (0: no streaming pane).
    pub stream_rate: u64,
    /// Sessions created and killed all along.
    pub churn: bool,
    /// The agents replay their recordings in 50 ms chunks (the pace of the first twelve
    /// sessions' figures), not at the pace the agents wrote them.
    pub chunked: bool,
    /// Where in its loop each agent starts: drawn from this seed, one fraction of its loop per
    /// agent. Fixed phases gave every run the same sequence of stretches, so each window of a
    /// run saw the same drawing whatever observer it measured (the thirteenth session's A/B
    /// 18); `--seed N` repeats a run's phases.
    pub seed: u64,
}

/// The 50-pane load: 5 sessions, 5 Claude Code agents, 1 streaming pane, 44 idle shells.
pub fn standard() -> Spec {
    Spec {
        name: "50 panes",
        sessions: 5,
        agents: vec![CLAUDE_328; 5],
        shells: 44,
        stream_rate: 1 << 20,
        churn: false,
        chunked: false,
        seed: 0,
    }
}

/// The scale run: 40 sessions, 20 agents (every recording), 1 streaming pane, idle shells up
/// to 210 panes, sessions created and killed all along.
pub fn scale() -> Spec {
    let mut agents = Vec::new();
    for (kind, n) in [
        (CLAUDE, 4),
        (CODEX, 3),
        (GEMINI, 3),
        (COPILOT, 3),
        (KIMI, 3),
        (OPENCODE, 2),
        (PI, 2),
    ] {
        agents.extend(std::iter::repeat_n(kind, n));
    }
    Spec {
        name: "scale",
        sessions: 40,
        agents,
        shells: 210 - 21,
        stream_rate: 1 << 20,
        churn: true,
        chunked: false,
        seed: 0,
    }
}

/// An idle server: `panes` shells in 40 sessions (fewer for fewer panes), nothing written
/// anywhere: what watching a server costs while its agents wait.
pub fn idle(panes: usize) -> Spec {
    Spec {
        name: "idle",
        sessions: panes.clamp(1, 40),
        agents: Vec::new(),
        shells: panes.max(1),
        stream_rate: 0,
        churn: false,
        chunked: false,
        seed: 0,
    }
}

/// The agents' start phases: a splitmix64 sequence from the load's seed, as fractions of a
/// loop in [0, 1).
struct Phases(u64);

impl Phases {
    fn next_fraction(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A fake agent's pane.
pub struct Agent {
    pub pane: String,
    pub log: PathBuf,
    pub kind: AgentKind,
}

pub struct Load {
    pub server: String,
    pub server_pid: u32,
    pub dir: PathBuf,
    pub agents: Vec<Agent>,
    pub stream: String,
    /// Panes made at the start (the churn's come and go).
    pub static_panes: std::collections::HashSet<String>,
    pub churn: Option<Churn>,
    /// A person's client (a real `tmux attach` in a pseudo-terminal) showing session `s0`.
    pub person: Option<std::process::Child>,
}

pub fn build(dir: &Path, spec: &Spec) -> Load {
    let server = format!("ttload{}", std::process::id());
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir bin");
    let exe = std::env::current_exe().expect("current exe");
    let mut agents = Vec::new();
    let mut server_pid = 0;
    let mut phases = Phases(spec.seed);
    for k in 0..spec.sessions {
        let sess = format!("s{k}");
        let mut args: Vec<String> = [
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
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let agent = spec.agents.get(k).copied();
        let mut log = PathBuf::new();
        if let Some(kind) = agent {
            let link = bin.join(kind.command);
            if !link.exists() {
                std::os::unix::fs::symlink(&exe, &link).expect("symlink agent command");
            }
            let fixtures = kind.recording(spec.chunked);
            let raw = fixtures.join(RAW);
            assert!(raw.exists(), "missing recording {}", raw.display());
            let frames = load_frames(&fixtures);
            assert!(
                !frames.is_empty(),
                "no frames for {RAW} in {}",
                fixtures.display()
            );
            let (_, period) = schedule(&frames, 0, load_pace(&fixtures).as_deref());
            log = dir.join(format!("agent-{k}.log"));
            let phase = format!("{:.3}", period * phases.next_fraction());
            args.extend([
                link.to_string_lossy().into_owned(),
                raw.to_string_lossy().into_owned(),
                fixtures.to_string_lossy().into_owned(),
                phase,
                log.to_string_lossy().into_owned(),
            ]);
        } else {
            args.push("sh".into());
        }
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let pane = tmux(&server, &argv);
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
        if let Some(kind) = agent {
            agents.push(Agent {
                pane: pane.trim().to_string(),
                log,
                kind,
            });
        }
    }
    let stream_session = format!("s{}", spec.agents.len() % spec.sessions);
    let stream_cmd = format!("exec '{}' --stream {}", exe.display(), spec.stream_rate);
    let stream = if spec.stream_rate == 0 {
        String::new()
    } else {
        tmux(
            &server,
            &[
                "new-window",
                "-d",
                "-t",
                &stream_session,
                "-P",
                "-F",
                "#{pane_id}",
                &stream_cmd,
            ],
        )
        .trim()
        .to_string()
    };
    // Sessions without an agent already have a shell.
    let mut shells = spec.sessions.saturating_sub(spec.agents.len());
    let mut i = 0;
    while shells < spec.shells {
        let sess = format!("s{}", i % spec.sessions);
        tmux(&server, &["new-window", "-d", "-t", &sess, "sh"]);
        shells += 1;
        i += 1;
    }
    let mut load = Load {
        server,
        server_pid,
        dir: dir.to_path_buf(),
        agents,
        stream,
        static_panes: Default::default(),
        churn: None,
        person: None,
    };
    load.static_panes = tmux(&load.server, &["list-panes", "-a", "-F", "#{pane_id}"])
        .split_whitespace()
        .map(str::to_string)
        .collect();
    load.person = Some(attach_person(&load.server, "s0"));
    if spec.churn {
        load.churn = Some(Churn::start(&load.server));
    }
    load
}

/// Whether the tmux server still runs (a crash must fail the run, never go unseen).
pub fn server_alive(load: &Load) -> bool {
    Path::new(&format!("/proc/{}", load.server_pid)).exists()
}

// ---------------------------------------------------------------------------------------------
// Sessions created and killed all along.

/// A new session every [`Churn::EVERY`] (two windows of `sh`), and the one made
/// [`Churn::KEEP`] steps before it killed: a few churn sessions alive at any time.
pub struct Churn {
    stop: Arc<AtomicBool>,
    pub created: Arc<AtomicU64>,
    pub killed: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Churn {
    const EVERY: Duration = Duration::from_secs(2);
    const KEEP: u64 = 3;

    fn start(server: &str) -> Churn {
        let stop = Arc::new(AtomicBool::new(false));
        let created = Arc::new(AtomicU64::new(0));
        let killed = Arc::new(AtomicU64::new(0));
        let (s, c, k) = (stop.clone(), created.clone(), killed.clone());
        let server = server.to_string();
        let thread = std::thread::spawn(move || {
            let mut next = Instant::now();
            let mut n: u64 = 0;
            while !s.load(Ordering::Relaxed) {
                let name = format!("churn{n}");
                if tmux_cmd(
                    &server,
                    &[
                        "new-session",
                        "-d",
                        "-s",
                        &name,
                        "-x",
                        "120",
                        "-y",
                        "40",
                        "sh",
                    ],
                )
                .is_some()
                {
                    let _ = tmux_cmd(&server, &["new-window", "-d", "-t", &name, "sh"]);
                    c.fetch_add(1, Ordering::Relaxed);
                }
                if n >= Self::KEEP {
                    let old = format!("churn{}", n - Self::KEEP);
                    if tmux_cmd(&server, &["kill-session", "-t", &old]).is_some() {
                        k.fetch_add(1, Ordering::Relaxed);
                    }
                }
                n += 1;
                next += Self::EVERY;
                let now = Instant::now();
                if next > now {
                    std::thread::sleep(next - now);
                }
            }
        });
        Churn {
            stop,
            created,
            killed,
            thread: Some(thread),
        }
    }

    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A person's client: `tmux attach` in a 120x40 pseudo-terminal made by `script`, its screen
/// thrown away. tmux draws for it (status line included) whether an observer runs or not.
fn attach_person(server: &str, session: &str) -> std::process::Child {
    let cmd = format!("stty cols 120 rows 40; exec tmux -L {server} attach -t {session}");
    let mut child = Command::new("script")
        .args(["-qfc", &cmd, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("script (util-linux) for a person's client");
    own(Owned::Pid(child.id()));
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let people =
            tmux_cmd(server, &["list-clients", "-F", "#{client_control_mode}"]).unwrap_or_default();
        if people.lines().any(|l| l == "0") {
            return child;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the person's client did not attach to {session}");
}
