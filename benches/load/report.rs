//! The load benchmark's report: the windows, each observer's whole cost with its 95 %
//! intervals and the ratios between observers, latency, sizes and start, and what a sidecar
//! logged.

use super::observers::Kind;
use super::score::{ms, pct, Score};
use super::windows::{
    costs, half_interval95, mean, merged_score, min_max, ratio_interval95, Window,
};
use super::world::Load;

fn pc(rate: f64) -> String {
    format!("{:.2} %", 100.0 * rate)
}

pub fn report(load: &Load, kinds: &[Kind], wins: &mut [Window]) {
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
        for (what, v) in [("whole cost", &wholes), ("own CPU", &owns)] {
            println!(
                "{what} {} / {}: {}{}",
                kinds[0].label(),
                kinds[k].label(),
                ratio(mean(&v[0]), mean(&v[k])),
                within(&v[0], &v[k])
            );
        }
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

/// `n=… p50 … p95 … max …` of sorted latencies.
fn spread(v: &[u64]) -> String {
    format!(
        "n={} p50 {} p95 {} max {}",
        v.len(),
        ms(pct(v, 0.5)),
        ms(pct(v, 0.95)),
        ms(v.last().copied())
    )
}

fn print_score(who: &str, s: &Score) {
    println!(
        "- {who}: {} transitions, {} missed, {} seen before the write that completes them (0 ms); p50 {}, p95 {}, max {}",
        s.total,
        s.missed.len(),
        s.early,
        ms(pct(&s.latencies_ms, 0.5)),
        ms(pct(&s.latencies_ms, 0.95)),
        ms(s.latencies_ms.last().copied())
    );
    for (st, v) in &s.by_state {
        println!("  - to {st}: {}", spread(v));
    }
    for (agent, v) in &s.by_agent {
        println!(
            "  - {agent}: {}; {} state changes reported",
            spread(v),
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
