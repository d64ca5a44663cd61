//! The whole cost, by alternating windows: no observer / observer A / no observer / observer B
//! / no observer, then B before A in the next round, ... on the same load. An observer's whole
//! cost in its window is its own CPU (its process, its children, its reaped children) plus
//! what the tmux server used above its mean in the two windows either side, when nothing
//! watched. The tmux server's figure counts the children it reaped in the window too: the
//! relays `pipe-pane` starts for the sidecar are tmux's children (the churn's shells are too,
//! in every window alike).

use std::time::{Duration, Instant};

use super::meter::{cpu_ticks, load_average, run_ns, vm_kb, TreeMeter};
use super::observers::{self, Kind};
use super::score::{score, transitions, Score};
use super::unix_ms;
use super::world::{server_alive, tmux_cmd, Load};

/// Transitions written in the last `GRACE` of a window are not scored (nothing could see them
/// yet).
const GRACE: Duration = Duration::from_secs(3);
/// After an observer stops, before the next window: tmux lets its clients go.
const SETTLE: Duration = Duration::from_secs(1);

pub struct Window {
    /// None: nothing watched.
    pub kind: Option<usize>,
    pub wall_s: f64,
    /// The tmux server's CPU, with the children it reaped in the window.
    pub tmux_s: f64,
    /// Of which its reaped children.
    pub tmux_children_s: f64,
    /// The observer's CPU (process tree), and its process alone.
    pub obs_s: f64,
    pub obs_own_s: f64,
    pub obs_rss_kb: u64,
    pub obs_children: usize,
    pub obs_children_rss_kb: u64,
    pub tmux_rss_kb: u64,
    /// What tmux wrote to the person's client (its terminal) in the window, in bytes: every
    /// `set-option` makes tmux redraw every attached client whole.
    pub person_bytes: u64,
    pub startup: Option<Duration>,
    pub score: Option<Score>,
    /// The sidecar's warning and error lines in the window (a drift alarm among them says its
    /// rules stopped recognising a replayed agent).
    pub warnings: Vec<String>,
    pub load_avg: f64,
    pub note: String,
}

impl Window {
    pub fn tmux_rate(&self) -> f64 {
        self.tmux_s / self.wall_s.max(1e-9)
    }
}

/// What one observer cost in one of its windows, per second of wall time.
pub struct Cost {
    pub window: usize,
    pub own: f64,
    /// The tmux server above its rate in the neighbouring windows without an observer.
    pub tmux_added: f64,
    /// The tmux server's rate without an observer (mean of the two neighbours).
    pub tmux_base: f64,
    /// How far apart the two neighbours were.
    pub base_gap: f64,
}

impl Cost {
    pub fn whole(&self) -> f64 {
        self.own + self.tmux_added
    }
}

/// Runs `rounds` rounds of (off, kind 0, off, kind 1, ..., off), the kinds in reverse order in
/// every other round: every observer window sits between two windows without one. `score_only`
/// picks the agents (by fixture) each kind is scored on; a kind that tells no states is not
/// scored.
pub fn run(
    load: &Load,
    kinds: &[Kind],
    rounds: usize,
    window: Duration,
    tck: f64,
    score_only: &dyn Fn(&Kind, &str) -> bool,
) -> Vec<Window> {
    let mut plan = vec![None];
    for round in 0..rounds {
        // Every other round takes the observers in the opposite order (A B, B A, A B, ...):
        // a drift of the load through the run then weighs on each alike.
        let order: Vec<usize> = if round % 2 == 0 {
            (0..kinds.len()).collect()
        } else {
            (0..kinds.len()).rev().collect()
        };
        for k in order {
            plan.push(Some(k));
            plan.push(None);
        }
    }
    let mut out = Vec::new();
    for (i, which) in plan.iter().enumerate() {
        assert!(
            server_alive(load),
            "the tmux server (pid {}) is gone before window {i}",
            load.server_pid
        );
        let label = which.map_or("no observer".to_string(), |k| kinds[k].label());
        eprintln!(
            "load: window {}/{}: {label}, {:.0} s (load average {:.2})",
            i + 1,
            plan.len(),
            window.as_secs_f64(),
            load_average()
        );
        let running = which.map(|k| observers::start(load, &kinds[k], &format!("w{i}")));
        let meter = running.as_ref().map(|r| TreeMeter::start(&r.pids, tck));
        let tmux0 = run_ns(load.server_pid).unwrap_or(0);
        let reaped = || cpu_ticks(load.server_pid).map_or(0, |(_, _, c)| c);
        let reaped0 = reaped();
        let written0 = person_written(load);
        let load0 = load_average();
        let t0 = unix_ms();
        let started = Instant::now();
        std::thread::sleep(window);
        let wall_s = started.elapsed().as_secs_f64();
        let t1 = unix_ms();
        let tmux_children_s = reaped().saturating_sub(reaped0) as f64 / tck;
        let tmux_s = run_ns(load.server_pid).unwrap_or(0).saturating_sub(tmux0) as f64 / 1e9
            + tmux_children_s;
        let (obs_s, obs_own_s) = meter.map(|m| m.seconds()).unwrap_or((0.0, 0.0));
        let tmux_rss_kb = vm_kb(load.server_pid, "VmRSS:").unwrap_or(0);
        let person_bytes = person_written(load).saturating_sub(written0);
        let mut w = Window {
            kind: *which,
            wall_s,
            tmux_s,
            tmux_children_s,
            obs_s,
            obs_own_s,
            obs_rss_kb: 0,
            obs_children: 0,
            obs_children_rss_kb: 0,
            tmux_rss_kb,
            person_bytes,
            startup: None,
            score: None,
            warnings: Vec::new(),
            load_avg: (load0 + load_average()) / 2.0,
            note: String::new(),
        };
        if let (Some(k), Some(r)) = (which, running) {
            w.startup = r.startup;
            let stopped = observers::stop(r);
            w.obs_rss_kb = stopped.rss_kb;
            w.obs_children = stopped.children;
            w.obs_children_rss_kb = stopped.children_rss_kb;
            w.warnings = stopped.warnings;
            w.note = stopped.note;
            let kind = &kinds[*k];
            if kind.classifies() {
                let trans = transitions(
                    load,
                    t0,
                    t1.saturating_sub(GRACE.as_millis() as u64),
                    &|f| score_only(kind, f),
                );
                w.score = Some(score(&trans, &stopped.detections, t1));
            }
            std::thread::sleep(SETTLE);
        }
        out.push(w);
    }
    assert!(
        server_alive(load),
        "the tmux server (pid {}) is gone after the last window",
        load.server_pid
    );
    out
}

/// The bytes tmux has written to the person's clients (not control clients) so far.
fn person_written(load: &Load) -> u64 {
    let out = tmux_cmd(
        &load.server,
        &[
            "list-clients",
            "-F",
            "#{client_control_mode} #{client_written}",
        ],
    )
    .unwrap_or_default();
    out.lines()
        .filter_map(|l| l.strip_prefix("0 "))
        .filter_map(|n| n.trim().parse::<u64>().ok())
        .sum()
}

/// The cost of each window of observer `kind`, against its neighbours.
pub fn costs(windows: &[Window], kind: usize) -> Vec<Cost> {
    let mut out = Vec::new();
    for (i, w) in windows.iter().enumerate() {
        if w.kind != Some(kind) || i == 0 || i + 1 >= windows.len() {
            continue;
        }
        let (a, b) = (&windows[i - 1], &windows[i + 1]);
        let base = (a.tmux_rate() + b.tmux_rate()) / 2.0;
        out.push(Cost {
            window: i,
            own: w.obs_s / w.wall_s.max(1e-9),
            tmux_added: w.tmux_rate() - base,
            tmux_base: base,
            base_gap: (a.tmux_rate() - b.tmux_rate()).abs(),
        });
    }
    out
}

/// Every window's score of observer `kind`, merged.
pub fn merged_score(windows: &mut [Window], kind: usize) -> Score {
    let mut s = Score::default();
    for w in windows.iter_mut().filter(|w| w.kind == Some(kind)) {
        if let Some(x) = w.score.take() {
            s.merge(x);
        }
    }
    s
}

pub fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Half the width of the 95 % interval of the mean of `v` (Student's t over its windows, taken
/// as independent): none below two windows. What tells a cost from the windows' noise.
pub fn half_interval95(v: &[f64]) -> Option<f64> {
    let n = v.len();
    if n < 2 {
        return None;
    }
    let m = mean(v);
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some(t95(n - 1) * (var / n as f64).sqrt())
}

/// The two-sided 95 % quantile of Student's t with `df` degrees of freedom (above 20, the
/// quantile at the low end of each range: a little wider than the exact one).
fn t95(df: usize) -> f64 {
    const T: [f64; 20] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    ];
    match df {
        0 => f64::INFINITY,
        1..=20 => T[df - 1],
        21..=30 => 2.080,
        31..=60 => 2.040,
        _ => 2.0,
    }
}

/// The 95 % interval of `a / b`, the means of two observers' windows, from each mean's own
/// interval (their relative errors added in quadrature): none when either has fewer than two
/// windows or a mean at or below zero.
pub fn ratio_interval95(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    let (ma, mb) = (mean(a), mean(b));
    if ma <= 0.0 || mb <= 0.0 {
        return None;
    }
    let (ha, hb) = (half_interval95(a)?, half_interval95(b)?);
    let rel = ((ha / ma).powi(2) + (hb / mb).powi(2)).sqrt();
    let r = ma / mb;
    Some(((r * (1.0 - rel)).max(0.0), r * (1.0 + rel)))
}

pub fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(*x), hi.max(*x))
        })
}
