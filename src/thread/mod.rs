//! The pure per-window core: [`Rollup`] turns pane statuses and "looked at" facts into one mark
//! per tmux window (S4) with the done-until-seen record, sound and notification triggers (S6);
//! [`persist`] saves the done marks across restarts; [`icon`] renders the status-line options.
//! No tmux, no clock of its own: the daemon feeds facts with `now` and performs the effects.

pub mod icon;
pub mod persist;
mod rollup;

#[cfg(test)]
mod tests;

pub use rollup::{NotifyReason, Rollup, RollupEffect, RollupInput};
