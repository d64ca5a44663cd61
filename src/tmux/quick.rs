//! The panes whose pipes are read quickly while they keep writing (see [`QuickPanes`]).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use crate::ids::PaneId;

/// The panes the daemon looks at the screen of (agents): while one keeps writing, its pipe is
/// read on every instant of the fine grid, not every second one, so that the write that
/// changes its state waits at most half a read period to be read (an agent writing 10 – 20
/// times a second is always "busy"). Set by the daemon, read by the pipes' readers; shared.
#[derive(Clone, Debug, Default)]
pub struct QuickPanes(Arc<Mutex<HashSet<PaneId>>>);

impl QuickPanes {
    /// Whether `pane` is read on the fine grid.
    pub fn contains(&self, pane: PaneId) -> bool {
        self.0.lock().is_ok_and(|s| s.contains(&pane))
    }

    /// Reads `pane` on the fine grid (`quick`) or the read grid.
    pub fn set(&self, pane: PaneId, quick: bool) {
        if let Ok(mut s) = self.0.lock() {
            if quick {
                s.insert(pane);
            } else {
                s.remove(&pane);
            }
        }
    }

    /// Forgets every pane (another tmux server).
    pub fn clear(&self) {
        if let Ok(mut s) = self.0.lock() {
            s.clear();
        }
    }
}
