//! Other machines: a sidecar reached over ssh (or any command) whose agents the local daemon
//! shows beside its own, and whose notifications and sounds it shows and plays on this desktop.
//!
//! - [`spec`]: how a machine is named and reached (`[[machines]]`), checked;
//! - [`link`]: one machine's connection: the child process (`ssh … thinkterm-sidecar bridge`),
//!   the `follow` stream, requests and their replies, reconnecting with backoff;
//! - [`bridge`]: the other end: `thinkterm-sidecar bridge` joins its stdin and stdout to the
//!   daemon's socket on the machine it runs on;
//! - [`commands`]: `thinkterm-sidecar machines`.
//!
//! The decision to notify is made where the facts are (the machine whose tmux knows whether the
//! person looks, S6.6): the followed daemon decides, the follower shows.

pub mod bridge;
pub mod commands;
pub mod link;
pub mod spec;
