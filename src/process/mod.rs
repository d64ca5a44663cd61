//! The foreground process of a pane, read from procfs, and which agent it is.
//! Owns: reading `/proc` and the agent's version ([`version`]); does not own: what the agent's state is (that is `rules` and `pane`).

pub mod foreground;
pub mod identify;
pub mod look_files;
pub mod version;
