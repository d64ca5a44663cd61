//! Capture rounds: which panes' screens are captured when. The one owner of "this pane needs a
//! look": panes that wrote since their last capture, panes whose screen must be read again
//! (a new agent, a new title, output resumed, new rules), when each was last captured, when the
//! next round is due and whether one is in flight.
//!
//! A pane that was quiet is captured a little after it writes (its redraw settles); panes that
//! keep drawing are captured at most every `capture_interval_ms`, together, on the fine grid
//! their pipes are read on while they draw ([`crate::tmux::quick::QuickPanes`]), so that one
//! wake-up reads their output and sends the captures and one more takes in the replies.
//! A look that a pane's verified screen model serves needs no capture and nothing to settle:
//! it comes in the wake-up that read the bytes ([`CaptureScheduler::want_served`]).
//! While a round is in flight no other starts; what wrote meanwhile waits for the next. Pure:
//! every method takes `now`.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use crate::ids::PaneId;
use crate::tmux::grid::Grid;

/// The capture schedule of every pane.
#[derive(Debug)]
pub struct CaptureScheduler {
    /// Panes to capture at the next round that takes them.
    pending: BTreeSet<PaneId>,
    /// The round that last captured each pane.
    captured_at: HashMap<PaneId, Instant>,
    /// The next round.
    due: Option<Instant>,
    /// The round in flight (its instant), if any.
    in_flight: Option<Instant>,
    /// Panes whose screen model served looks, and when a capture must check it.
    checks: HashMap<PaneId, Instant>,
    /// How long a quiet pane's output settles before its capture.
    delay: Duration,
    /// Shortest time between two captures of one pane.
    every: Duration,
    /// The fine grid: busy panes are captured on its instants (an agent's pipe is read on
    /// them while it draws, [`crate::tmux::quick::QuickPanes`]).
    grid: Grid,
}

impl CaptureScheduler {
    /// A schedule with these timings, on these grids.
    pub fn new(delay: Duration, every: Duration, grid: Grid) -> Self {
        CaptureScheduler {
            pending: BTreeSet::new(),
            captured_at: HashMap::new(),
            due: None,
            in_flight: None,
            checks: HashMap::new(),
            delay,
            every,
            grid,
        }
    }

    /// New timings (a reload); what is pending stays.
    pub fn set_timing(&mut self, delay: Duration, every: Duration) {
        self.delay = delay;
        self.every = every;
    }

    /// `pane` needs a capture (it wrote, or its screen must be read again). A pane that was
    /// quiet is captured `delay` from now, on the grid; a pane that keeps drawing (captured
    /// within its last two intervals) when its interval ends, on the read grid: at once if it
    /// has ended.
    pub fn want(&mut self, pane: PaneId, now: Instant) {
        self.want_at_least(pane, now, self.grid.at_or_after(now + self.delay));
    }

    /// `pane` needs a look, and its verified screen model will serve it: the bytes it wrote
    /// are in the model already, so nothing settles; the look comes in this wake-up (or when
    /// its interval ends). Waiting for the next grid instant as a capture does put the read
    /// grid's 50 ms on every transition: a pipe read on the grid at 0 was looked at 50 ms on,
    /// so that writes took up to 100 ms to show.
    pub fn want_served(&mut self, pane: PaneId, now: Instant) {
        self.want_at_least(pane, now, now);
    }

    /// `pane` needs a look: at `quiet` if it was quiet, else when its interval ends (at once if
    /// it has ended).
    fn want_at_least(&mut self, pane: PaneId, now: Instant, quiet: Instant) {
        self.pending.insert(pane);
        let at = match self.last_due(pane) {
            Some(d) if now < d + self.every => d.max(now),
            _ => quiet,
        };
        self.due = Some(self.due.map_or(at, |d| d.min(at)));
    }

    /// `pane` needs a look at `at` (the end of its hold, when its last look was of the frame
    /// before the one it is drawing).
    pub fn want_at(&mut self, pane: PaneId, at: Instant) {
        self.pending.insert(pane);
        self.due = Some(self.due.map_or(at, |d| d.min(at)));
    }

    /// `pane`'s screen model served a look: a capture must check it at `at`, unless one
    /// comes before.
    pub fn check_at(&mut self, pane: PaneId, at: Instant) {
        self.checks.insert(pane, at);
    }

    /// Forgets a pane (gone, or its output no longer read).
    pub fn forget(&mut self, pane: PaneId) {
        self.pending.remove(&pane);
        self.captured_at.remove(&pane);
        self.checks.remove(&pane);
    }

    /// Whether `pane` waits for a capture.
    #[cfg(test)]
    fn is_pending(&self, pane: PaneId) -> bool {
        self.pending.contains(&pane)
    }

    /// Forgets everything (another tmux server).
    pub fn reset(&mut self) {
        self.pending.clear();
        self.captured_at.clear();
        self.due = None;
        self.in_flight = None;
        self.checks.clear();
    }

    /// When the next round is due; none while a round is in flight (its end lets the next go).
    pub fn next_deadline(&self) -> Option<Instant> {
        let check = self.checks.values().min().copied();
        [self.due, check]
            .into_iter()
            .flatten()
            .min()
            .filter(|_| self.in_flight.is_none())
    }

    /// Starts the round due at `now`, if any: the panes it captures (pending and due by their
    /// interval, and not `held`: a pane whose program is drawing a frame waits until the time
    /// `held` gives, or its next output). The rest stay pending, and the next round is due when
    /// the first of them is. An empty answer starts nothing.
    pub fn start(&mut self, now: Instant, held: impl Fn(PaneId) -> Option<Instant>) -> Vec<PaneId> {
        if self.in_flight.is_some() {
            return Vec::new();
        }
        // Checks that are due wait as any pane does (their interval ends them at once).
        let checked: Vec<PaneId> = self
            .checks
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in checked {
            self.checks.remove(&id);
            self.want(id, now);
        }
        if self.due.is_none_or(|d| d > now) {
            return Vec::new();
        }
        let round = now;
        let until = |id: PaneId| {
            let hold = held(id).filter(|h| *h > round);
            match (self.last_due(id), hold) {
                (Some(d), Some(h)) => Some(d.max(h)),
                (d, h) => d.or(h),
            }
        };
        let (take, wait): (Vec<PaneId>, Vec<PaneId>) = self
            .pending
            .iter()
            .partition(|id| until(**id).is_none_or(|t| t <= round));
        self.due = wait.iter().filter_map(|id| until(*id)).min();
        for id in &take {
            self.pending.remove(id);
        }
        if !take.is_empty() {
            self.in_flight = Some(round);
        }
        take
    }

    /// Panes of the round in flight whose look their screen model served: they count as
    /// captured by it (their interval runs from it).
    pub fn served(&mut self, panes: &[PaneId]) {
        if let Some(round) = self.in_flight {
            for id in panes {
                self.captured_at.insert(*id, round);
            }
        }
    }

    /// The round in flight ended; `captured` are the panes whose screens came back.
    pub fn finish(&mut self, captured: impl IntoIterator<Item = PaneId>) {
        if let Some(round) = self.in_flight.take() {
            for id in captured {
                self.captured_at.insert(id, round);
                self.checks.remove(&id);
            }
        }
    }

    /// When a pane is due by its interval: `every` after its last capture, rounded to the
    /// nearest instant of the fine grid, which its pipe is read on while it draws (panes
    /// drawing at once share rounds).
    fn last_due(&self, pane: PaneId) -> Option<Instant> {
        self.captured_at
            .get(&pane)
            .map(|t| self.grid.nearest(*t, self.every))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn no_hold(_: PaneId) -> Option<Instant> {
        None
    }

    fn sched(grid: Grid) -> CaptureScheduler {
        CaptureScheduler::new(ms(40), ms(100), grid)
    }

    #[test]
    fn a_quiet_pane_is_captured_after_its_output_settles() {
        let e = Instant::now();
        let mut s = sched(Grid::off());
        let p = PaneId(1);
        s.want(p, e);
        assert_eq!(s.next_deadline(), Some(e + ms(40)));
        assert!(s.start(e + ms(39), no_hold).is_empty(), "not due yet");
        assert_eq!(s.start(e + ms(40), no_hold), [p]);
        // In flight: nothing else starts, and output meanwhile waits.
        s.want(p, e + ms(50));
        assert_eq!(s.next_deadline(), None);
        assert!(s.start(e + ms(200), no_hold).is_empty());
        s.finish([p]);
        // The output at 50 settles until 90; captured at 40, the pane is due again at 140.
        assert_eq!(s.next_deadline(), Some(e + ms(90)));
        assert!(
            s.start(e + ms(90), no_hold).is_empty(),
            "its interval has not ended"
        );
        assert_eq!(s.next_deadline(), Some(e + ms(140)));
        assert_eq!(s.start(e + ms(140), no_hold), [p]);
        s.finish([p]);
        assert!(!s.is_pending(p));
        assert_eq!(s.next_deadline(), None);
    }

    #[test]
    fn panes_drawing_at_once_fall_into_the_same_rounds() {
        let e = Instant::now();
        let grid = Grid::new(e, ms(50));
        let mut s = sched(grid);
        let (a, b, c) = (PaneId(1), PaneId(2), PaneId(3));
        // a was captured on a grid instant, b 20 ms later (the end of its hold).
        s.captured_at.insert(a, e + ms(1000));
        s.captured_at.insert(b, e + ms(1020));
        s.pending.extend([a, b, c]);
        s.due = Some(e + ms(1060));
        assert_eq!(s.start(e + ms(1060), no_hold), [c]);
        s.finish([c]);
        assert_eq!(s.next_deadline(), Some(e + ms(1100)));
        // At that instant both are due: one round, one reply for both.
        assert_eq!(s.start(e + ms(1100), no_hold), [a, b]);
    }

    #[test]
    fn a_failed_capture_is_not_recorded_and_a_forgotten_pane_is_not_captured() {
        let e = Instant::now();
        let mut s = sched(Grid::off());
        let (a, b) = (PaneId(1), PaneId(2));
        s.want(a, e);
        s.want(b, e);
        s.forget(b);
        assert_eq!(s.start(e + ms(40), no_hold), [a]);
        s.finish([]);
        assert!(s.captured_at.is_empty());
        s.want(a, e + ms(41));
        // Never captured: a quiet pane again.
        assert_eq!(s.next_deadline(), Some(e + ms(81)));
        s.reset();
        assert_eq!(s.next_deadline(), None);
    }

    #[test]
    fn a_pane_its_model_served_is_looked_at_again_only_when_it_writes_or_its_check_is_due() {
        let e = Instant::now();
        let mut s = sched(Grid::off());
        let p = PaneId(1);
        s.want(p, e);
        assert_eq!(s.start(e + ms(40), no_hold), [p]);
        // The model served this round's look; its check is due 2 s on.
        s.served(&[p]);
        s.check_at(p, e + ms(2040));
        s.finish([]);
        assert!(!s.is_pending(p), "a look served is a look taken");
        assert_eq!(s.next_deadline(), Some(e + ms(2040)));
        // It writes: its interval runs from the served round.
        s.want(p, e + ms(60));
        assert_eq!(s.next_deadline(), Some(e + ms(140)));
        assert_eq!(s.start(e + ms(140), no_hold), [p]);
        s.served(&[p]);
        s.finish([]);
        // Quiet from then on: the check comes, as a quiet pane's capture, and ends the check.
        assert!(s.start(e + ms(2040), no_hold).is_empty());
        assert_eq!(s.next_deadline(), Some(e + ms(2080)));
        assert_eq!(s.start(e + ms(2080), no_hold), [p]);
        s.finish([p]);
        assert_eq!(s.next_deadline(), None);
    }

    /// A look its verified model serves comes in the wake-up that read the bytes, a moment
    /// after the grid instant that woke the process, not at the next instant (50 ms on);
    /// its interval still spaces the looks of a pane that keeps drawing.
    #[test]
    fn a_look_the_model_serves_comes_in_the_wake_up_that_read_the_bytes() {
        let e = Instant::now();
        let grid = Grid::new(e, ms(50));
        let mut s = CaptureScheduler::new(ms(40), ms(50), grid);
        let p = PaneId(1);
        // Read on the grid instant at 1000, taken in 0.3 ms after it.
        let read = e + ms(1000) + Duration::from_micros(300);
        s.want_served(p, read);
        assert_eq!(s.next_deadline(), Some(read), "not at 1050 as a capture");
        assert_eq!(s.start(read, no_hold), [p]);
        s.served(&[p]);
        s.finish([]);
        // It drew again 10 ms later (a quiet pipe's write, read at once): its interval ends at
        // the grid instant 50 ms after the last look.
        s.want_served(p, e + ms(1010));
        assert_eq!(s.next_deadline(), Some(e + ms(1050)));
        // A capture instead waits for its output to settle, on the grid.
        let q = PaneId(2);
        s.want(q, read);
        assert_eq!(s.next_deadline(), Some(e + ms(1050)));
        assert_eq!(s.start(e + ms(1050), no_hold), [p, q]);
    }

    #[test]
    fn a_pane_drawing_a_frame_waits_for_its_end_or_the_hold() {
        let e = Instant::now();
        let mut s = sched(Grid::off());
        let (a, b) = (PaneId(1), PaneId(2));
        s.want(a, e);
        s.want(b, e);
        // `a` is inside a synchronized update until 300 ms: only `b` goes.
        let held = |id: PaneId| (id == a).then_some(e + ms(300));
        assert_eq!(s.start(e + ms(40), held), [b]);
        s.finish([b]);
        assert_eq!(s.next_deadline(), Some(e + ms(300)), "the hold's end");
        assert!(s.is_pending(a));
        assert!(s.start(e + ms(200), held).is_empty());
        // The hold ends (or the frame's end came as output and asked again).
        assert_eq!(s.start(e + ms(300), held), [a]);
        s.finish([a]);
        // A hold that has passed holds nothing.
        s.want(a, e + ms(1000));
        assert_eq!(s.start(e + ms(1040), held), [a]);
    }
}
