//! Escape-sequence signals of a pane (S3.1–S3.3, S7, S8): the streaming [`scanner`] over a pane's
//! raw output, the parsers of what it finds ([`status_report`] OSC 7501, [`user_var`]
//! `THINKTERM_AGENT`, [`progress`] OSC 9;4, [`title`] OSC 0/2, prompt marks and notifications in
//! [`signals`]), the OSC 7501 [`records`] table, the [`encode`]r behind `thinkterm-sidecar
//! report`, and [`PaneSignals`], the per-pane facade the daemon feeds. Pure: no I/O, the clock
//! is passed in. Deciding what a pane *is* from these signals belongs to `pane`.

pub mod encode;
pub mod kitty_notify;
pub mod progress;
pub mod records;
pub mod scanner;
pub mod signals;
pub mod status_report;
pub mod title;
pub mod user_var;

pub use signals::{Occasion, PaneSignals, ProgramNotification, PromptMark, Signal};
