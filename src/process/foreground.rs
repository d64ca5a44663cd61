//! Foreground job of a pane (procfs).
