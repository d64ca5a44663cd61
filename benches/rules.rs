//! Classifying one 120x40 snapshot with each bundled manifest (goal for Claude: ≤ 20 µs).
#![allow(missing_docs)] // criterion macros generate undocumented items
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use thinkterm_sidecar::rules::{Catalog, Snapshot};

#[path = "../tests/support/fixtures.rs"]
mod fixtures;

/// A real 120x40 frame of the agent (`tests/fixtures/agents`); fails when it is missing.
fn screen(agent_dir: &str, frame: &str) -> String {
    fixtures::frame(agent_dir, frame)
}

fn bench(c: &mut Criterion) {
    let catalog = Catalog::bundled();
    let cases = [
        (
            "claude",
            "claude-code/2.1.328",
            "005",
            Some("✳ Claude Code"),
        ),
        ("codex", "codex/0.169.0", "006", Some("⠏ codex")),
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
    let text = screen("claude-code/2.1.328", "008");
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
