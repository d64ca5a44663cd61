//! thinkterm-sidecar: watches every pane of a tmux server, recognises the AI coding agent running
//! in each, decides whether it is working, blocked, idle or stopped on an error, rolls that up per
//! tmux window and tells the person (status line, notifications, sounds, panel, CLI, events).
//!
//! Map of the crate (data flows top to bottom):
//! - [`tmux`]: control-mode connections (one per session), the line decoder, the inventory of
//!   sessions/windows/panes/clients, and pane captures sent over the connection.
//! - [`osc`]: the streaming escape-sequence scanner and the parsers of what it finds (OSC 7501
//!   status reports, `THINKTERM_AGENT`, OSC 9;4 progress, titles, OSC 133 prompt marks).
//! - [`process`]: the foreground process of a pane (procfs) and which agent it is.
//! - [`rules`]: screen-rule manifests (herdr-compatible), bundled and overridden, and the engine
//!   that classifies a pane snapshot.
//! - [`pane`]: the pure per-pane state machine that arbitrates all of the above.
//! - [`thread`]: the pure per-window rollup (marks, done-until-seen) and its persistence.
//! - [`effects`]: what the person sees and hears: status-line options, desktop notifications,
//!   sounds, focusing a pane.
//! - [`panel`]: the agents panel TUI (ratatui), fed by the daemon's event stream.
//! - [`card`]: the window card (S4.3), printed or shown as a tmux menu, from the panel's words.
//! - [`ipc`]: the daemon's unix socket and its JSON-lines protocol, server and client.
//! - [`remote`]: other machines' sidecars, reached over ssh (or any command) through
//!   `thinkterm-sidecar bridge`.
//! - [`daemon`]: the glue that owns the tasks and wires the pieces together; [`timer`] wakes
//!   them with one `timerfd`.
//! - [`config`]: defaults, the config file and environment overrides; [`clock`]: time, read
//!   once per wake-up.
//! - [`cli`]: the command-line interface; [`generate`]: its completions and man pages;
//!   [`doctor`]: the checks of a first run.
//! - [`skill`]: `skill setup`, the skill and session-start hook given to Claude Code and Codex
//!   so that they can drive the other panes.
//! - [`service`]: the daemon started in the background for one server and ending with it;
//!   [`logging`]: where its log goes (terminal, journal, rotated file).

pub mod card;
pub mod cli;
pub(crate) mod clock;
pub mod config;
pub mod daemon;
pub mod doctor;
pub mod effects;
pub mod generate;
pub mod ids;
pub mod ipc;
pub mod logging;
pub mod osc;
pub(crate) mod pane;
pub mod panel;
pub(crate) mod paths;
pub mod process;
pub mod remote;
pub mod rules;
pub mod service;
pub mod skill;
pub mod state;
pub(crate) mod thread;
pub mod timer;
pub mod tmux;
pub mod vt;

/// The recorded agent fixtures under `tests/fixtures/agents`, for unit tests: the same helper
/// the integration tests and benches use.
#[cfg(test)]
#[path = "../tests/support/fixtures.rs"]
pub(crate) mod test_fixtures;
