//! End-to-end load benchmark: the whole cost an observer adds to the machine. One private tmux
//! server carries a load (fake agents replaying real recordings at their recorded pace, a
//! streaming pane, idle shells; for the scale run, sessions created and killed all along), and
//! windows alternate: nothing watching / the sidecar / nothing / the baseline poller / nothing
//! ... An observer's whole cost in its window is its own CPU plus what the tmux server used
//! above its rate in the windows either side of it. Prints each window, each observer's whole
//! cost with its spread, their ratio, detection latency by transition kind, missed
//! transitions, resident sizes and the time to the first complete classification.
//!
//! `cargo bench --bench load [-- OPTIONS]`:
//! - `--scale`: the scale run (210 panes in 40 sessions, 20 agents of every recording) instead
//!   of the 50-pane load; `--idle N`: an idle server of N shells in 40 sessions (nothing
//!   written anywhere; add `--no-poller` or `--ab`, the poller is costly there);
//! - `--window SECS` (also `--duration`, `LOAD_DURATION`), `--rounds N`, `--quick`
//!   (`LOAD_QUICK=1`: 8 s windows, 1 round);
//! - `--ab PATH`: A/B, this build (or the binary `--a PATH` names) against the sidecar binary
//!   at PATH, in alternating windows (no poller; A then B in odd rounds, B then A in even
//!   ones); `--no-poller`; `--floor`: bare pipes (`cat > /dev/null` on the agents' and the
//!   stream's panes, nothing classified) measured as one more observer: the floor of any
//!   observer that takes those panes' bytes as they come;
//! - `--seed N`: the seed of the agents' start phases (each agent starts at a random point of
//!   its loop; the run prints its seed, drawn from the clock unless given);
//! - `--no-stream`, `--no-churn`: leave the streaming pane (an idle shell in its place) or the
//!   sessions made and killed out of the load, to weigh each part of it;
//! - `--chunked`: the agents replay the recordings of `tests/fixtures/agents` in 50 ms chunks
//!   (the pace of the figures before the thirteenth session), not the paced recordings of
//!   `tests/fixtures/paced` at the pace the agents wrote them;
//! - `--hold`: build the load and keep it up until Ctrl-C (for profiling by hand; at most four
//!   hours, where a run's watchdog allows its windows and five minutes);
//! - `LOAD_SIDECAR_LOG=FILTER`: the sidecar's log filter (`warn` by default; the warnings are
//!   counted in the report whatever it is), and `LOAD_TRACE_DIR=DIR`: its logs are kept there
//!   (`sidecar-wN.log`, one per window). The slowest transitions are named with the instant
//!   their write began (Unix ms), to find them in such a log:
//!   `LOAD_SIDECAR_LOG=warn,thinkterm_sidecar::tmux::pipe=trace,thinkterm_sidecar::daemon=trace`
//!   shows each pipe read, capture round and state change.
//!
//! The same binary is also the fake agent (run through a symlink named like the agent's
//! command), the streaming pane (`--stream RATE`) and the poller (`--poll`), so every measured
//! process is a separate process.
#![allow(missing_docs)]

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[path = "../tests/support/fixtures.rs"]
mod fixtures;
#[path = "load/meter.rs"]
mod meter;
#[path = "load/observers.rs"]
mod observers;
#[path = "load/replay.rs"]
mod replay;
#[path = "load/report.rs"]
mod report;
#[path = "load/score.rs"]
mod score;
#[path = "load/windows.rs"]
mod windows;
#[path = "load/world.rs"]
mod world;

use observers::Kind;
use world::{cleanup, Load, SCRATCH};

pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The agent commands a fake agent may be run as.
const AGENT_COMMANDS: [&str; 7] = [
    "claude", "codex", "copilot", "gemini", "kimi", "opencode", "pi",
];

struct Options {
    scale: bool,
    idle: Option<usize>,
    window: Duration,
    rounds: usize,
    ab: Option<PathBuf>,
    /// The sidecar binary measured as A (default: this build).
    a: Option<PathBuf>,
    poller: bool,
    hold: bool,
    /// Leave the streaming pane out (an idle shell instead).
    no_stream: bool,
    /// Leave the sessions made and killed out.
    no_churn: bool,
    /// Replay the agents in 50 ms chunks, not at their recorded pace.
    chunked: bool,
    /// The seed of the agents' start phases (`--seed`; default: from the clock).
    seed: u64,
    /// Bare pipes on the agents' and the stream's panes as an observer of their own.
    floor: bool,
}

fn options(args: &[String]) -> Options {
    let mut quick = std::env::var("LOAD_QUICK").is_ok_and(|v| v != "0");
    let mut window: Option<f64> = std::env::var("LOAD_DURATION")
        .ok()
        .and_then(|v| v.parse().ok());
    let mut rounds = None;
    let mut o = Options {
        scale: false,
        idle: None,
        window: Duration::ZERO,
        rounds: 0,
        ab: None,
        a: None,
        poller: true,
        hold: false,
        no_stream: false,
        no_churn: false,
        chunked: false,
        seed: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
        floor: false,
    };
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--hold" => o.hold = true,
            "--scale" => o.scale = true,
            "--idle" => {
                o.idle = Some(
                    it.next()
                        .and_then(|v| v.parse().ok())
                        .expect("--idle PANES"),
                )
            }
            "--no-poller" => o.poller = false,
            "--no-stream" => o.no_stream = true,
            "--no-churn" => o.no_churn = true,
            "--chunked" => o.chunked = true,
            "--floor" => o.floor = true,
            "--window" | "--duration" => {
                window = Some(
                    it.next()
                        .and_then(|v| v.parse().ok())
                        .expect("--window SECS"),
                )
            }
            "--rounds" => {
                rounds = Some(it.next().and_then(|v| v.parse().ok()).expect("--rounds N"))
            }
            "--seed" => o.seed = it.next().and_then(|v| v.parse().ok()).expect("--seed N"),
            "--ab" => o.ab = Some(PathBuf::from(it.next().expect("--ab PATH"))),
            "--a" => o.a = Some(PathBuf::from(it.next().expect("--a PATH"))),
            _ => {} // `--bench` and criterion-style flags cargo passes
        }
    }
    o.window = Duration::from_secs_f64(window.unwrap_or(if quick { 8.0 } else { 20.0 }));
    o.rounds = rounds.unwrap_or(if quick { 1 } else { 3 });
    o
}

fn install_cleanup(bound: Duration) {
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
    std::thread::spawn(move || {
        std::thread::sleep(bound);
        eprintln!("load: watchdog: exceeded {bound:?}, cleaning up");
        cleanup();
        std::process::exit(2);
    });
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let argv0 = args.first().map(String::as_str).unwrap_or("");
    let name = Path::new(argv0)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    if AGENT_COMMANDS.contains(&name) {
        replay::replay(&args[1..]);
    }
    match args.get(1).map(String::as_str) {
        Some("--poll") => observers::poll(&args[2..]),
        Some("--stream") => replay::stream(&args[2..]),
        _ => {}
    }
    let o = options(&args);
    let mut spec = if let Some(n) = o.idle {
        world::idle(n)
    } else if o.scale {
        world::scale()
    } else {
        world::standard()
    };
    if o.no_stream && spec.stream_rate > 0 {
        spec.stream_rate = 0;
        spec.shells += 1;
    }
    spec.churn &= !o.no_churn;
    spec.chunked = o.chunked;
    spec.seed = o.seed;
    let this =
        o.a.clone()
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_thinkterm-sidecar")));
    let mut kinds = vec![Kind::Sidecar {
        label: if let Some(a) = &o.a {
            format!("sidecar A ({})", a.display())
        } else if o.ab.is_some() {
            "sidecar A (this build)".into()
        } else {
            "sidecar".into()
        },
        bin: this,
    }];
    if let Some(b) = &o.ab {
        kinds.push(Kind::Sidecar {
            label: format!("sidecar B ({})", b.display()),
            bin: b.clone(),
        });
    } else if o.poller {
        kinds.push(Kind::Poller);
    }
    if o.floor {
        kinds.push(Kind::Pipes);
    }
    let windows_n = 1 + 2 * o.rounds * kinds.len();
    // Each window: its length, plus up to 60 s for an observer to be ready.
    let bound = if o.hold {
        // Held for measuring by hand: up to four hours.
        Duration::from_secs(4 * 3600)
    } else {
        (o.window + Duration::from_secs(70)) * windows_n as u32 + Duration::from_secs(300)
    };
    install_cleanup(bound);

    let tmp = tempfile::tempdir().expect("tempdir");
    if let Ok(mut d) = SCRATCH.lock() {
        *d = Some(tmp.path().to_path_buf());
    }
    let tck = meter::clk_tck();
    let mut load = world::build(tmp.path(), &spec);
    let want = spec.agents.len() + usize::from(spec.stream_rate > 0) + spec.shells;
    assert!(
        load.static_panes.len() >= want,
        "load did not start: {} panes of {want}",
        load.static_panes.len()
    );
    println!(
        "load ({}): tmux -L {} with {} panes in {} sessions ({} fake agents: {}; {}; {} idle shells; a person's client showing s0){}; {} round(s) of {:.0} s windows",
        spec.name,
        load.server,
        load.static_panes.len(),
        spec.sessions,
        spec.agents.len(),
        agent_mix(&load),
        if spec.stream_rate > 0 {
            format!("1 streaming pane at {} KiB/s", spec.stream_rate / 1024)
        } else {
            "no streaming pane".into()
        },
        spec.shells,
        if spec.churn { "; a session created every 2 s and the one from 6 s before killed" } else { "" },
        o.rounds,
        o.window.as_secs_f64(),
    );
    if !spec.agents.is_empty() {
        println!(
            "load: the agents' start phases from seed {} (`--seed {}` repeats them)",
            o.seed, o.seed
        );
    }
    for line in world::pace_summary(&spec) {
        println!("load: {line}");
    }
    if o.hold {
        println!("load: holding; stream pane {}", load.stream);
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    // Let the agents and the stream get going.
    std::thread::sleep(Duration::from_secs(3));
    // The poller knows Claude Code's words only: it is scored on Claude Code panes.
    let score_only = |k: &Kind, fixture: &str| match k {
        Kind::Poller => fixture.starts_with("claude-code/"),
        Kind::Sidecar { .. } => true,
        Kind::Pipes => false,
    };
    let mut wins = windows::run(&load, &kinds, o.rounds, o.window, tck, &score_only);
    if let Some(c) = load.churn.as_mut() {
        c.stop();
    }
    report::report(&load, &kinds, &mut wins);
    cleanup();
}

fn agent_mix(load: &Load) -> String {
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for a in &load.agents {
        *counts.entry(a.kind.fixture).or_default() += 1;
    }
    counts
        .iter()
        .map(|(k, n)| format!("{n}× {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}
