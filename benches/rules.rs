//! Classifying one 120x40 snapshot with each bundled manifest (goal for Claude: ≤ 20 µs).
#![allow(missing_docs)] // criterion macros generate undocumented items
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use std::path::PathBuf;
use thinkterm_sidecar::rules::{Catalog, Snapshot};

/// A real 120x40 frame of the agent if the fixtures are there, else a synthetic one.
fn screen(agent_dir: &str, frame: &str) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/agents")
        .join(agent_dir);
    let found = std::fs::read_dir(&root).ok().and_then(|mut vs| {
        let v = vs.next()?.ok()?.path();
        let f = std::fs::read_dir(v)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| {
                let n = p
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default();
                n.starts_with(frame) && n.ends_with(".txt")
            })?;
        std::fs::read_to_string(f).ok()
    });
    found.unwrap_or_else(|| {
        let mut s = String::new();
        for i in 0..36 {
            s.push_str(&format!(
                "● line {i} of a long reply that fills the transcript area of the pane{}\n",
                " ".repeat(40)
            ));
        }
        s.push_str(&"─".repeat(120));
        s.push_str("\n❯ \n");
        s.push_str(&"─".repeat(120));
        s.push_str("\n  ⏸ manual mode on · esc to interrupt\n");
        s
    })
}

fn bench(c: &mut Criterion) {
    let catalog = Catalog::bundled();
    let cases = [
        ("claude", "claude-code", "005", Some("✳ Claude Code")),
        ("codex", "codex", "006", Some("⠏ codex")),
        ("copilot", "copilot", "006", Some("GitHub Copilot")),
        ("cursor", "copilot", "006", None),
        ("pi", "pi", "006", Some("π - pi")),
        ("opencode", "opencode", "006", Some("OC | Evaluation task")),
        ("kimi", "kimi", "006", Some("Kimi Code")),
        ("gemini", "gemini-cli", "006", Some("✦  Working… (gemini)")),
    ];
    for (agent, dir, frame, title) in cases {
        let text = screen(dir, frame);
        c.bench_function(&format!("classify_120x40_{agent}"), |b| {
            b.iter(|| {
                let snap = Snapshot {
                    screen: black_box(&text),
                    osc_title: title,
                    osc_progress: None,
                };
                black_box(catalog.classify(agent, &snap))
            })
        });
    }
    let text = screen("claude-code", "008");
    c.bench_function("classify_120x40_claude_blocked", |b| {
        b.iter(|| {
            black_box(catalog.classify(
                "claude",
                &Snapshot {
                    screen: black_box(&text),
                    osc_title: None,
                    osc_progress: None,
                },
            ))
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
