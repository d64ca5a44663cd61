//! The corpus checks: every frame classifies to its labelled state, quoted chrome never changes
//! a state, every variant the mutation harness makes keeps its frame's state, and the report
//! that prints the tables of `docs/detection.md`.

use super::{self as corpus, frames};
use thinkterm_sidecar::rules::{Catalog, Snapshot};

#[test]
fn every_fixture_classifies_to_its_labelled_state() {
    let n = check_labels(&frames());
    eprintln!("{n} fixtures classified");
}

/// The paced recordings' frames (the load bench replays them and scores the sidecar on their
/// labels) are held to the same rules.
#[test]
fn every_paced_frame_classifies_to_its_labelled_state() {
    let n = check_labels(&corpus::paced_frames());
    eprintln!("{n} paced frames classified");
}

/// Classifies every frame with the bundled rules and fails with the list of those whose state
/// is not their label; returns how many were classified.
fn check_labels(frames: &[corpus::Frame]) -> usize {
    let catalog = Catalog::bundled();
    let mut failures = Vec::new();
    for f in frames {
        let id = catalog
            .resolve(&f.agent)
            .unwrap_or_else(|| panic!("{}: agent {} unknown", f.path.display(), f.agent));
        let snap = Snapshot {
            screen: &f.screen,
            osc_title: f.title.as_deref(),
            osc_progress: None,
        };
        let v = catalog
            .classify(id, &snap)
            .unwrap_or_else(|| panic!("{id} has no state rules"));
        // Two frames with the same screen and title but different labels cannot both be
        // right (a frame taken after the moment it names): accept either label, say so.
        let twins = corpus::accepted(frames, f);
        if twins.iter().any(|s| *s != f.state) {
            eprintln!(
                "note: {} has the same screen as a frame labelled otherwise",
                f.path.display()
            );
            assert!(
                twins.contains(&v.state.as_str()),
                "{}: got {}",
                f.path.display(),
                v.state.as_str()
            );
            continue;
        }
        if v.state.as_str() != f.state {
            failures.push(format!(
                "{}: want {}, got {} ({:?})",
                f.path.display(),
                f.state,
                v.state.as_str(),
                v.rule
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} fixtures misclassified:\n{}",
        failures.len(),
        frames.len(),
        failures.join("\n")
    );
    frames.len()
}

/// An agent reply that quotes prompt chrome in the transcript must not change the state.
#[test]
fn quoted_prompts_in_the_transcript_do_not_flip_the_state() {
    let c = Catalog::bundled();
    let quote = [
        "● Here is what the dialog says:",
        " Do you want to proceed?",
        " ❯ 1. Yes",
        "   2. No",
        " Esc to cancel · Tab to amend",
        "  ⏸ manual mode on · esc to interrupt",
        "• Working (3s • esc to interrupt)",
        "Press enter to confirm or esc to cancel",
        " ↑↓ navigate  enter select  escape/ctrl+c cancel",
        "   ⬝⬝⬝⬝⬝⬝⬝⬝  esc interrupt",
        "🌗",
        " ⠧ Working...",
    ];
    for f in frames() {
        let id = c.resolve(&f.agent).unwrap();
        let plain = Snapshot {
            screen: &f.screen,
            osc_title: f.title.as_deref(),
            osc_progress: None,
        };
        let before = c.classify(id, &plain).unwrap();
        // The quote goes into the transcript area (after the first lines); nothing is removed.
        let lines: Vec<&str> = f.screen.lines().collect();
        let at = 6.min(lines.len());
        let mut mixed: Vec<&str> = lines[..at].to_vec();
        mixed.extend(quote);
        mixed.extend(&lines[at..]);
        let screen = mixed.join("\n");
        let s = Snapshot {
            screen: &screen,
            osc_title: f.title.as_deref(),
            osc_progress: None,
        };
        let v = c.classify(id, &s).unwrap();
        assert_eq!(
            v.state,
            before.state,
            "{} with quoted prompts: {:?}",
            f.path.display(),
            v.rule
        );
    }
}

/// Variants no screen rule can get right, each with the reason; every other variant of every
/// frame must keep its state, and a listed variant that starts passing must leave the list.
const UNREACHABLE: &[(&str, &str, &str)] = &[(
    "claude-code/2.1.332/064-blocked.txt",
    "rows",
    "the auto-mode dialog is taller than its 60x20 pane: with fewer rows neither the panel's top \
     rule nor its key line is on screen, only the dialog's prose",
)];

/// Issue 17: rules tuned to the exact strings of the versions they were written from broke on
/// the next release. Every frame, re-laid at every width from 60 to 200, cut to fewer rows, with
/// a segment added to its title, its footer cut, the model's text replaced by quoted chrome and
/// the banner's version changed, keeps its state; and none of it is ever a false "blocked".
#[test]
fn every_variant_of_every_frame_keeps_its_state() {
    let c = Catalog::bundled();
    let frames = frames();
    let (table, misses, _) = corpus::score::survival(&c, &frames, usize::MAX);
    let listed = |m: &corpus::score::Miss| {
        UNREACHABLE
            .iter()
            .any(|(f, k, _)| m.frame == *f && m.variant.starts_with(&format!("{k} ")))
    };
    let unexpected: Vec<String> = misses
        .iter()
        .filter(|m| !listed(m))
        .map(|m| m.to_string())
        .collect();
    assert!(
        unexpected.is_empty(),
        "{} variants lost their state (the first 40):\n{}",
        unexpected.len(),
        unexpected[..unexpected.len().min(40)].join("\n")
    );
    for (f, k, why) in UNREACHABLE {
        assert!(
            misses
                .iter()
                .any(|m| m.frame == *f && m.variant.starts_with(&format!("{k} "))),
            "{f} {k} passes now; take it off UNREACHABLE ({why})"
        );
    }
    let false_blocked: usize = table
        .values()
        .flat_map(|row| row.values())
        .map(|n| n.false_blocked)
        .sum();
    assert_eq!(false_blocked, 0, "a variant was classified blocked");
    let total: usize = table
        .values()
        .flat_map(|r| r.values())
        .map(|n| n.total)
        .sum();
    assert!(total > 50_000, "only {total} variants");
}

/// The detection report: accuracy per agent, version and size, and how many variants of each
/// manifest's frames keep their state. `cargo test --test rules -- --ignored --nocapture
/// detection_report` prints the tables that `docs/detection.md` quotes.
#[test]
#[ignore = "prints the detection tables; run with --ignored --nocapture"]
fn detection_report() {
    let c = Catalog::bundled();
    let frames = frames();
    let (acc, misses) = corpus::score::accuracy(&c, &frames);
    println!("{}", corpus::score::accuracy_table(&acc));
    for m in &misses {
        println!("miss: {m}");
    }
    let (surv, misses, missed) = corpus::score::survival(&c, &frames, usize::MAX);
    println!("\n{}", corpus::score::survival_table(&surv));
    println!("{missed} variants misclassified, by frame and kind (one example each):");
    let mut groups: std::collections::BTreeMap<(String, String), (usize, String)> =
        std::collections::BTreeMap::new();
    for m in &misses {
        let kind = m.variant.split(' ').next().unwrap_or("").to_string();
        let g = groups
            .entry((m.frame.clone(), kind))
            .or_insert((0, m.to_string()));
        g.0 += 1;
    }
    for ((frame, kind), (n, example)) in &groups {
        println!("variant miss: {frame} {kind} x{n}: {example}");
    }
}

/// Prints one variant and the explanation of its verdict:
/// `DETECTION_SHOW='kimi/1.51.0/008-blocked.txt width w=60' cargo test --test rules --
/// --ignored --nocapture show_variant`.
#[test]
#[ignore = "prints one variant; run with DETECTION_SHOW set"]
fn show_variant() {
    let Ok(want) = std::env::var("DETECTION_SHOW") else {
        return;
    };
    let c = Catalog::bundled();
    for f in frames().iter().filter(|f| want.starts_with(&f.name())) {
        for v in corpus::mutate::variants(&f.screen, f.title.as_deref(), f.width, f.height) {
            if format!("{} {} {}", f.name(), v.kind.name(), v.detail) == want {
                println!("{}\n---- title: {:?}", v.screen, v.title);
                let id = c.resolve(&f.agent).unwrap();
                let s = Snapshot {
                    screen: &v.screen,
                    osc_title: v.title.as_deref(),
                    osc_progress: None,
                };
                print!("{}", c.explain(id, &s).render());
            }
        }
    }
}
