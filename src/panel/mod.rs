//! The agents panel (S5): `thinkterm-sidecar panel`, a full-screen ratatui TUI made to open in
//! `tmux display-popup -E`. It subscribes to the daemon's socket, keeps a pure [`PanelModel`]
//! of every agent (the last snapshot with events applied), draws one card per agent grouped
//! and filtered by saved [`ViewOptions`], and on Enter asks the daemon to focus the pane.
//!
//! Owns: the model, rendering, keys, the view options file, the worktree line. Does not own:
//! the socket server, focusing panes or marking results seen (the daemon does those on request).
//!
//! Layout: [`model`] (data and selection) → [`grouping`] (order and headings) → [`card`] and
//! [`detail`] (rows of text) → [`render`] (cells); [`keys`] turns keys into [`Outcome`]s;
//! [`runtime`] connects it all to the socket and the terminal.

pub mod card;
pub mod client;
pub mod detail;
pub mod grouping;
pub mod keys;
pub mod menu;
pub mod model;
pub mod options;
pub mod render;
pub mod runtime;
pub mod text;
pub mod theme;
pub mod worktree;

pub use keys::{handle_key, Outcome};
pub use model::PanelModel;
pub use options::{default_options_path, ViewOptions};
pub use runtime::{origin_from_env, run, App, Link, Msg};

#[cfg(test)]
mod render_tests;
