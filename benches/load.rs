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
#[path = "load/score.rs"]
mod score;
#[path = "load/windows.rs"]
mod windows;
#[path = "load/world.rs"]
mod world;

use observers::Kind;
use score::{ms, pct, Score};
use windows::{costs, half_interval95, mean, merged_score, min_max, ratio_interval95, Window};
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
    report(&load, &kinds, &mut wins);
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

fn pc(rate: f64) -> String {
    format!("{:.2} %", 100.0 * rate)
}

fn report(load: &Load, kinds: &[Kind], wins: &mut [Window]) {
    println!();
    println!("### Windows");
    println!();
    println!("| # | observer | wall | tmux server CPU (its reaped children) | observer CPU (itself) | load avg | startup | note |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for (i, w) in wins.iter().enumerate() {
        let who = w.kind.map_or("—".to_string(), |k| kinds[k].label());
        println!(
            "| {i} | {who} | {:.1} s | {:.3} s ({}; {:.2} s) | {} | {:.2} | {} | {} |",
            w.wall_s,
            w.tmux_s,
            pc(w.tmux_rate()),
            w.tmux_children_s,
            if w.kind.is_some() {
                format!("{:.2} s ({:.2} s)", w.obs_s, w.obs_own_s)
            } else {
                "—".into()
            },
            w.load_avg,
            w.startup
                .map(|d| format!("{:.1} s", d.as_secs_f64()))
                .unwrap_or_else(|| "—".into()),
            w.note
        );
    }
    println!();
    println!("### Whole cost (per second of wall time, in % of one core)");
    println!();
    println!("| observer | windows | its own CPU | tmux server added (± 95 %) | whole cost: mean (± 95 %) | min – max | tmux without observer | tmux added / without | neighbours' gap (mean) |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let mut wholes = Vec::new();
    let mut owns = Vec::new();
    let plus = |v: &[f64]| half_interval95(v).map_or(String::new(), |h| format!(" ± {}", pc(h)));
    for (k, kind) in kinds.iter().enumerate() {
        let c = costs(wins, k);
        let whole: Vec<f64> = c.iter().map(|x| x.whole()).collect();
        let own: Vec<f64> = c.iter().map(|x| x.own).collect();
        let added: Vec<f64> = c.iter().map(|x| x.tmux_added).collect();
        let base: Vec<f64> = c.iter().map(|x| x.tmux_base).collect();
        let gap: Vec<f64> = c.iter().map(|x| x.base_gap).collect();
        let (lo, hi) = min_max(&whole);
        println!(
            "| {} | {} | {} | {}{} | **{}**{} | {} – {} | {} | {:.1} % | {} |",
            kind.label(),
            c.len(),
            pc(mean(&own)),
            pc(mean(&added)),
            plus(&added),
            pc(mean(&whole)),
            plus(&whole),
            pc(lo),
            pc(hi),
            pc(mean(&base)),
            100.0 * mean(&added) / mean(&base).max(1e-9),
            pc(mean(&gap)),
        );
        for x in &c {
            println!(
                "  - window {}: own {}, tmux added {} (without: {}), whole {}",
                x.window,
                pc(x.own),
                pc(x.tmux_added),
                pc(x.tmux_base),
                pc(x.whole())
            );
        }
        wholes.push(whole);
        owns.push(own);
    }
    let ratio = |a: f64, b: f64| {
        if b > 0.0 && a >= b {
            format!("{:.4} ({:.1}×)", a / b, a / b)
        } else if b > 0.0 && a > 0.0 {
            format!("{:.4} (1/{:.0})", a / b, b / a)
        } else {
            format!("{a:.5} / {b:.5}: n/a")
        }
    };
    for k in 1..kinds.len() {
        println!();
        let within = |a: &[f64], b: &[f64]| {
            ratio_interval95(a, b).map_or(String::new(), |(lo, hi)| {
                let as_part = |r: f64| {
                    if r >= 1.0 {
                        format!("{r:.1}×")
                    } else if r > 0.0 {
                        format!("1/{:.0}", 1.0 / r)
                    } else {
                        "0".into()
                    }
                };
                format!(
                    "; 95 % interval {lo:.4} – {hi:.4} ({} – {})",
                    as_part(lo),
                    as_part(hi)
                )
            })
        };
        println!(
            "whole cost {} / {}: {}{}",
            kinds[0].label(),
            kinds[k].label(),
            ratio(mean(&wholes[0]), mean(&wholes[k])),
            within(&wholes[0], &wholes[k])
        );
        println!(
            "own CPU {} / {}: {}{}",
            kinds[0].label(),
            kinds[k].label(),
            ratio(mean(&owns[0]), mean(&owns[k])),
            within(&owns[0], &owns[k])
        );
    }
    println!();
    println!("### Latency (all windows of each observer)");
    println!();
    for (k, kind) in kinds.iter().enumerate() {
        if !kind.classifies() {
            println!("- {}: not scored (it tells no states)", kind.label());
            continue;
        }
        let s = merged_score(wins, k);
        print_score(&kind.label(), &s);
    }
    println!();
    println!("### Sizes and start");
    println!();
    for (k, kind) in kinds.iter().enumerate() {
        let mine: Vec<&Window> = wins.iter().filter(|w| w.kind == Some(k)).collect();
        let rss = mine.iter().map(|w| w.obs_rss_kb).max().unwrap_or(0);
        let kids = mine.iter().map(|w| w.obs_children).max().unwrap_or(0);
        let kids_rss = mine
            .iter()
            .map(|w| w.obs_children_rss_kb)
            .max()
            .unwrap_or(0);
        let startups: Vec<f64> = mine
            .iter()
            .filter_map(|w| w.startup.map(|d| d.as_secs_f64()))
            .collect();
        let (lo, hi) = min_max(&startups);
        let tmux_on: Vec<f64> = mine.iter().map(|w| w.tmux_rss_kb as f64).collect();
        println!(
            "- {}: peak RSS {:.1} MB; {} child process(es) ({:.1} MB); start to first complete classification {:.1} – {:.1} s over {} starts; tmux server RSS at the end of its windows {:.1} MB",
            kind.label(),
            rss as f64 / 1024.0,
            kids,
            kids_rss as f64 / 1024.0,
            lo,
            hi,
            startups.len(),
            mean(&tmux_on) / 1024.0
        );
    }
    let off: Vec<f64> = wins
        .iter()
        .filter(|w| w.kind.is_none())
        .map(|w| w.tmux_rss_kb as f64)
        .collect();
    let person = |k: Option<usize>| {
        let v: Vec<f64> = wins
            .iter()
            .filter(|w| w.kind == k)
            .map(|w| w.person_bytes as f64 / w.wall_s.max(1e-9) / 1024.0)
            .collect();
        let (lo, hi) = min_max(&v);
        format!("{:.1} KiB/s ({lo:.1} – {hi:.1})", mean(&v))
    };
    for (k, kind) in kinds.iter().enumerate() {
        println!(
            "- {}: tmux wrote the person's terminal {}",
            kind.label(),
            person(Some(k))
        );
    }
    println!(
        "- no observer: tmux wrote the person's terminal {}",
        person(None)
    );
    println!(
        "- tmux server RSS at the end of windows without an observer: {:.1} MB",
        mean(&off) / 1024.0
    );
    if let Some(c) = &load.churn {
        println!(
            "- churn: {} sessions created, {} killed during the run",
            c.created.load(std::sync::atomic::Ordering::Relaxed),
            c.killed.load(std::sync::atomic::Ordering::Relaxed)
        );
    }
    for (k, kind) in kinds.iter().enumerate() {
        if !matches!(kind, Kind::Sidecar { .. }) {
            continue;
        }
        print_warnings(&kind.label(), wins.iter().filter(|w| w.kind == Some(k)));
    }
}

/// What a sidecar logged at warning level or above over its windows: how many lines, how many
/// of them drift alarms (its rules stopped recognising a replayed agent), and the first few.
fn print_warnings<'a>(who: &str, wins: impl Iterator<Item = &'a Window>) {
    let lines: Vec<&str> = wins
        .flat_map(|w| w.warnings.iter().map(String::as_str))
        .collect();
    let drift = lines
        .iter()
        .filter(|l| l.contains("pane unrecognised"))
        .count();
    println!(
        "- {who}: logged {} warning(s) or error(s), {drift} of them drift alarms",
        lines.len()
    );
    for l in lines.iter().take(3) {
        // Without the timestamp; long lines cut.
        let l = l.split_once(' ').map_or(*l, |(_, rest)| rest.trim_start());
        let cut: String = l.chars().take(200).collect();
        println!("  - {cut}");
    }
}

fn print_score(who: &str, s: &Score) {
    println!(
        "- {who}: {} transitions, {} missed, {} seen before the write that completes them (0 ms); p50 {}, p95 {}, max {}",
        s.total,
        s.missed.len(),
        s.early,
        ms(pct(&s.latencies_ms, 0.5)),
        ms(pct(&s.latencies_ms, 0.95)),
        ms(s.latencies_ms
            .first()
            .map(|_| s.latencies_ms[s.latencies_ms.len() - 1]))
    );
    for (st, v) in &s.by_state {
        println!(
            "  - to {st}: n={} p50 {} p95 {} max {}",
            v.len(),
            ms(pct(v, 0.5)),
            ms(pct(v, 0.95)),
            ms(v.last().copied())
        );
    }
    for (agent, v) in &s.by_agent {
        println!(
            "  - {agent}: n={} p50 {} p95 {} max {}; {} state changes reported",
            v.len(),
            ms(pct(v, 0.5)),
            ms(pct(v, 0.95)),
            ms(v.last().copied()),
            s.reported.get(agent).copied().unwrap_or(0)
        );
    }
    let slow: Vec<String> = s
        .detail
        .iter()
        .take(5)
        .map(|(l, what)| format!("{what} {l} ms"))
        .collect();
    println!("  - slowest: {}", slow.join(", "));
    // The idles' debounce fills the list above; the quick kinds' own slowest.
    for kind in ["working", "blocked"] {
        let slow: Vec<String> = s
            .detail
            .iter()
            .filter(|(_, what)| what.contains(&format!(" {kind} (")))
            .take(3)
            .map(|(l, what)| format!("{what} {l} ms"))
            .collect();
        if !slow.is_empty() {
            println!("  - slowest to {kind}: {}", slow.join(", "));
        }
    }
    for m in &s.missed {
        println!("  - missed: {m}");
    }
}
