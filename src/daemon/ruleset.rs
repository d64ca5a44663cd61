//! The detection rules in force: the catalog (bundled manifests and the overrides folder), the
//! process identities it yields, and what the overrides folder held when they were read, so that
//! a change there is noticed on the slow timer. Loading reads files, so it runs off the core
//! loop ([`Loaded::read`] in a blocking task); the daemon swaps the result in.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::config;
use crate::effects::notification::DisplaySwitches;
use crate::process::identify::IdentityTable;
use crate::rules::{Catalog, Rejected};

/// Name, size and modification time of each `.toml` in the overrides folder.
pub type Stamp = Vec<(PathBuf, u64, SystemTime)>;

/// The rules in force.
#[derive(Debug)]
pub struct RuleSet {
    /// Bundled manifests with the overrides applied.
    pub catalog: Catalog,
    /// Which processes are which agent.
    pub identities: IdentityTable,
    /// The overrides folder when the catalog was read.
    pub stamp: Stamp,
    /// Override files that failed validation (for `doctor`).
    pub rejected: Vec<Rejected>,
}

impl RuleSet {
    /// Reads the bundled rules and the overrides in `dir` (blocking); returns the rules and the
    /// one-line summary. Rejected files are logged with `file:line: reason`.
    pub fn load(dir: &Path) -> (RuleSet, String) {
        let report = Catalog::load(dir);
        for r in &report.rejected {
            for reason in &r.reasons {
                tracing::warn!("rejected rule file: {reason}");
            }
        }
        let summary = report.summary();
        let catalog = report.catalog;
        (
            RuleSet {
                identities: catalog.identity_table(),
                catalog,
                stamp: stamp(dir),
                rejected: report.rejected,
            },
            summary,
        )
    }
}

/// What the overrides folder holds now (blocking).
pub fn stamp(dir: &Path) -> Stamp {
    let mut out: Stamp = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "toml"))
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((e.path(), m.len(), m.modified().ok()?))
        })
        .collect();
    out.sort();
    out
}

/// A reload's result: the config and the rules, read together off the core loop.
#[derive(Debug)]
pub struct Reloaded {
    /// The config.
    pub config: config::Loaded,
    /// The rules.
    pub rules: RuleSet,
    /// The rules' one-line summary.
    pub summary: String,
}

impl Reloaded {
    /// Reads both (blocking).
    pub fn read(config_path: Option<&Path>, rules_dir: &Path) -> Reloaded {
        let config = config::load(config_path);
        let (rules, summary) = RuleSet::load(rules_dir);
        Reloaded {
            config,
            rules,
            summary,
        }
    }
}

/// What the slow timer looks at on disk, read off the core loop.
#[derive(Debug)]
pub struct SlowLook {
    /// The overrides folder now.
    pub stamp: Stamp,
    /// The panel options file's modification time now (None: no file).
    pub panel_stamp: Option<SystemTime>,
    /// Its display switches, when the file changed since `known` (else None and unchanged).
    pub panel_switches: Option<Option<DisplaySwitches>>,
}

impl SlowLook {
    /// Reads the folder's stamp, and the panel file when its time differs from `known`.
    pub fn read(rules_dir: &Path, panel: &Path, known: Option<SystemTime>) -> SlowLook {
        let panel_stamp = std::fs::metadata(panel).and_then(|m| m.modified()).ok();
        let panel_switches = (panel_stamp != known).then(|| {
            panel_stamp.and_then(|_| {
                crate::panel::ViewOptions::load(panel)
                    .map_err(|e| tracing::warn!("panel options: {e:#}"))
                    .ok()
                    .map(|o| o.display)
            })
        });
        SlowLook {
            stamp: stamp(rules_dir),
            panel_stamp,
            panel_switches,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stamp_sees_a_file_added_and_the_panel_file_is_read_only_when_it_changed() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(stamp(dir.path()).is_empty());
        std::fs::write(dir.path().join("x.toml"), "id = 'x'").expect("write");
        std::fs::write(dir.path().join("notes.txt"), "no").expect("write");
        assert_eq!(stamp(dir.path()).len(), 1);
        let panel = dir.path().join("panel.json");
        let none = SlowLook::read(dir.path(), &panel, None);
        assert_eq!(none.panel_stamp, None);
        assert!(
            none.panel_switches.is_none(),
            "no file, nothing known: unchanged"
        );
        std::fs::write(&panel, "{}").expect("write");
        let first = SlowLook::read(dir.path(), &panel, None);
        assert!(first.panel_stamp.is_some());
        assert!(matches!(first.panel_switches, Some(Some(_))));
        let again = SlowLook::read(dir.path(), &panel, first.panel_stamp);
        assert!(
            again.panel_switches.is_none(),
            "unchanged file: not read again"
        );
    }
}
