//! How the rules do on the corpus: accuracy per agent, version and size, and how many variants
//! of each manifest's frames keep their state, printed as Markdown tables.

use super::mutate::{self, Kind};
use super::{accepted, Frame};
use std::collections::BTreeMap;
use thinkterm_sidecar::rules::{Catalog, Snapshot};

/// The state the catalog gives a screen and title, as a word (`unknown` for no rules).
pub fn classify(c: &Catalog, agent: &str, screen: &str, title: Option<&str>) -> String {
    verdict(c, agent, screen, title).0
}

/// The state word and whether the idle fallback decided (no rule matched).
pub fn verdict(c: &Catalog, agent: &str, screen: &str, title: Option<&str>) -> (String, bool) {
    let id = c.resolve(agent).unwrap_or(agent);
    let snap = Snapshot {
        screen,
        osc_title: title,
        osc_progress: None,
    };
    c.classify(id, &snap)
        .map_or(("unknown".to_string(), false), |v| {
            (v.state.as_str().to_string(), v.fallback)
        })
}

/// Counts over a set of frames or variants.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    /// How many.
    pub total: usize,
    /// Given an accepted state.
    pub right: usize,
    /// Labelled blocked.
    pub blocked: usize,
    /// Labelled blocked and found blocked.
    pub blocked_found: usize,
    /// Not labelled blocked, found blocked.
    pub false_blocked: usize,
    /// Decided by the idle fallback (no rule matched).
    pub fallback: usize,
}

impl Counts {
    fn add(&mut self, want: &[&str], got: &str) {
        self.total += 1;
        let ok = want.contains(&got);
        self.right += usize::from(ok);
        if want.contains(&"blocked") {
            self.blocked += 1;
            self.blocked_found += usize::from(got == "blocked");
        } else if got == "blocked" {
            self.false_blocked += 1;
        }
    }

    fn merge(&mut self, o: &Counts) {
        self.total += o.total;
        self.right += o.right;
        self.blocked += o.blocked;
        self.blocked_found += o.blocked_found;
        self.false_blocked += o.false_blocked;
        self.fallback += o.fallback;
    }

    fn pct(n: usize, d: usize) -> String {
        if d == 0 {
            "-".to_string()
        } else {
            format!("{:.1} %", 100.0 * n as f64 / d as f64)
        }
    }
}

/// One misclassification, for messages.
#[derive(Clone, Debug)]
pub struct Miss {
    /// The frame.
    pub frame: String,
    /// What was done to it (empty: the frame itself).
    pub variant: String,
    /// Accepted states.
    pub want: String,
    /// Given.
    pub got: String,
}

impl std::fmt::Display for Miss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: want {}, got {}",
            self.frame, self.variant, self.want, self.got
        )
    }
}

/// Counts per `(agent, version, size)`.
pub type AccuracyTable = BTreeMap<(String, String, String), Counts>;

/// Accuracy per `(agent, version, size)` and the misses.
pub fn accuracy(c: &Catalog, frames: &[Frame]) -> (AccuracyTable, Vec<Miss>) {
    let mut table = AccuracyTable::new();
    let mut misses = Vec::new();
    for f in frames {
        let want = accepted(frames, f);
        let (got, fallback) = verdict(c, &f.agent, &f.screen, f.title.as_deref());
        let row = table
            .entry((f.agent.clone(), f.version.clone(), f.size()))
            .or_default();
        row.add(&want, &got);
        row.fallback += usize::from(fallback);
        if !want.contains(&got.as_str()) {
            misses.push(Miss {
                frame: f.name(),
                variant: String::new(),
                want: want.join("|"),
                got,
            });
        }
    }
    (table, misses)
}

/// Survival per manifest and kind of variant, and the misses (at most `keep` of them).
pub fn survival(c: &Catalog, frames: &[Frame], keep: usize) -> (SurvivalTable, Vec<Miss>, usize) {
    // The frames are shared out among the cores (each variant is classified on its own).
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = frames.len().div_ceil(n.max(1)).max(1);
    let parts: Vec<(SurvivalTable, Vec<Miss>, usize)> = std::thread::scope(|s| {
        let handles: Vec<_> = frames
            .chunks(chunk)
            .map(|part| s.spawn(move || survival_of(c, frames, part, keep)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let mut table = SurvivalTable::new();
    let mut misses = Vec::new();
    let mut missed = 0;
    for (t, m, n) in parts {
        for (manifest, row) in t {
            let into = table.entry(manifest).or_default();
            for (k, c) in row {
                into.entry(k).or_default().merge(&c);
            }
        }
        misses.extend(m);
        missed += n;
    }
    misses.truncate(keep);
    (table, misses, missed)
}

/// Counts per manifest and kind of variant.
pub type SurvivalTable = BTreeMap<String, BTreeMap<Kind, Counts>>;

fn survival_of(
    c: &Catalog,
    frames: &[Frame],
    part: &[Frame],
    keep: usize,
) -> (SurvivalTable, Vec<Miss>, usize) {
    let mut table = SurvivalTable::new();
    let mut misses = Vec::new();
    let mut missed = 0;
    for f in part {
        let want = accepted(frames, f);
        let manifest = c.resolve(&f.agent).unwrap_or(&f.agent).to_string();
        let row = table.entry(manifest).or_default();
        for v in mutate::variants(&f.screen, f.title.as_deref(), f.width, f.height) {
            let got = classify(c, &f.agent, &v.screen, v.title.as_deref());
            row.entry(v.kind).or_default().add(&want, &got);
            if !want.contains(&got.as_str()) {
                missed += 1;
                if misses.len() < keep {
                    misses.push(Miss {
                        frame: f.name(),
                        variant: format!("{} {}", v.kind.name(), v.detail),
                        want: want.join("|"),
                        got,
                    });
                }
            }
        }
    }
    (table, misses, missed)
}

/// The accuracy table in Markdown.
pub fn accuracy_table(table: &AccuracyTable) -> String {
    let mut s = String::from(
        "| agent | version | size | frames | accuracy | blocked recall | false blocked | \
         fallback |\n| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n",
    );
    let mut all = Counts::default();
    for ((a, v, size), n) in table {
        s.push_str(&format!(
            "| {a} | {v} | {size} | {} | {} | {} | {} | {} |\n",
            n.total,
            Counts::pct(n.right, n.total),
            if n.blocked == 0 {
                "-".to_string()
            } else {
                format!("{}/{}", n.blocked_found, n.blocked)
            },
            n.false_blocked,
            n.fallback
        ));
        all.fallback += n.fallback;
        all.total += n.total;
        all.right += n.right;
        all.blocked += n.blocked;
        all.blocked_found += n.blocked_found;
        all.false_blocked += n.false_blocked;
    }
    s.push_str(&format!(
        "| **all** | | | {} | {} | {}/{} | {} | {} |\n",
        all.total,
        Counts::pct(all.right, all.total),
        all.blocked_found,
        all.blocked,
        all.false_blocked,
        all.fallback
    ));
    s
}

/// The survival table in Markdown: per manifest, survived/total per kind, then the whole.
pub fn survival_table(table: &SurvivalTable) -> String {
    let mut s = String::from("| manifest |");
    for k in Kind::ALL {
        s.push_str(&format!(" {} |", k.name()));
    }
    s.push_str(" all | false blocked |\n| --- |");
    for _ in 0..=Kind::ALL.len() {
        s.push_str(" ---: |");
    }
    s.push_str(" ---: |\n");
    for (m, row) in table {
        s.push_str(&format!("| {m} |"));
        let mut all = Counts::default();
        for k in Kind::ALL {
            match row.get(&k) {
                Some(n) => {
                    s.push_str(&format!(" {}/{} |", n.right, n.total));
                    all.total += n.total;
                    all.right += n.right;
                    all.false_blocked += n.false_blocked;
                }
                None => s.push_str(" - |"),
            }
        }
        s.push_str(&format!(
            " {}/{} ({}) | {} |\n",
            all.right,
            all.total,
            Counts::pct(all.right, all.total),
            all.false_blocked
        ));
    }
    s
}
