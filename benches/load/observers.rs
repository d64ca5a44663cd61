//! The observers the load is watched by, each started fresh for each of its windows: the
//! sidecar (its daemon, plus `events --json` whose lines are the detections), the baseline
//! poller (the bench binary in `--poll` mode: what typical peers do) and, with `--floor`, bare
//! pipes: `cat > /dev/null` on the agents' and the stream's panes, classifying nothing: the
//! floor of any observer that takes those panes' bytes as they come.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use regex::Regex;
use thinkterm_sidecar::ipc::schema::StateEvent;

use super::meter::{children, vm_kb};
use super::score::Detection;
use super::unix_ms;
use super::world::{kill_pid, own, tmux_cmd, Load, Owned};

pub const POLL_EVERY: Duration = Duration::from_millis(500);

/// Who watches the load.
#[derive(Clone, Debug)]
pub enum Kind {
    /// A sidecar build (`bin`), named `label` in the report.
    Sidecar { label: String, bin: PathBuf },
    /// The baseline poller.
    Poller,
    /// Bare pipes on the agents' and the stream's panes.
    Pipes,
}

impl Kind {
    pub fn label(&self) -> String {
        match self {
            Kind::Sidecar { label, .. } => label.clone(),
            Kind::Poller => "baseline poller".into(),
            Kind::Pipes => "bare pipes (cat)".into(),
        }
    }

    /// Whether it tells states (is scored on the transitions).
    pub fn classifies(&self) -> bool {
        !matches!(self, Kind::Pipes)
    }
}

/// An observer running on the load.
pub struct Running {
    /// The processes metered (with their children): the observer first.
    pub pids: Vec<u32>,
    child: Option<Child>,
    /// Panes whose pipes are ours, closed when it stops (bare pipes).
    pipes: Vec<String>,
    server: String,
    events: Option<(Child, std::thread::JoinHandle<usize>)>,
    detections: Arc<Mutex<Vec<Detection>>>,
    poll_log: Option<PathBuf>,
    /// Where the sidecar's warnings go (its stderr at `THINKTERM_LOG=warn`).
    log: Option<PathBuf>,
    /// From the start of the process to the first complete classification of every pane
    /// (sidecar) or the end of its first sweep (poller).
    pub startup: Option<Duration>,
    pub note: String,
}

/// What an observer left when it was stopped.
pub struct Stopped {
    pub detections: Vec<Detection>,
    /// The sidecar's warning and error lines, as it logged them.
    pub warnings: Vec<String>,
    pub rss_kb: u64,
    pub children: usize,
    pub children_rss_kb: u64,
    pub note: String,
}

struct SidecarEnv {
    root: PathBuf,
    bin: PathBuf,
}

impl SidecarEnv {
    fn new(dir: &Path, tag: &str, bin: &Path) -> SidecarEnv {
        let root = dir.join(format!("xdg-{tag}"));
        for d in ["run", "config", "state"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir xdg");
        }
        SidecarEnv {
            root,
            bin: bin.to_path_buf(),
        }
    }

    fn cmd(&self, server: &str, args: &[&str]) -> Command {
        let mut c = Command::new(&self.bin);
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

    /// Whether every pane of `panes` is listed, every agent pane of `agents` identified and
    /// with a state; None while the daemon does not answer.
    fn classified(
        &self,
        server: &str,
        panes: &HashSet<String>,
        agents: &HashSet<String>,
    ) -> Option<bool> {
        let out = self.cmd(server, &["agents", "--json"]).output().ok()?;
        if !out.status.success() {
            return None;
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        let listed: HashMap<String, &serde_json::Value> = v["panes"]
            .as_array()?
            .iter()
            .filter_map(|p| Some((p["pane"].as_str()?.to_string(), p)))
            .collect();
        Some(
            panes.iter().all(|p| listed.contains_key(p))
                && agents.iter().all(|a| {
                    listed
                        .get(a)
                        .is_some_and(|p| !p["agent"].is_null() && !p["state"].is_null())
                }),
        )
    }
}

pub fn start(load: &Load, kind: &Kind, tag: &str) -> Running {
    match kind {
        Kind::Sidecar { bin, .. } => start_sidecar(load, bin, tag),
        Kind::Poller => start_poller(load, tag),
        Kind::Pipes => start_pipes(load),
    }
}

/// `cat > /dev/null` through `pipe-pane -O` on every agent's pane and the stream's; metered
/// as the `cat` processes (tmux's children).
fn start_pipes(load: &Load) -> Running {
    let mut panes: Vec<String> = load.agents.iter().map(|a| a.pane.clone()).collect();
    if !load.stream.is_empty() {
        panes.push(load.stream.clone());
    }
    let started = Instant::now();
    for p in &panes {
        tmux_cmd(
            &load.server,
            &["pipe-pane", "-O", "-t", p, "exec cat > /dev/null"],
        )
        .unwrap_or_else(|| panic!("pipe-pane on {p} failed"));
    }
    let cats = || -> Vec<u32> {
        children(load.server_pid)
            .into_iter()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "cat")
            })
            .collect()
    };
    let deadline = started + Duration::from_secs(10);
    let mut pids = cats();
    while pids.len() < panes.len() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        pids = cats();
    }
    let note = if pids.len() < panes.len() {
        format!("{} of {} cats started; ", pids.len(), panes.len())
    } else {
        String::new()
    };
    Running {
        pids,
        child: None,
        pipes: panes,
        server: load.server.clone(),
        events: None,
        detections: Arc::default(),
        poll_log: None,
        log: None,
        startup: Some(started.elapsed()),
        note,
    }
}

fn start_sidecar(load: &Load, bin: &Path, tag: &str) -> Running {
    let env = SidecarEnv::new(&load.dir, tag, bin);
    let log_path = match std::env::var("LOAD_TRACE_DIR") {
        Ok(d) => std::path::PathBuf::from(d).join(format!("sidecar-{tag}.log")),
        Err(_) => load.dir.join(format!("sidecar-{tag}.log")),
    };
    let log = std::fs::File::create(&log_path).expect("log");
    let started = Instant::now();
    let daemon = env
        .cmd(&load.server, &["run"])
        .env(
            "THINKTERM_LOG",
            std::env::var("LOAD_SIDECAR_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start sidecar");
    own(Owned::Pid(daemon.id()));
    let agents: HashSet<String> = load.agents.iter().map(|a| a.pane.clone()).collect();
    let mut startup = None;
    let deadline = started + Duration::from_secs(60);
    while Instant::now() < deadline {
        if env.classified(&load.server, &load.static_panes, &agents) == Some(true) {
            startup = Some(started.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut note = String::new();
    if startup.is_none() {
        note.push_str("panes not all classified within 60 s; ");
    }
    // Its start-up is not measured: every pane's pipe in place first (at hundreds of panes the
    // relays' start, one process per pane, goes on after every pane is classified).
    let piped = || {
        tmux_cmd(
            &load.server,
            &["list-panes", "-a", "-F", "#{pane_id} #{pane_pipe}"],
        )
        .is_some_and(|out| {
            out.lines()
                .filter(|l| l.ends_with(" 1"))
                .filter_map(|l| l.split(' ').next())
                .filter(|p| load.static_panes.contains(*p))
                .count()
                == load.static_panes.len()
        })
    };
    while !piped() {
        if Instant::now() > deadline {
            note.push_str("panes not all piped within 60 s; ");
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let detections: Arc<Mutex<Vec<Detection>>> = Arc::default();
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
    Running {
        pids: vec![daemon.id()],
        child: Some(daemon),
        pipes: Vec::new(),
        server: load.server.clone(),
        events: Some((events, reader)),
        detections,
        poll_log: None,
        log: Some(log_path),
        startup,
        note,
    }
}

fn start_poller(load: &Load, tag: &str) -> Running {
    let log = load.dir.join(format!("poller-{tag}.log"));
    let started = Instant::now();
    let poller = Command::new(std::env::current_exe().expect("current exe"))
        .arg("--poll")
        .arg(&load.server)
        .arg(&log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("start poller");
    own(Owned::Pid(poller.id()));
    // Its first sweep sets every pane's initial verdict; measure from then on.
    let deadline = started + Duration::from_secs(60);
    let mut startup = None;
    while Instant::now() < deadline {
        let n = std::fs::read_to_string(&log)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if n >= load.static_panes.len() {
            startup = Some(started.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(POLL_EVERY);
    Running {
        pids: vec![poller.id()],
        child: Some(poller),
        pipes: Vec::new(),
        server: load.server.clone(),
        events: None,
        detections: Arc::default(),
        poll_log: Some(log),
        log: None,
        startup,
        note: String::new(),
    }
}

fn stop_child(child: &mut Child) {
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

pub fn stop(mut r: Running) -> Stopped {
    let pid = r.pids.first().copied().unwrap_or(0);
    let rss_kb = vm_kb(pid, "VmHWM:").unwrap_or(0);
    let kids = if r.child.is_some() {
        children(pid)
    } else {
        Vec::new()
    };
    let children_rss_kb = kids.iter().filter_map(|p| vm_kb(*p, "VmHWM:")).sum();
    let mut note = r.note;
    let mut lines = None;
    if let Some((mut events, reader)) = r.events.take() {
        stop_child(&mut events);
        if let Some(c) = r.child.as_mut() {
            stop_child(c);
        }
        lines = reader.join().ok();
    } else if let Some(c) = r.child.as_mut() {
        stop_child(c);
    }
    for p in &r.pipes {
        // `pipe-pane` with no command closes the pane's pipe: its `cat` sees the end and exits.
        let _ = tmux_cmd(&r.server, &["pipe-pane", "-t", p]);
    }
    if lines == Some(0) {
        note.push_str("`events --json` printed nothing; ");
    }
    let detections = match &r.poll_log {
        Some(log) => std::fs::read_to_string(log)
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
            .collect(),
        None => r.detections.lock().map(|v| v.clone()).unwrap_or_default(),
    };
    let warnings = r
        .log
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .map(|t| {
            t.lines()
                .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Stopped {
        detections,
        warnings,
        rss_kb,
        children: kids.len(),
        children_rss_kb,
        note,
    }
}

/// Poller mode: `--poll SERVER LOG`. Every 500 ms: list panes, `tmux capture-pane -p` each as
/// its own process, regex pass (Claude Code's words); logs `UNIX_MS PANE STATE` whenever a
/// pane's verdict changes.
pub fn poll(args: &[String]) -> ! {
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
