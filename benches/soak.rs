//! The soak (issue 20): the daemon left running for an hour over agents that keep changing
//! state, while sessions and panes come and go. Reports missed and duplicated transitions and
//! the daemon's memory over time (it must stay flat).
//!
//! - 12 fake Claude Code agents in 3 sessions, each cycling working → blocked → idle through
//!   real recorded screens, 2–6 s per state (random), logging the instant it draws each one;
//! - every 20 s a session with an agent and a shell is created, and killed 10 s later; every
//!   30 s a pane is split off a static window and killed 15 s later;
//! - `events --json` records what the daemon says. A drawn state with no event of that state on
//!   its pane before the pane's next drawn state is **missed**; two events in a row with the
//!   same new state on a pane, or an event whose old and new states are equal, are
//!   **duplicated**;
//! - the daemon's RSS is read every minute (every 5 s in the quick run).
//!
//! `cargo bench --bench soak` (an hour; `-- --minutes N`; `-- --quick` for 2 minutes).
#![allow(missing_docs)]
#![allow(clippy::unwrap_used)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::{fixtures, rss_kib, script, Daemon, Env, Tmux};

const AGENTS_PER_SESSION: usize = 4;
const SESSIONS: usize = 3;

/// One `events --json` line: when, which pane, the state before and after.
#[derive(Clone)]
struct Ev {
    t: u64,
    pane: String,
    old: Option<String>,
    new: Option<String>,
}

fn cpu_s(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rfind(')').map(|i| &stat[i + 2..]).unwrap_or("");
    let f: Vec<u64> = after
        .split_whitespace()
        .map(|s| s.parse().unwrap_or(0))
        .collect();
    (f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)) as f64 / 100.0
}

/// The cycling agent: draws working, blocked, idle in turn, 2–6 s each, and logs
/// `UNIX_MS STATE` to `$1` just before each frame.
fn cycling_agent(env: &Env) -> String {
    let path = env.path("bin/claude");
    let f = |n: &str| {
        fixtures::path(&format!("claude-code/2.1.328/{n}"))
            .display()
            .to_string()
    };
    script(
        &path,
        &format!(
            r#"#!/bin/bash
# The daemon asks an agent's own command for its version: answer, and write no log.
[ "$1" = --version ] && {{ echo "2.1.328 (Claude Code)"; exit 0; }}
log="$1"
draw() {{ echo "$(date +%s%3N) $1" >> "$log"; printf '\033[H\033[2J'; cat "$2"; sleep $((2 + RANDOM % 5)); }}
while true; do
  draw working '{w}'
  draw blocked '{b}'
  draw idle '{i}'
done
"#,
            w = f("003-working.txt"),
            b = f("008-blocked.txt"),
            i = f("007-idle.txt"),
        ),
    );
    path.display().to_string()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let minutes: u64 = args
        .iter()
        .position(|a| a == "--minutes")
        .and_then(|i| args.get(i + 1))
        .and_then(|m| m.parse().ok())
        .unwrap_or(if quick { 2 } else { 60 });
    let total = Duration::from_secs(minutes * 60);
    let sample = if quick {
        Duration::from_secs(5)
    } else {
        Duration::from_secs(60)
    };
    println!(
        "soak: {minutes} min, {} cycling agents, sessions and panes churning",
        SESSIONS * AGENTS_PER_SESSION
    );

    let mut tmux = Tmux::new();
    let env = Env::new();
    let agent = cycling_agent(&env);
    let logs = env.path("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let mut panes: Vec<(String, std::path::PathBuf)> = Vec::new();
    for s in 0..SESSIONS {
        for a in 0..AGENTS_PER_SESSION {
            let log = logs.join(format!("s{s}a{a}.log"));
            let cmd = format!("{agent} {}", log.display());
            let pane = if a == 0 {
                tmux.new_session(&format!("s{s}"), Some(&cmd))
            } else {
                tmux.new_window(&format!("s{s}"), Some(&cmd))
            };
            panes.push((pane, log));
        }
    }
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    let pid = d.child.id();

    // What the daemon says.
    let events: Arc<Mutex<Vec<Ev>>> = Arc::default();
    let mut follow = env
        .sidecar(&tmux, &["events", "--json"])
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
                if let (Some(p), Some(t)) = (v["pane"].as_str(), v["time_ms"].as_u64()) {
                    events.lock().unwrap().push(Ev {
                        t,
                        pane: p.to_string(),
                        old: v["old"].as_str().map(String::from),
                        new: v["new"].as_str().map(String::from),
                    });
                }
            }
        });
    }

    let started = Instant::now();
    let cpu0 = cpu_s(pid);
    let mut rss = vec![(0u64, rss_kib(pid))];
    let (mut next_sample, mut next_session, mut next_split) =
        (sample, Duration::from_secs(20), Duration::from_secs(30));
    let mut temp_sessions: Vec<(String, Instant)> = Vec::new();
    let mut splits: Vec<(String, Instant)> = Vec::new();
    let (mut made_sessions, mut made_panes, mut n) = (0, 0, 0);
    while started.elapsed() < total {
        let now = started.elapsed();
        if now >= next_session {
            next_session += Duration::from_secs(20);
            let name = format!("tmp{n}");
            n += 1;
            let log = logs.join(format!("{name}.log"));
            tmux.new_session(&name, Some(&format!("{agent} {}", log.display())));
            let _ = tmux.try_cmd(&["split-window", "-d", "-t", &name]);
            temp_sessions.push((name, Instant::now()));
            made_sessions += 1;
        }
        if now >= next_split {
            next_split += Duration::from_secs(30);
            let target = &panes[made_panes % panes.len()].0;
            if let Some(p) = tmux.try_cmd(&[
                "split-window",
                "-d",
                "-P",
                "-F",
                "#{pane_id}",
                "-t",
                target,
                "sleep 3600",
            ]) {
                splits.push((p.trim().to_string(), Instant::now()));
                made_panes += 1;
            }
        }
        temp_sessions.retain(|(name, at)| {
            let old = at.elapsed() >= Duration::from_secs(10);
            if old {
                let _ = tmux.try_cmd(&["kill-session", "-t", name]);
            }
            !old
        });
        splits.retain(|(p, at)| {
            let old = at.elapsed() >= Duration::from_secs(15);
            if old {
                let _ = tmux.try_cmd(&["kill-pane", "-t", p]);
            }
            !old
        });
        if now >= next_sample {
            next_sample += sample;
            rss.push((now.as_secs(), rss_kib(pid)));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // Let the last changes arrive.
    std::thread::sleep(Duration::from_secs(3));
    let end_ms = support_unix_ms();
    let cpu = cpu_s(pid) - cpu0;
    rss.push((started.elapsed().as_secs(), rss_kib(pid)));

    // Score the static agents.
    let events = events.lock().unwrap().clone();
    let mut by_pane: BTreeMap<&str, Vec<&Ev>> = BTreeMap::new();
    for e in &events {
        by_pane.entry(e.pane.as_str()).or_default().push(e);
    }
    let (mut drawn, mut missed, mut duplicated) = (0usize, 0usize, 0usize);
    for (pane, log) in &panes {
        let truth: Vec<(u64, String)> = std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let (t, s) = l.split_once(' ')?;
                Some((t.parse().ok()?, s.to_string()))
            })
            .collect();
        let evs = by_pane.get(pane.as_str()).cloned().unwrap_or_default();
        for (i, (t, state)) in truth.iter().enumerate() {
            let until = truth.get(i + 1).map(|x| x.0).unwrap_or(end_ms);
            // The last state, still on screen at the end, may not be scored yet.
            if until + 3000 > end_ms && i + 1 == truth.len() {
                continue;
            }
            drawn += 1;
            let seen = evs
                .iter()
                .any(|e| e.t >= *t && e.t <= until + 1000 && e.new.as_deref() == Some(state));
            if !seen {
                missed += 1;
            }
        }
        let mut last: Option<&str> = None;
        for e in &evs {
            if e.old == e.new || (last.is_some() && last == e.new.as_deref()) {
                duplicated += 1;
            }
            last = e.new.as_deref();
        }
    }
    let _ = follow.kill();
    let _ = follow.wait();

    println!(
        "  transitions drawn {drawn}, missed {missed}, duplicated {duplicated}; \
         {made_sessions} sessions and {made_panes} panes made and killed"
    );
    println!(
        "  daemon CPU {cpu:.2} s in {:.0} s ({:.2} % of a core)",
        started.elapsed().as_secs_f64(),
        cpu * 100.0 / started.elapsed().as_secs_f64()
    );
    let first = rss
        .iter()
        .find(|(t, _)| *t >= sample.as_secs())
        .map(|x| x.1)
        .unwrap_or(0);
    let last = rss.last().map(|x| x.1).unwrap_or(0);
    let max = rss.iter().map(|x| x.1).max().unwrap_or(0);
    println!(
        "  daemon RSS: start {} KiB, after the first sample {first} KiB, end {last} KiB, max {max} KiB",
        rss[0].1
    );
    println!(
        "  RSS samples (s: KiB): {}",
        rss.iter()
            .map(|(t, k)| format!("{t}: {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    drop(d);
    tmux.kill();
}

fn support_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}
