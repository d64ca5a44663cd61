//! The window card (S4.3): one tmux window ("thread") summed up for a glance: its name, the
//! number of agents in it, and each agent with its mark, title and state icon and, under them,
//! the state in words with what the program reported (progress, what it waits for, what it
//! does). As many agents as fit the size, then a line `N more`.
//!
//! `thinkterm-sidecar card` prints it (text or JSON); `card --menu` shows it as a tmux
//! `display-menu` on a client, each agent an item that goes to its pane; `card --hold` keeps
//! it up in a `display-popup`. The CLI glue is `src/cli/card.rs`.
//!
//! Layout: [`model`] picks the window out of the daemon's snapshot (pure, no I/O) →
//! [`layout`] fits it to a size and writes the text lines (and the JSON) → [`menu`] writes
//! the `display-menu` argv, with every pane-supplied text escaped for tmux. The words, marks
//! and icons are the panel's ([`crate::panel`]), so both say the same thing.

pub mod layout;
pub mod menu;
pub mod model;

pub use layout::{fit, text_lines, CardJson, Extent, Fit};
pub use menu::{menu_argv, menu_text, MenuBox};
pub use model::{build, AgentEntry, WindowCard, WindowTarget};
