//! Screen-rule engine: fixtures, herdr compatibility, overrides, explain and rendering.

use std::path::{Path, PathBuf};
use thinkterm_sidecar::rules::{check_file, Catalog, RuleState, Snapshot};

fn shared() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared")
}

fn fixtures_dir() -> PathBuf {
    let here = shared().join("fixtures/agents");
    if here.is_dir() {
        here
    } else {
        PathBuf::from("/work/shared/fixtures/agents")
    }
}

fn herdr_dir() -> PathBuf {
    let here = shared().join("reference/herdr-0.8.2/manifests");
    if here.is_dir() {
        here
    } else {
        PathBuf::from("/work/shared/reference/herdr-0.8.2/manifests")
    }
}

/// The titles an agent really sent, from its folder's escapes.md ("Titles (unique…): [...]").
fn sent_titles(version_dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(version_dir.join("escapes.md")).unwrap_or_default();
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Titles (unique") {
            if let Some(i) = rest.find('[') {
                if let Ok(v) = serde_json::from_str::<Vec<String>>(&rest[i..]) {
                    out.extend(v);
                }
            }
        }
    }
    out
}

struct Frame {
    path: PathBuf,
    agent: String,
    state: String,
    screen: String,
    title: Option<String>,
}

/// Every `<agent>/<version>/NNN-*.txt` with the `.json` beside it.
fn frames() -> Vec<Frame> {
    let mut out = Vec::new();
    let Ok(agents) = std::fs::read_dir(fixtures_dir()) else {
        return out;
    };
    let mut agent_dirs: Vec<PathBuf> = agents.filter_map(|e| e.ok().map(|e| e.path())).collect();
    agent_dirs.sort();
    for a in agent_dirs.iter().filter(|p| p.is_dir()) {
        let mut versions: Vec<PathBuf> = std::fs::read_dir(a)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        versions.sort();
        for v in versions.iter().filter(|p| p.is_dir()) {
            let titles = sent_titles(v);
            let mut txts: Vec<PathBuf> = std::fs::read_dir(v)
                .unwrap()
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    let n = p.file_name().unwrap().to_string_lossy().to_string();
                    n.ends_with(".txt") && n.as_bytes().first().is_some_and(|b| b.is_ascii_digit())
                })
                .collect();
            txts.sort();
            for t in txts {
                let json = t.with_extension("json");
                let meta: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
                let title = meta["title"]
                    .as_str()
                    .map(str::to_string)
                    .filter(|t| titles.contains(t));
                out.push(Frame {
                    agent: meta["agent"]
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| a.file_name().unwrap().to_string_lossy().to_string()),
                    state: meta["state"].as_str().unwrap().to_string(),
                    screen: std::fs::read_to_string(&t).unwrap(),
                    title,
                    path: t,
                });
            }
        }
    }
    out
}

#[test]
fn every_fixture_classifies_to_its_labelled_state() {
    let catalog = Catalog::bundled();
    let frames = frames();
    if frames.is_empty() {
        eprintln!("skipped: no fixtures under {}", fixtures_dir().display());
        return;
    }
    let mut failures = Vec::new();
    for f in &frames {
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
        let twins: Vec<&str> = frames
            .iter()
            .filter(|o| o.screen == f.screen && o.title == f.title && o.agent == f.agent)
            .map(|o| o.state.as_str())
            .collect();
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
    eprintln!("{} fixtures classified", frames.len());
}
