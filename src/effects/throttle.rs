//! At most one notification per window per interval (S6.6: 30 s). A note offered inside the
//! interval is not lost: it replaces the window's pending note and is delivered when the interval
//! ends, so a block that comes 10 s after a done is still learned. Pure; the clock is passed in.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::ids::WindowId;

/// The spec's interval between two notifications of the same window.
pub const NOTIFY_INTERVAL: Duration = Duration::from_secs(30);

#[derive(Debug)]
struct Slot<N> {
    sent_at: Instant,
    pending: Option<N>,
}

/// Per-window rate limiter holding at most one pending note per window.
#[derive(Debug)]
pub struct Throttle<N> {
    interval: Duration,
    slots: HashMap<WindowId, Slot<N>>,
}

impl<N> Default for Throttle<N> {
    fn default() -> Self {
        Self::new(NOTIFY_INTERVAL)
    }
}

impl<N> Throttle<N> {
    /// A throttle with the given interval ([`NOTIFY_INTERVAL`] in the daemon).
    pub fn new(interval: Duration) -> Self {
        Throttle {
            interval,
            slots: HashMap::new(),
        }
    }

    /// Offers a note for `window`: returns it when it may be sent now, else keeps it as the
    /// window's pending note (replacing an older pending one) and returns `None`.
    pub fn offer(&mut self, now: Instant, window: WindowId, note: N) -> Option<N> {
        let interval = self.interval;
        match self.slots.get_mut(&window) {
            Some(slot) if now < slot.sent_at + interval => {
                slot.pending = Some(note);
                None
            }
            _ => {
                self.slots.insert(
                    window,
                    Slot {
                        sent_at: now,
                        pending: None,
                    },
                );
                Some(note)
            }
        }
    }

    /// Takes the pending notes whose window's interval has ended, oldest deadline first. Each
    /// counts as sent at `now`, so the next one of its window waits a whole interval again.
    pub fn due(&mut self, now: Instant) -> Vec<N> {
        let interval = self.interval;
        let mut ready: Vec<(Instant, N)> = Vec::new();
        for slot in self.slots.values_mut() {
            if slot.pending.is_some() && now >= slot.sent_at + interval {
                let deadline = slot.sent_at + interval;
                if let Some(note) = slot.pending.take() {
                    slot.sent_at = now;
                    ready.push((deadline, note));
                }
            }
        }
        // Forget windows with nothing pending whose interval is over: the map stays bounded.
        self.slots
            .retain(|_, s| s.pending.is_some() || now < s.sent_at + interval);
        ready.sort_by_key(|(deadline, _)| *deadline);
        ready.into_iter().map(|(_, note)| note).collect()
    }

    /// When [`Throttle::due`] next has something to deliver, if anything is pending.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.slots
            .values()
            .filter(|s| s.pending.is_some())
            .map(|s| s.sent_at + self.interval)
            .min()
    }

    /// Drops the window's pending note (the person looked at the window), returning it.
    pub fn withdraw(&mut self, window: WindowId) -> Option<N> {
        self.slots.get_mut(&window).and_then(|s| s.pending.take())
    }

    /// Forgets everything about a window (it was closed).
    pub fn forget(&mut self, window: WindowId) {
        self.slots.remove(&window);
    }

    /// Number of windows with a pending note.
    pub fn pending(&self) -> usize {
        self.slots.values().filter(|s| s.pending.is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W1: WindowId = WindowId(1);
    const W2: WindowId = WindowId(2);

    fn secs(t0: Instant, s: u64) -> Instant {
        t0 + Duration::from_secs(s)
    }

    #[test]
    fn first_note_goes_out_at_once_later_ones_wait_and_the_latest_wins() {
        let t0 = Instant::now();
        let mut th = Throttle::new(NOTIFY_INTERVAL);
        assert_eq!(th.offer(t0, W1, "done"), Some("done"));
        assert_eq!(th.offer(secs(t0, 5), W1, "working"), None);
        assert_eq!(th.offer(secs(t0, 10), W1, "blocked"), None);
        assert_eq!(th.next_deadline(), Some(secs(t0, 30)));
        assert!(th.due(secs(t0, 29)).is_empty());
        assert_eq!(th.due(secs(t0, 30)), vec!["blocked"]);
        assert_eq!(th.next_deadline(), None);
        // Delivered at 30 s: the next one waits until 60 s.
        assert_eq!(th.offer(secs(t0, 31), W1, "error"), None);
        assert_eq!(th.next_deadline(), Some(secs(t0, 60)));
        assert_eq!(th.due(secs(t0, 61)), vec!["error"]);
    }

    #[test]
    fn windows_are_independent_and_due_is_ordered_by_deadline() {
        let t0 = Instant::now();
        let mut th = Throttle::new(NOTIFY_INTERVAL);
        assert!(th.offer(t0, W1, 1).is_some());
        assert!(th.offer(secs(t0, 2), W2, 2).is_some());
        assert!(th.offer(secs(t0, 3), W2, 22).is_none());
        assert!(th.offer(secs(t0, 4), W1, 11).is_none());
        assert_eq!(th.pending(), 2);
        assert_eq!(th.due(secs(t0, 40)), vec![11, 22]);
    }

    #[test]
    fn after_the_interval_a_note_goes_out_at_once_and_withdraw_drops_pending() {
        let t0 = Instant::now();
        let mut th = Throttle::new(NOTIFY_INTERVAL);
        assert!(th.offer(t0, W1, 1).is_some());
        assert!(th.offer(secs(t0, 30), W1, 2).is_some());
        assert!(th.offer(secs(t0, 31), W1, 3).is_none());
        assert_eq!(th.withdraw(W1), Some(3));
        assert!(th.due(secs(t0, 100)).is_empty());
        th.forget(W1);
        assert!(th.offer(secs(t0, 101), W1, 4).is_some());
    }
}
