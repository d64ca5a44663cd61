//! Everything that talks to tmux: the control-mode protocol ([`protocol`], [`escape`]), one
//! control client ([`connection`]) and the grid it is read on ([`grid`]), command lines
//! ([`command`]), which server ([`server`]), what it holds ([`inventory`]), the panes' pipes
//! ([`pipe`]), writes to a pane's terminal seen without its bytes ([`tty_watch`]) and the watcher
//! of a whole server ([`observer`]).
//! Owns: the tmux wire; does not own: what the panes' contents mean.

pub(crate) mod attach;
pub mod command;
pub mod connection;
pub mod escape;
pub mod grid;
pub(crate) mod imsg;
pub mod inventory;
pub mod observer;
pub mod pipe;
pub mod protocol;
pub mod quick;
pub mod server;
pub mod tty_watch;
