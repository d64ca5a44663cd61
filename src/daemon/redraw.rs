//! The redraw gate: an agent pane whose bytes carry nothing the sidecar reads except the screen
//! they draw (no status report, no `THINKTERM_AGENT` value, no progress, no prompt mark, no
//! notification so far) and that writes a lot between two looks at its screen has the copy of
//! its output paused in our control client (`refresh-client -A '%P:pause'`) until its next
//! capture. The capture round resumes it (`continue`, sent before the capture on the same
//! connection, so whatever the pane writes after the capture arrives and asks for the next one)
//! and reads its title with the screen, since the titles it sent while paused did not reach us.
//!
//! Why: tmux formats every byte it copies to a control client (one `printf` per byte below
//! 0x20) and a full-screen redraw (Gemini CLI's reach 278 KB) is mostly such bytes; none of them
//! changes what a capture shows. The change signal is kept (the first bytes after each capture
//! still arrive), so the latency of a state change is the capture schedule's, as before.
//!
//! A pane stops being gated as soon as its bytes may matter (a signal other than a title came,
//! its program changed): it is resumed at once. Pure: no clock is needed.

/// What the caller must do in tmux.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateAction {
    /// Send `refresh-client -A '%P:pause'`.
    Pause,
    /// Send `refresh-client -A '%P:continue'`.
    Resume,
}

/// One pane's redraw gate.
#[derive(Clone, Debug, Default)]
pub struct RedrawGate {
    /// Bytes received since the last capture went out.
    since_capture: u64,
    /// Our copy is paused.
    paused: bool,
    /// A capture round resumed the pane: its `%continue` asks for no capture of its own.
    resumed_for_round: bool,
    /// Pauses so far (for `explain`).
    pauses: u64,
}

impl RedrawGate {
    /// `bytes` of the pane's output arrived. `limit`: bytes since the last capture above which
    /// an `eligible` pane is paused (0: never). Returns [`GateAction::Pause`] when it must be.
    pub fn on_output(&mut self, bytes: usize, eligible: bool, limit: u64) -> Option<GateAction> {
        if self.paused {
            // Bytes tmux had sent before the pause reached it.
            return None;
        }
        self.since_capture = self.since_capture.saturating_add(bytes as u64);
        if limit == 0 || !eligible || self.since_capture < limit {
            return None;
        }
        self.paused = true;
        self.pauses += 1;
        Some(GateAction::Pause)
    }

    /// A capture of the pane goes out. Returns [`GateAction::Resume`] when the pane was paused:
    /// the caller resumes it before the capture and reads its title with it.
    pub fn on_capture(&mut self) -> Option<GateAction> {
        self.since_capture = 0;
        if !self.paused {
            return None;
        }
        self.paused = false;
        self.resumed_for_round = true;
        Some(GateAction::Resume)
    }

    /// A `%continue` for the pane arrived: whether a capture round resumed it (its capture is
    /// already on the way, so none more is needed).
    pub fn take_resumed(&mut self) -> bool {
        std::mem::take(&mut self.resumed_for_round)
    }

    /// The pane's bytes may matter now: resume at once if it is paused.
    pub fn release(&mut self) -> Option<GateAction> {
        self.since_capture = 0;
        std::mem::take(&mut self.paused).then_some(GateAction::Resume)
    }

    /// Whether our copy is paused.
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// How many times the pane was paused.
    pub fn pauses(&self) -> u64 {
        self.pauses
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The config's default, `redraw_pause_kib = 16`.
    const LIMIT: u64 = 16 * 1024;

    #[test]
    fn a_big_redraw_pauses_until_the_next_capture_resumes() {
        let mut g = RedrawGate::default();
        assert_eq!(g.on_output(8 * 1024, true, LIMIT), None);
        assert_eq!(g.on_output(8 * 1024, true, LIMIT), Some(GateAction::Pause));
        assert!(g.is_paused());
        // What tmux had sent before the pause changes nothing.
        assert_eq!(g.on_output(64 * 1024, true, LIMIT), None);
        assert_eq!(g.on_capture(), Some(GateAction::Resume));
        assert!(!g.is_paused());
        // The `%continue` that follows is the round's own.
        assert!(g.take_resumed());
        assert!(!g.take_resumed());
        // The count starts again at the capture.
        assert_eq!(g.on_output(LIMIT as usize - 1, true, LIMIT), None);
        assert_eq!(g.on_capture(), None, "not paused: nothing to resume");
        assert_eq!(g.pauses(), 1);
        assert_eq!(g.on_output(LIMIT as usize - 1, true, LIMIT), None);
    }

    #[test]
    fn small_writes_between_captures_never_pause() {
        let mut g = RedrawGate::default();
        for _ in 0..1000 {
            for _ in 0..10 {
                assert_eq!(g.on_output(400, true, LIMIT), None);
            }
            assert_eq!(g.on_capture(), None);
        }
    }

    #[test]
    fn panes_whose_bytes_matter_and_a_zero_limit_are_never_paused() {
        let mut g = RedrawGate::default();
        assert_eq!(g.on_output(1 << 20, false, LIMIT), None);
        assert_eq!(g.on_output(1 << 20, true, 0), None);
        assert!(!g.is_paused());
    }

    #[test]
    fn release_resumes_a_paused_pane_once() {
        let mut g = RedrawGate::default();
        assert_eq!(g.release(), None);
        assert_eq!(g.on_output(1 << 20, true, LIMIT), Some(GateAction::Pause));
        assert_eq!(g.release(), Some(GateAction::Resume));
        assert_eq!(g.release(), None);
        // A release is not a round's resume: its `%continue` asks for a capture.
        assert!(!g.take_resumed());
        assert_eq!(g.on_capture(), None);
    }
}
