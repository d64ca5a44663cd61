//! Placeholder: the agents panel TUI.
