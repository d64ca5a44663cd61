//! The recorded agent fixtures, for every test and bench: the repository's copy under
//! `tests/fixtures/agents/<agent>/<version>/` (see `tests/fixtures/README.md`).
//!
//! One file, included by the integration tests (`tests/support/mod.rs`), the library's unit
//! tests (`src/lib.rs`, `#[cfg(test)]`) and the benches (`#[path]`). A fixture that is not there
//! fails the caller with its path: nothing is skipped.
#![allow(dead_code)] // each test binary and bench uses its own part

use std::path::{Path, PathBuf};

/// Where the fixtures are: `<crate>/tests/fixtures/agents`.
pub const AGENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/agents");

/// The fixture root, which must be a directory.
pub fn root() -> PathBuf {
    let p = PathBuf::from(AGENTS);
    assert!(
        p.is_dir(),
        "fixture directory missing: {} (the recorded agent screens belong in the repository; \
         see tests/fixtures/README.md)",
        p.display()
    );
    p
}

/// `AGENTS/rel` (as `agent/version/file`), which must exist.
pub fn path(rel: &str) -> PathBuf {
    let p = Path::new(AGENTS).join(rel);
    assert!(
        p.exists(),
        "fixture missing: {} (the recorded agent screens belong in the repository; \
         see tests/fixtures/README.md)",
        p.display()
    );
    p
}

/// The bytes of `AGENTS/rel`.
pub fn read(rel: &str) -> Vec<u8> {
    let p = path(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("fixture {}: {e}", p.display()))
}

/// The text of `AGENTS/rel`.
pub fn read_to_string(rel: &str) -> String {
    let p = path(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("fixture {}: {e}", p.display()))
}

/// The directories in `dir`, sorted by name.
pub fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("fixture {}: {e}", dir.display()))
        .map(|e| {
            e.unwrap_or_else(|e| panic!("fixture {}: {e}", dir.display()))
                .path()
        })
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// Every version directory of `agent` (`AGENTS/agent/<version>`), sorted by name.
pub fn versions(agent: &str) -> Vec<PathBuf> {
    sorted_dirs(&path(agent))
}

/// Every `<agent>/<version>` directory of a fixture set under `tests/fixtures` (`agents` or
/// `paced`), sorted by path.
pub fn version_dirs(set: &str) -> Vec<PathBuf> {
    let root = Path::new(AGENTS).with_file_name(set);
    sorted_dirs(&root)
        .iter()
        .flat_map(|agent| sorted_dirs(agent))
        .collect()
}

/// The version directory `which` names: `agent/version`, or `agent` alone when it has exactly
/// one version (with several, a test must name the one it means: it never picks at random).
pub fn version_dir(which: &str) -> PathBuf {
    if which.contains('/') {
        let p = path(which);
        assert!(p.is_dir(), "fixture {}: not a directory", p.display());
        return p;
    }
    let versions = versions(which);
    assert!(
        versions.len() == 1,
        "fixture {}/{which}: expected one version directory, found {versions:?}; name one \
         (`{which}/<version>`)",
        AGENTS
    );
    versions.into_iter().next().unwrap_or_default()
}

/// The screen text (`NNN-state.txt`) of the frame whose name starts with `prefix`, in the
/// version directory `which` names (see [`version_dir`]).
pub fn frame(which: &str, prefix: &str) -> String {
    let dir = version_dir(which);
    let found = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("fixture {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
                && p.extension().is_some_and(|x| x == "txt")
        });
    let Some(p) = found else {
        panic!("fixture missing: {}/{prefix}*.txt", dir.display());
    };
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("fixture {}: {e}", p.display()))
}

/// Beside a recording's `raw-main-120x40.bin` in a paced recording (`tests/fixtures/paced`):
/// one line per read of the capture's pipe (each of tmux's writes of the pane's bytes), `T
/// END`: seconds since the capture began, and the raw stream's offset at the read's end.
pub const PACE: &str = "raw-main-120x40.pace";

/// One read of a paced recording's pipe: `t` seconds into the capture, ending at raw offset
/// `end`.
#[derive(Clone, Copy, Debug)]
pub struct Read {
    pub t: f64,
    pub end: usize,
}

/// The [`PACE`] of the recording in `dir`, if it has one (a line that does not parse fails the
/// run: a bench must not quietly fall back to another pace).
pub fn load_pace(dir: &Path) -> Option<Vec<Read>> {
    let p = dir.join(PACE);
    let text = std::fs::read_to_string(&p).ok()?;
    let reads = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let mut w = l.split_whitespace();
            match (
                w.next().and_then(|t| t.parse().ok()),
                w.next().and_then(|e| e.parse().ok()),
            ) {
                (Some(t), Some(end)) => Read { t, end },
                _ => panic!("{}:{}: expected `T END`", p.display(), i + 1),
            }
        })
        .collect();
    Some(reads)
}
