//! Screen rules: herdr-compatible manifests (engine v3) with our extensions (`name`, `mark`,
//! `commands`, `reports_from`, `self_report`, `[identity]`, `[[fingerprints]]`), bundled and
//! overridden from `$XDG_CONFIG_HOME/thinkterm/agent-detection/`, and the pure engine that
//! classifies a pane snapshot.
//!
//! - `raw`/[`compile`]: two-stage loading with `file:line: reason` errors and the limits.
//! - [`region`]: which part of the snapshot a rule looks at.
//! - [`eval`]: the engine (priorities, fallback, evidence).
//! - [`catalog`]: bundled + overrides, aliases, identity table, fingerprints.
//! - [`render`]: text for `rules list`, `rules explain ID`, `rules check` and `explain`.
//! - [`drift`]: the drift alarm, a pane whose screen its agent's rules no longer recognise.
//! - [`fixture`]: a pane's screen, title, process and verdict as a fixture (`.txt` + `.json`).

mod bundled;
pub mod catalog;
pub mod compile;
pub mod drift;
pub mod eval;
pub mod fixture;
pub mod model;
mod raw;
pub mod region;
pub mod render;

pub use catalog::{
    check_file, AgentInfo, Catalog, Explanation, LoadReport, Rejected, Source, Support,
};
pub use eval::{Evidence, Verdict};
pub use model::{Manifest, RuleState, ENGINE_VERSION};
pub use region::Region;

/// What the rules see of a pane at one instant.
#[derive(Clone, Copy, Debug, Default)]
pub struct Snapshot<'a> {
    /// The visible screen as `capture-pane -p -J` prints it.
    pub screen: &'a str,
    /// The title the program itself sent; `None` until it sends one (never tmux's fallback).
    pub osc_title: Option<&'a str>,
    /// The last OSC 9;4 progress report the program sent; `None` until it sends one. The
    /// `osc_progress` region reads it as `4;1;50`.
    pub osc_progress: Option<crate::osc::progress::Progress>,
}
