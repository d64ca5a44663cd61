//! Flood control for panes nobody needs to read: a pane with no agent, no status report and no
//! `THINKTERM_AGENT` value that writes faster than a limit (`yes`, a build log, `cat` of a big
//! file) stops being copied to us. A pane read through its pipe (the default) has the pipe held
//! closed (`Observer::hold_pipe`): tmux then writes its bytes nowhere, which at 1 MiB/s on a busy
//! server saves tmux a write and a turn of its loop a few hundred times a second, and the daemon
//! the reads; its terminal is watched for writes instead (`tmux::tty_watch`), so the terminal
//! notes' wait for a still window (`daemon::terminal`) still sees when it writes. A pane read
//! through a control client has its output paused there (`refresh-client -A '%P:pause'`),
//! and counts as writing while paused. tmux keeps reading the pane either way (the program
//! never blocks, other clients see everything). The pause is held for a while, then output
//! is resumed for a sample (the pipe opened again): if the pane still floods it is paused
//! again, for twice as long (up to [`MAX_HOLD`]); a pane that calmed down stays on. A change of
//! the pane's foreground command, or an agent or report appearing, resumes it at once.
//!
//! What is lost while a pane is paused is only what the sidecar would have scanned of its bytes:
//! escape sequences from a program that is not an agent, and what a new program in the pane
//! writes before tmux tells its new command (within a second). Titles and commands still arrive
//! by subscription. Pure logic with an injected clock.

use std::time::{Duration, Instant};

/// The window over which the rate is measured.
pub const WINDOW: Duration = Duration::from_millis(250);
/// The first hold of a pause.
pub const FIRST_HOLD: Duration = Duration::from_secs(2);
/// The longest hold: how late a report from a flooding non-agent pane can be noticed.
pub const MAX_HOLD: Duration = Duration::from_secs(8);

/// What the caller must do in tmux.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloodAction {
    /// Send `refresh-client -A '%P:pause'`.
    Pause,
    /// Send `refresh-client -A '%P:continue'`.
    Resume,
}

/// One pane's flood gate.
#[derive(Clone, Debug)]
pub struct FloodGate {
    /// Bytes per second above which an eligible pane is paused; 0 turns the gate off.
    limit: u64,
    window_start: Option<Instant>,
    window_bytes: u64,
    /// Until when the pane stays paused (None: output is on).
    paused_until: Option<Instant>,
    /// The next hold.
    hold: Duration,
    /// Output resumed after a hold and the first window is the sample: flooding in it pauses
    /// again with a doubled hold.
    sampling: bool,
    /// Pauses so far (for `explain`).
    pauses: u64,
}

impl FloodGate {
    /// A gate for `limit` bytes per second (0: never pause).
    pub fn new(limit: u64) -> Self {
        FloodGate {
            limit,
            window_start: None,
            window_bytes: 0,
            paused_until: None,
            hold: FIRST_HOLD,
            sampling: false,
            pauses: 0,
        }
    }

    /// Pauses so far.
    pub fn pauses(&self) -> u64 {
        self.pauses
    }

    /// Whether output is paused now.
    pub fn is_paused(&self) -> bool {
        self.paused_until.is_some()
    }

    /// When [`FloodGate::on_deadline`] must run.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.paused_until
    }

    /// `bytes` of output arrived. `eligible`: nothing reads this pane's bytes (no agent, no
    /// report, no variable). Returns [`FloodAction::Pause`] when the pane floods.
    pub fn on_output(&mut self, now: Instant, bytes: usize, eligible: bool) -> Option<FloodAction> {
        if self.limit == 0 || !eligible || self.paused_until.is_some() {
            return None;
        }
        let start = *self.window_start.get_or_insert(now);
        if now.duration_since(start) >= WINDOW {
            // A window ended below the limit: the pane is calm.
            self.window_start = Some(now);
            self.window_bytes = 0;
            if self.sampling {
                self.sampling = false;
                self.hold = FIRST_HOLD;
            }
        }
        self.window_bytes += bytes as u64;
        let per_window = self.limit * WINDOW.as_millis() as u64 / 1000;
        if self.window_bytes < per_window.max(1) {
            return None;
        }
        if self.sampling {
            self.hold = (self.hold * 2).min(MAX_HOLD);
        }
        self.sampling = false;
        self.paused_until = Some(now + self.hold);
        self.window_start = None;
        self.window_bytes = 0;
        self.pauses += 1;
        Some(FloodAction::Pause)
    }

    /// The hold ended: resume for a sample.
    pub fn on_deadline(&mut self, now: Instant) -> Option<FloodAction> {
        match self.paused_until {
            Some(t) if t <= now => {
                self.paused_until = None;
                self.sampling = true;
                self.window_start = Some(now);
                self.window_bytes = 0;
                Some(FloodAction::Resume)
            }
            _ => None,
        }
    }

    /// Something may now read the pane (its command changed, an agent or a report appeared):
    /// resume at once and start over.
    pub fn release(&mut self) -> Option<FloodAction> {
        let was = self.paused_until.take().is_some();
        self.sampling = false;
        self.hold = FIRST_HOLD;
        self.window_start = None;
        self.window_bytes = 0;
        was.then_some(FloodAction::Resume)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: u64 = 256 * 1024;
    const BIG: usize = 64 * 1024;

    fn ms(t0: Instant, n: u64) -> Instant {
        t0 + Duration::from_millis(n)
    }

    #[test]
    fn a_flood_is_paused_then_sampled_with_a_growing_hold() {
        let t0 = Instant::now();
        let mut g = FloodGate::new(LIMIT);
        assert_eq!(g.on_output(t0, BIG - 1, true), None);
        assert_eq!(g.on_output(ms(t0, 10), 1, true), Some(FloodAction::Pause));
        assert!(g.is_paused());
        assert_eq!(g.next_deadline(), Some(ms(t0, 2010)));
        // Nothing more while paused (tmux may still deliver what was in flight).
        assert_eq!(g.on_output(ms(t0, 20), BIG, true), None);
        assert_eq!(g.on_deadline(ms(t0, 2000)), None);
        assert_eq!(g.on_deadline(ms(t0, 2010)), Some(FloodAction::Resume));
        // Still flooding in the sample: paused again, twice as long.
        assert_eq!(
            g.on_output(ms(t0, 2050), BIG, true),
            Some(FloodAction::Pause)
        );
        assert_eq!(g.next_deadline(), Some(ms(t0, 6050)));
        // The hold stops growing at MAX_HOLD.
        let mut holds = vec![4000];
        for _ in 0..3 {
            let t = g.next_deadline().unwrap();
            assert_eq!(g.on_deadline(t), Some(FloodAction::Resume));
            assert_eq!(g.on_output(t, BIG, true), Some(FloodAction::Pause));
            holds.push(g.next_deadline().unwrap().duration_since(t).as_millis());
        }
        assert_eq!(holds, [4000, 8000, 8000, 8000]);
    }

    #[test]
    fn slow_output_and_calm_samples_stay_on() {
        let t0 = Instant::now();
        let mut g = FloodGate::new(LIMIT);
        // 32 KiB every 250 ms is 128 KiB/s: under the limit, for a long time.
        for k in 0..400 {
            assert_eq!(g.on_output(ms(t0, k * 250), 32 * 1024, true), None);
        }
        // A flood, a pause, then a calm sample: the hold starts over.
        assert_eq!(
            g.on_output(ms(t0, 100_000), BIG, true),
            Some(FloodAction::Pause)
        );
        assert_eq!(g.on_deadline(ms(t0, 102_000)), Some(FloodAction::Resume));
        assert_eq!(g.on_output(ms(t0, 102_100), 10, true), None);
        assert_eq!(g.on_output(ms(t0, 102_400), 10, true), None);
        assert_eq!(
            g.on_output(ms(t0, 102_500), BIG, true),
            Some(FloodAction::Pause)
        );
        assert_eq!(g.next_deadline(), Some(ms(t0, 104_500)));
    }

    #[test]
    fn panes_someone_reads_are_never_paused() {
        let t0 = Instant::now();
        let mut g = FloodGate::new(LIMIT);
        for k in 0..100 {
            assert_eq!(g.on_output(ms(t0, k), BIG * 4, false), None);
        }
        assert!(!g.is_paused());
        // The gate off.
        let mut off = FloodGate::new(0);
        assert_eq!(off.on_output(t0, BIG * 100, true), None);
    }

    #[test]
    fn release_resumes_at_once_and_resets_the_hold() {
        let t0 = Instant::now();
        let mut g = FloodGate::new(LIMIT);
        assert_eq!(g.release(), None);
        assert_eq!(g.on_output(t0, BIG, true), Some(FloodAction::Pause));
        assert_eq!(g.on_deadline(ms(t0, 2000)), Some(FloodAction::Resume));
        assert_eq!(
            g.on_output(ms(t0, 2001), BIG, true),
            Some(FloodAction::Pause)
        );
        assert_eq!(g.release(), Some(FloodAction::Resume));
        assert!(!g.is_paused());
        assert_eq!(g.next_deadline(), None);
        assert_eq!(
            g.on_output(ms(t0, 7000), BIG, true),
            Some(FloodAction::Pause)
        );
        assert_eq!(g.next_deadline(), Some(ms(t0, 9000)));
    }
}
