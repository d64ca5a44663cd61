//! Flood control for panes nobody needs to read: a pane with no agent, no status report and no
//! `THINKTERM_AGENT` value that writes faster than a limit (`yes`, a build log, `cat` of a big
//! file) stops being copied to us. A pane read through its pipe (the default) has the pipe held
//! closed (`Observer::hold_pipe`): tmux then writes its bytes nowhere, which at 1 MiB/s on a busy
//! server saves tmux a write and a turn of its loop a few hundred times a second, and the daemon
//! the reads; its terminal is watched for writes instead (`tmux::tty_watch`), so the terminal
//! notes' wait for a still window (`daemon::terminal`) still sees when it writes. A pane read
//! through a control client has its output paused there (`refresh-client -A '%P:pause'`),
//! and counts as writing while paused. tmux keeps reading the pane either way (the program
//! never blocks, other clients see everything).
//!
//! The pause is held for a while (2 s, then twice as long each time up to [`MAX_HOLD`]). When a
//! hold ends:
//! - a pane whose terminal is watched is watched for [`STILL`] more: if it wrote, the flood goes
//!   on and the pause is held again, without opening the pipe; if it was still, the flood is
//!   over and its bytes are read again (a notice at the end of a build comes through);
//! - every [`SAMPLE_EVERY`] of a pause, and at each hold's end for a pane whose terminal is not
//!   watched, output is resumed for a sample (the pipe opened again): if the pane still floods
//!   it is paused again; a pane that calmed down (a steady trickle after the flood) stays on.
//!
//! Opening the pipe again costs tmux a `fork` and the machine a relay (an `sh` and our binary:
//! about 3 ms of CPU, with tmux's writes of a quarter second of the flood and our reads of
//! them); a held pane's check costs one read of the `inotify` queue. A change of the pane's
//! foreground command, or an agent or report appearing, resumes it at once.
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
/// The longest hold: how long after a flood ends its pane can be read again (plus [`STILL`]).
pub const MAX_HOLD: Duration = Duration::from_secs(8);
/// How long a held pane's terminal is watched at the end of a hold: still this long, the
/// flood is over (a flood above the limit writes many times in it).
pub const STILL: Duration = Duration::from_millis(500);
/// How often a pane that keeps writing has its bytes sampled: how late a report from a
/// flooding non-agent pane, or the end of its flood in a trickle that never stops, can be
/// noticed.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(32);

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
    /// Until when the pane stays paused, or is watched (None: output is on).
    paused_until: Option<Instant>,
    /// The hold ended and the pane's terminal is watched until `paused_until`: whether it
    /// wrote meanwhile (None: holding).
    checking: Option<bool>,
    /// When the pause began (its bytes were last read then).
    paused_at: Option<Instant>,
    /// The next hold.
    hold: Duration,
    /// Output resumed after a hold and the first window is the sample: flooding in it pauses
    /// again with a doubled hold.
    sampling: bool,
    /// Pauses so far (for `explain`).
    pauses: u64,
    /// Holds begun so far: each pause's first, and each after a check found the flood going
    /// on (for `explain`).
    holds: u64,
}

impl FloodGate {
    /// A gate for `limit` bytes per second (0: never pause).
    pub fn new(limit: u64) -> Self {
        FloodGate {
            limit,
            window_start: None,
            window_bytes: 0,
            paused_until: None,
            checking: None,
            paused_at: None,
            hold: FIRST_HOLD,
            sampling: false,
            pauses: 0,
            holds: 0,
        }
    }

    /// Pauses so far.
    pub fn pauses(&self) -> u64 {
        self.pauses
    }

    /// Holds begun so far (a pause's first, and each one after a check).
    pub fn holds(&self) -> u64 {
        self.holds
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
        self.paused_at = Some(now);
        self.checking = None;
        self.window_start = None;
        self.window_bytes = 0;
        self.pauses += 1;
        self.holds += 1;
        Some(FloodAction::Pause)
    }

    /// The held pane wrote to its terminal (its writes are drained before each deadline):
    /// during a check, the flood goes on.
    pub fn on_wrote(&mut self) {
        if let Some(wrote) = &mut self.checking {
            *wrote = true;
        }
    }

    /// A hold or a check ended. `watched`: the pane's writes are known while it is paused (a
    /// pipe held closed, its terminal watched), and were drained just before. Returns
    /// [`FloodAction::Resume`] when the pane's bytes are to be read again: the flood is over,
    /// or a sample is due.
    pub fn on_deadline(&mut self, now: Instant, watched: bool) -> Option<FloodAction> {
        if self.paused_until.is_none_or(|t| t > now) {
            return None;
        }
        let paused_for = self
            .paused_at
            .map_or(Duration::MAX, |at| now.saturating_duration_since(at));
        match self.checking {
            // The hold ended: watch the terminal a moment, unless a sample is due.
            None if watched && paused_for < SAMPLE_EVERY => {
                self.checking = Some(false);
                self.paused_until = Some(now + STILL);
                None
            }
            // It wrote: the flood goes on; hold again, up to when a sample is due.
            Some(true) => {
                self.checking = None;
                self.holds += 1;
                self.hold = (self.hold * 2).min(MAX_HOLD);
                let next = now + self.hold;
                let sample = self.paused_at.map_or(next, |at| at + SAMPLE_EVERY);
                self.paused_until = Some(next.min(sample).max(now));
                None
            }
            // Still (the flood is over), or a sample is due: read its bytes again.
            _ => {
                self.paused_until = None;
                self.checking = None;
                self.paused_at = None;
                self.sampling = true;
                self.window_start = Some(now);
                self.window_bytes = 0;
                Some(FloodAction::Resume)
            }
        }
    }

    /// Something may now read the pane (its command changed, an agent or a report appeared):
    /// resume at once and start over.
    pub fn release(&mut self) -> Option<FloodAction> {
        let was = self.paused_until.take().is_some();
        self.checking = None;
        self.paused_at = None;
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
        // A pane whose writes are not known while paused (read through a control client).
        let t0 = Instant::now();
        let mut g = FloodGate::new(LIMIT);
        assert_eq!(g.on_output(t0, BIG - 1, true), None);
        assert_eq!(g.on_output(ms(t0, 10), 1, true), Some(FloodAction::Pause));
        assert!(g.is_paused());
        assert_eq!(g.next_deadline(), Some(ms(t0, 2010)));
        // Nothing more while paused (tmux may still deliver what was in flight).
        assert_eq!(g.on_output(ms(t0, 20), BIG, true), None);
        assert_eq!(g.on_deadline(ms(t0, 2000), false), None);
        assert_eq!(
            g.on_deadline(ms(t0, 2010), false),
            Some(FloodAction::Resume)
        );
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
            assert_eq!(g.on_deadline(t, false), Some(FloodAction::Resume));
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
        assert_eq!(
            g.on_deadline(ms(t0, 102_000), false),
            Some(FloodAction::Resume)
        );
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
        assert_eq!(
            g.on_deadline(ms(t0, 2000), false),
            Some(FloodAction::Resume)
        );
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

    /// A gate whose pane flooded at `t0`: paused, for its first hold.
    fn flooded_at(t0: Instant) -> FloodGate {
        let mut g = FloodGate::new(LIMIT);
        assert_eq!(g.on_output(t0, BIG * 2, true), Some(FloodAction::Pause));
        g
    }

    /// A held pane whose terminal is watched: each hold ends with a look at whether it still
    /// writes; while it does, the pause is held again with no pipe opened, and its bytes are
    /// sampled only every SAMPLE_EVERY.
    #[test]
    fn a_watched_flood_is_held_again_while_it_writes_and_sampled_rarely() {
        let t0 = Instant::now();
        let mut g = flooded_at(t0);
        let mut resumes = Vec::new();
        let mut checks = Vec::new();
        while let Some(t) = g.next_deadline() {
            if t > ms(t0, 60_000) {
                break;
            }
            let checking = g.checking.is_some();
            // It floods on: every check sees a write.
            if checking {
                g.on_wrote();
            }
            match g.on_deadline(t, true) {
                Some(FloodAction::Resume) => {
                    resumes.push(t.duration_since(t0).as_millis());
                    // The sample sees the flood: paused again.
                    assert_eq!(g.on_output(t, BIG * 2, true), Some(FloodAction::Pause));
                }
                Some(FloodAction::Pause) => panic!("a deadline never pauses"),
                None if !checking => checks.push(t.duration_since(t0).as_millis()),
                None => {}
            }
        }
        // Holds of 2, 4, 8, 8 s with a 0.5 s look after each, then the sample at 32 s.
        assert_eq!(checks, [2000, 6500, 15_000, 23_500, 40_000, 48_500, 57_000]);
        assert_eq!(resumes, [32_000]);
        assert_eq!((g.pauses(), g.holds()), (2, 9));
        // Before a check, a write means nothing (it is from the flood the hold was for).
        let mut h = flooded_at(t0);
        h.on_wrote();
        assert_eq!(h.on_deadline(ms(t0, 2000), true), None);
        assert_eq!(h.next_deadline(), Some(ms(t0, 2500)));
    }

    /// A held pane still for STILL at the end of a hold has its bytes read again at once (a
    /// notice printed after a build log comes through), and stays on while it is calm.
    #[test]
    fn a_watched_flood_that_stopped_is_read_again_after_its_hold() {
        let t0 = Instant::now();
        let mut g = flooded_at(t0);
        assert_eq!(g.on_deadline(ms(t0, 1999), true), None);
        assert_eq!(g.on_deadline(ms(t0, 2000), true), None);
        assert!(g.is_paused(), "watched for a moment, still paused");
        assert_eq!(g.on_deadline(ms(t0, 2400), true), None);
        assert_eq!(g.on_deadline(ms(t0, 2500), true), Some(FloodAction::Resume));
        assert!(!g.is_paused());
        assert_eq!(g.next_deadline(), None);
        // Calm: it stays on, and the next flood starts with the first hold again.
        assert_eq!(g.on_output(ms(t0, 2600), 10, true), None);
        assert_eq!(g.on_output(ms(t0, 2900), 10, true), None);
        assert_eq!(
            g.on_output(ms(t0, 5000), BIG * 2, true),
            Some(FloodAction::Pause)
        );
        assert_eq!(g.next_deadline(), Some(ms(t0, 7000)));
        // A pane no longer watched when its hold ends is sampled, as before.
        assert_eq!(
            g.on_deadline(ms(t0, 7000), false),
            Some(FloodAction::Resume)
        );
    }
}
