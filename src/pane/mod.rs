//! The pure per-pane core: one [`Tracker`] per tmux pane joins what the foreground probe, the
//! screen rules, status reports (OSC 7501), `THINKTERM_AGENT` and native signals (OSC 9;4, title
//! spinner) say into one published [`PaneStatus`] (S3). No I/O and no clock of its own: every
//! input comes with `now`, so tests drive it with a fake clock.
//!
//! Owns: identity and state arbitration, the screen debounce, "publish idle when the agent exits".
//! Does not own: parsing (osc, rules, process), the report records table, the window rollup.

mod input;
mod status;
mod tracker;

#[cfg(test)]
mod tests;

pub use input::{
    ForegroundInput, NativeProgress, PaneInput, ProgressState, ReportSummary, ScreenVerdict,
    UserVarReport,
};
pub use status::{PaneChange, PaneEffect, PaneStatus};
pub use tracker::Tracker;
