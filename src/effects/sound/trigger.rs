//! When the two sounds ring (S6.1, S6.2). Pure; the clock is passed in.
//!
//! `waiting`: a pane's state becomes `blocked` from anything else (another pane of the same
//! window beginning to wait rings again; answering does not ring). `done`: a window's work ends
//! (it leaves `working` for idle, not for blocked or error) after at least [`MIN_WORK`].
//! Both ring whether or not the window is being looked at.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::ids::WindowId;
use crate::state::AgentState;

/// The least work before `done` rings.
pub const MIN_WORK: Duration = Duration::from_secs(5);

/// Whether a pane's change rings `waiting`.
pub fn waiting_rings(old: Option<AgentState>, new: Option<AgentState>) -> bool {
    new == Some(AgentState::Blocked) && old != Some(AgentState::Blocked)
}

/// Tracks since when each window works, to decide `done`.
#[derive(Debug, Default)]
pub struct DoneTracker {
    working_since: HashMap<WindowId, Instant>,
}

impl DoneTracker {
    /// A tracker that knows no window yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds whether `window` is working now (any pane working: its "running" rollup) and whether
    /// it needs the person (blocked or error). Returns true when `done` should ring.
    pub fn update(
        &mut self,
        now: Instant,
        window: WindowId,
        working: bool,
        needs_person: bool,
    ) -> bool {
        if working {
            self.working_since.entry(window).or_insert(now);
            return false;
        }
        match self.working_since.remove(&window) {
            Some(since) => !needs_person && now.saturating_duration_since(since) >= MIN_WORK,
            None => false,
        }
    }

    /// Forgets a closed window.
    pub fn forget(&mut self, window: WindowId) {
        self.working_since.remove(&window);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use AgentState::*;

    #[test]
    fn waiting_rings_on_each_start_of_waiting_only() {
        assert!(waiting_rings(Some(Working), Some(Blocked)));
        assert!(waiting_rings(None, Some(Blocked)));
        assert!(waiting_rings(Some(Idle), Some(Blocked)));
        assert!(!waiting_rings(Some(Blocked), Some(Blocked)));
        assert!(!waiting_rings(Some(Blocked), Some(Working)));
        assert!(!waiting_rings(Some(Blocked), Some(Idle)));
    }

    #[test]
    fn done_needs_five_seconds_of_work_ending_in_idle() {
        let t0 = Instant::now();
        let w = WindowId(1);
        let mut d = DoneTracker::new();
        assert!(!d.update(t0, w, true, false));
        assert!(!d.update(t0 + Duration::from_secs(3), w, true, false));
        assert!(
            !d.update(t0 + Duration::from_millis(4999), w, false, false),
            "too short"
        );
        assert!(
            !d.update(t0 + Duration::from_secs(6), w, false, false),
            "not working before"
        );
        assert!(!d.update(t0 + Duration::from_secs(10), w, true, false));
        assert!(d.update(t0 + Duration::from_secs(15), w, false, false));
        assert!(!d.update(t0 + Duration::from_secs(20), w, true, false));
        assert!(
            !d.update(t0 + Duration::from_secs(30), w, false, true),
            "blocked is not done"
        );
    }
}
