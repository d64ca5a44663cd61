//! Programs' own notifications (OSC 9, OSC 777 `notify`, OSC 99): tmux swallows them, the
//! sidecar shows them. This module decides *whether* one is shown; the daemon builds and
//! delivers it like any other (click-to-focus of that pane, followers, terminal).
//!
//! - **When**: not while its pane is in front — a person looking at the window sees what the
//!   program says; the window is "in front" by the same rule as the sidecar's own notifications
//!   (S6.5). OSC 99's `o=always` asks to be shown anyway, and is.
//! - **How often**: per pane, [`BURST`] at once, then one per [`REFILL`] (a token bucket), so a
//!   program in a loop cannot flood the desktop. What goes over is dropped; the first drop of a
//!   run is logged once, and the count when the pane is under the limit again.
//!
//! Pure: the clock is passed in.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::ids::PaneId;
use crate::osc::Occasion;

/// Notifications a pane may send at once.
pub const BURST: u32 = 3;
/// Time for one more to be allowed.
pub const REFILL: Duration = Duration::from_secs(10);
/// Panes remembered at most (a full bucket is forgotten first: it holds nothing).
const MAX_PANES: usize = 1024;

/// Whether a program's notification is shown, by its occasion and whether its pane is in
/// front.
pub fn wanted(occasion: Occasion, in_front: bool) -> bool {
    match occasion {
        Occasion::Always => true,
        Occasion::Unfocused | Occasion::Invisible => !in_front,
    }
}

/// What the rate limit says about one notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Show it; `dropped` notifications of this pane were dropped since the last one shown.
    Show {
        /// Dropped before this one.
        dropped: u64,
    },
    /// Drop it; `first` when it starts a run of drops (log it).
    Drop {
        /// The first drop since the last one shown.
        first: bool,
    },
}

#[derive(Debug)]
struct Bucket {
    tokens: u32,
    /// When the next token is counted from.
    since: Instant,
    dropped: u64,
}

/// The per-pane rate limit.
#[derive(Debug, Default)]
pub struct RateLimit {
    panes: HashMap<PaneId, Bucket>,
}

impl RateLimit {
    /// One notification of `pane` at `now`.
    pub fn offer(&mut self, now: Instant, pane: PaneId) -> Verdict {
        if self.panes.len() >= MAX_PANES && !self.panes.contains_key(&pane) {
            self.panes.retain(|_, b| {
                let refilled =
                    now.saturating_duration_since(b.since).as_secs_f64() / REFILL.as_secs_f64();
                (b.tokens as f64 + refilled) < BURST as f64
            });
        }
        let b = self.panes.entry(pane).or_insert(Bucket {
            tokens: BURST,
            since: now,
            dropped: 0,
        });
        let elapsed = now.saturating_duration_since(b.since);
        let gained = (elapsed.as_nanos() / REFILL.as_nanos()) as u32;
        if gained > 0 {
            b.tokens = (b.tokens + gained).min(BURST);
            b.since += REFILL * gained;
        }
        if b.tokens == BURST {
            b.since = now;
        }
        if b.tokens == 0 {
            b.dropped += 1;
            return Verdict::Drop {
                first: b.dropped == 1,
            };
        }
        b.tokens -= 1;
        let dropped = std::mem::take(&mut b.dropped);
        Verdict::Show { dropped }
    }

    /// A closed pane.
    pub fn forget(&mut self, pane: PaneId) {
        self.panes.remove(&pane);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_always_shows_while_the_pane_is_in_front() {
        assert!(wanted(Occasion::Always, true));
        assert!(!wanted(Occasion::Unfocused, true));
        assert!(!wanted(Occasion::Invisible, true));
        assert!(wanted(Occasion::Unfocused, false));
    }

    #[test]
    fn a_burst_then_one_per_interval_and_drops_counted_once() {
        let t0 = Instant::now();
        let mut r = RateLimit::default();
        let p = PaneId(1);
        for _ in 0..BURST {
            assert_eq!(r.offer(t0, p), Verdict::Show { dropped: 0 });
        }
        assert_eq!(r.offer(t0, p), Verdict::Drop { first: true });
        for _ in 0..998 {
            assert_eq!(r.offer(t0, p), Verdict::Drop { first: false });
        }
        // Another pane has its own bucket.
        assert_eq!(r.offer(t0, PaneId(2)), Verdict::Show { dropped: 0 });
        // One interval later, one more, with the count of what was dropped.
        assert_eq!(r.offer(t0 + REFILL, p), Verdict::Show { dropped: 999 });
        assert_eq!(r.offer(t0 + REFILL, p), Verdict::Drop { first: true });
        // A long quiet time refills the burst, no more.
        let later = t0 + REFILL * 100;
        for _ in 0..BURST {
            assert!(matches!(r.offer(later, p), Verdict::Show { .. }));
        }
        assert!(matches!(r.offer(later, p), Verdict::Drop { .. }));
    }

    #[test]
    fn a_loop_of_a_thousand_in_a_minute_shows_the_burst_and_one_per_interval() {
        let t0 = Instant::now();
        let mut r = RateLimit::default();
        let shown = (0..1000)
            .filter(|i| {
                let at = t0 + Duration::from_millis(i * 60);
                matches!(r.offer(at, PaneId(7)), Verdict::Show { .. })
            })
            .count();
        // 60 s: 3 at once, then one per 10 s.
        assert_eq!(shown, BURST as usize + 5);
    }
}
