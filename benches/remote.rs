//! Remote machines, measured (issue 15), over a real `sshd` on 127.0.0.1:
//!
//! 1. **Latency**: "devbox" (a second tmux server with its daemon, reached only through sshd)
//!    runs 20 fake agents, each in a window nobody there looks at; the local daemon follows it
//!    and shows its notifications on a private D-Bus with a recording notification server. Each
//!    agent in turn draws a real "blocked" screen. Per notification: devbox's decision (the
//!    `time_ms` of its state event) → the local Notify call, and the screen written → the local
//!    Notify (detection and debounce included). Two rounds, the second 61 s after the first ends (the
//!    30 s per-window throttle holds each window's "finished" note after its blocked one).
//! 2. **Idle cost**: three machines connected, nothing changing, for 60 s: CPU time and wake-ups
//!    of the local daemon, of its three ssh children, and of the far end (bridges and daemons).
//!
//! `cargo bench --bench remote [-- --quick]` (quick: one round of 5 agents, 10 s idle).
#![allow(missing_docs)]
#![allow(clippy::unwrap_used)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use support::desktop::{serve, Bus};
use support::sshd::Sshd;
use support::{drawing_agent, wait_for, Client, Daemon, Env, Tmux};

const BIN: &str = env!("CARGO_BIN_EXE_thinkterm-sidecar");
const BLOCKED: &str = "claude-code/2.1.328/008-blocked.txt";
const IDLE: &str = "claude-code/2.1.328/001-idle.txt";

/// A machine reached over ssh: its tmux server, daemon and folders.
struct Machine {
    tmux: Tmux,
    env: Env,
    daemon: Daemon,
    panes: Vec<String>,
    #[allow(dead_code)]
    person: Client,
}

impl Machine {
    /// A tmux server with `agents` fake agents in session `work` (one window each) and a
    /// person's client on session `home`, and its daemon.
    fn start(agents: usize) -> Machine {
        let mut tmux = Tmux::new();
        let env = Env::new();
        let agent = drawing_agent(&env, "claude");
        let cmd = agent.display().to_string();
        let mut panes = Vec::new();
        if agents > 0 {
            panes.push(tmux.new_session("work", Some(&cmd)));
            for _ in 1..agents {
                panes.push(tmux.new_window("work", Some(&cmd)));
            }
        }
        tmux.new_session("home", None);
        let person = Client::attach(&tmux, "home", 100, 30);
        let daemon = Daemon::start(&env, &tmux);
        daemon.wait_ready(&env, &tmux);
        for p in &panes {
            env.wait_row(&tmux, p, "agent", "claude", 20);
        }
        Machine {
            tmux,
            env,
            daemon,
            panes,
            person,
        }
    }

    fn remote_command(&self) -> String {
        format!(
            "env XDG_RUNTIME_DIR={} XDG_STATE_HOME={} XDG_CONFIG_HOME={} {BIN} -L {} bridge",
            self.env.path("run").display(),
            self.env.path("state").display(),
            self.env.path("config").display(),
            self.tmux.name
        )
    }

    fn show(&self, pane: &str, frame: &str) {
        let f = support::fixtures::path(frame);
        self.tmux.type_line(pane, &f.display().to_string());
    }
}

/// The local daemon's config naming `machines`.
fn local_env(sshd: &Sshd, machines: &[(&str, &Machine)], bus: Option<&Bus>) -> Env {
    let mut env = Env::new();
    env.effects = true;
    if let Some(b) = bus {
        env.vars
            .push(("DBUS_SESSION_BUS_ADDRESS".into(), b.address.clone()));
    }
    let args: Vec<String> = sshd.ssh_args().iter().map(|a| format!("{a:?}")).collect();
    let mut text = "machine_name = \"laptop\"\nsound = false\n".to_string();
    for (name, m) in machines {
        text.push_str(&format!(
            "\n[[machines]]\nname = \"{name}\"\nssh = \"root@127.0.0.1\"\nssh_args = [{}]\nremote_command = {:?}\n",
            args.join(", "),
            m.remote_command()
        ));
    }
    std::fs::create_dir_all(env.path("config/thinkterm")).unwrap();
    std::fs::write(env.path("config/thinkterm/config.toml"), text).unwrap();
    env
}

fn wait_reachable(env: &Env, tmux: &Tmux, names: &[&str]) {
    wait_for(60, "machines reachable", || {
        let (code, out, _) = env.run(tmux, &["machines", "list", "--json"]);
        if code != 0 {
            return None;
        }
        let v: serde_json::Value = serde_json::from_str(&out).ok()?;
        names
            .iter()
            .all(|n| {
                v.as_array()
                    .is_some_and(|a| a.iter().any(|m| m["name"] == *n && m["reachable"] == true))
            })
            .then_some(())
    });
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn summary(label: &str, mut v: Vec<u64>) {
    v.sort_unstable();
    println!(
        "  {label:<44} n={:>3}  p50 {:>4} ms  p95 {:>4} ms  max {:>4} ms",
        v.len(),
        percentile(&v, 0.5),
        percentile(&v, 0.95),
        v.last().copied().unwrap_or(0)
    );
}

fn latency(agents: usize, rounds: usize) {
    println!("latency: {agents} agents on devbox, {rounds} round(s), loopback ssh");
    let sshd = Sshd::start();
    let devbox = Machine::start(agents);
    for p in &devbox.panes {
        devbox.show(p, IDLE);
    }
    for p in &devbox.panes {
        devbox.env.wait_row(&devbox.tmux, p, "state", "idle", 20);
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let bus = Bus::start();
    let (_conn, calls) = rt.block_on(serve(&bus));
    let env = local_env(&sshd, &[("devbox", &devbox)], Some(&bus));
    let local_tmux = Tmux::new(); // no server: a laptop without tmux
    let daemon = Daemon::start(&env, &local_tmux);
    daemon.wait_ready(&env, &local_tmux);
    wait_reachable(&env, &local_tmux, &["devbox"]);

    // devbox's state events, with the time each was decided there.
    let events: Arc<Mutex<Vec<(String, String, u64)>>> = Arc::default();
    let mut follow = devbox
        .env
        .sidecar(&devbox.tmux, &["events", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    {
        let out = follow.stdout.take().unwrap();
        let events = events.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
                    continue;
                };
                if let (Some(p), Some(n), Some(t)) =
                    (v["pane"].as_str(), v["new"].as_str(), v["time_ms"].as_u64())
                {
                    events.lock().unwrap().push((p.into(), n.into(), t));
                }
            }
        });
    }
    std::thread::sleep(Duration::from_millis(500));

    let (mut decided_to_notify, mut screen_to_notify) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        for pane in &devbox.panes {
            let before = calls.lock().unwrap().len();
            let t0 = SystemTime::now();
            devbox.show(pane, BLOCKED);
            // The blocked note (a "finished" note of the previous agent may come first).
            let call = wait_for(
                20,
                &format!("the local Notify (round {round}, {pane})"),
                || {
                    calls.lock().unwrap()[before..]
                        .iter()
                        .find(|c| c.summary.ends_with("waiting for you"))
                        .cloned()
                },
            );
            let decided = wait_for(5, "devbox's event", || {
                events
                    .lock()
                    .unwrap()
                    .iter()
                    .rev()
                    .find(|(p, n, t)| p == pane && n == "blocked" && *t + 50 >= unix_ms(t0))
                    .map(|(_, _, t)| *t)
            });
            let at = unix_ms(call.at);
            decided_to_notify.push(at.saturating_sub(decided));
            screen_to_notify.push(at.saturating_sub(unix_ms(t0)));
            devbox.show(pane, IDLE);
            std::thread::sleep(Duration::from_millis(300));
        }
        if round + 1 < rounds {
            // Each window's blocked note is followed by its "finished" note when the agent goes
            // back to idle, held by the 30 s throttle and sent 30 s later: wait until both
            // intervals are over.
            std::thread::sleep(Duration::from_secs(61));
        }
    }
    summary("devbox's decision -> local Notify", decided_to_notify);
    summary("screen written on devbox -> local Notify", screen_to_notify);
    let _ = follow.kill();
    let _ = follow.wait();
    drop(daemon);
}

/// CPU time (ms) and context switches of a process, all threads.
fn usage(pid: u32) -> (u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rfind(')').map(|i| &stat[i + 2..]).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    // utime, stime are fields 14 and 15 (index 11, 12 after the state).
    let cpu_ms = (ticks(11) + ticks(12)) * 10;
    let mut switches = 0;
    if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in dir.flatten() {
            let s = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
            for line in s.lines() {
                if let Some(v) = line
                    .strip_prefix("voluntary_ctxt_switches:")
                    .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
                {
                    switches += v.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
    }
    (cpu_ms, switches)
}

/// Every sidecar process whose command line contains `needle`.
fn pids_with(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim_end() == "thinkterm-sidec" && cmd.contains(needle) {
            out.push(pid);
        }
    }
    out
}

fn children_of(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let ppid = stat
            .rfind(')')
            .and_then(|i| stat[i + 2..].split_whitespace().nth(1))
            .and_then(|s| s.parse::<u32>().ok());
        if ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}

fn idle_cost(secs: u64) {
    println!("idle: 3 machines connected over loopback ssh, nothing changing, {secs} s");
    let sshd = Sshd::start();
    let machines: Vec<Machine> = (0..3).map(|_| Machine::start(2)).collect();
    for m in &machines {
        for p in &m.panes {
            m.show(p, IDLE);
        }
    }
    let named: Vec<(String, &Machine)> = machines
        .iter()
        .enumerate()
        .map(|(i, m)| (format!("box{i}"), m))
        .collect();
    let refs: Vec<(&str, &Machine)> = named.iter().map(|(n, m)| (n.as_str(), *m)).collect();
    let env = local_env(&sshd, &refs, None);
    let local_tmux = Tmux::new();
    let daemon = Daemon::start(&env, &local_tmux);
    daemon.wait_ready(&env, &local_tmux);
    wait_reachable(&env, &local_tmux, &["box0", "box1", "box2"]);
    // Let the first snapshots and the agents' idle screens settle.
    std::thread::sleep(Duration::from_secs(5));

    let local = daemon.child.id();
    let ssh = children_of(local);
    let far: Vec<u32> = machines
        .iter()
        .flat_map(|m| pids_with(&format!("-L {} bridge", m.tmux.name)))
        .collect();
    let remote_daemons: Vec<u32> = machines.iter().map(|m| m.daemon.child.id()).collect();
    let groups: Vec<(&str, Vec<u32>)> = vec![
        ("local daemon", vec![local]),
        ("its ssh children", ssh),
        ("far end: bridges", far),
        ("far end: daemons", remote_daemons),
    ];
    let before: Vec<Vec<(u64, u64)>> = groups
        .iter()
        .map(|(_, pids)| pids.iter().map(|p| usage(*p)).collect())
        .collect();
    std::thread::sleep(Duration::from_secs(secs));
    for ((label, pids), b) in groups.iter().zip(before) {
        let after: Vec<(u64, u64)> = pids.iter().map(|p| usage(*p)).collect();
        let cpu: u64 = after
            .iter()
            .zip(&b)
            .map(|(a, b)| a.0.saturating_sub(b.0))
            .sum();
        let sw: u64 = after
            .iter()
            .zip(&b)
            .map(|(a, b)| a.1.saturating_sub(b.1))
            .sum();
        println!(
            "  {label:<20} ({} process(es))  CPU {cpu:>4} ms in {secs} s ({:.3} %)  wake-ups {:.1}/s",
            pids.len(),
            cpu as f64 / (secs as f64 * 10.0),
            sw as f64 / secs as f64
        );
    }
    drop(daemon);
}

fn main() {
    let quick =
        std::env::args().any(|a| a == "--quick") || std::env::var_os("REMOTE_QUICK").is_some();
    let (agents, rounds, secs) = if quick { (5, 1, 10) } else { (20, 2, 60) };
    latency(agents, rounds);
    idle_cost(secs);
}
