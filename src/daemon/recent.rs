//! The bytes of a pane that carried a state (a status report, a `THINKTERM_AGENT` value,
//! progress), kept a few seconds with when each came. A program that `respawn-pane` starts can
//! report before the daemon learns that the pane respawned (tmux's subscriptions tell a new
//! first process within a second): the pane's new entry takes over what came after its first
//! process started. Pure: every method takes `now`.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How long the bytes are kept.
pub const RECENT_SIGNALS: Duration = Duration::from_secs(5);
/// At most this many bytes are kept (the oldest go first).
const MAX_BYTES: usize = 64 * 1024;

/// One pane's recent bytes that carried a state.
#[derive(Debug, Default)]
pub struct RecentSignals {
    kept: VecDeque<(Instant, Vec<u8>)>,
    /// The bytes in `kept`.
    bytes: usize,
}

impl RecentSignals {
    /// Keeps `bytes`, which came at `now`; drops what is older than [`RECENT_SIGNALS`] or
    /// beyond the size bound.
    pub fn keep(&mut self, now: Instant, bytes: Vec<u8>) {
        self.bytes += bytes.len();
        self.kept.push_back((now, bytes));
        while let Some((at, b)) = self.kept.front() {
            if self.bytes <= MAX_BYTES && now.duration_since(*at) < RECENT_SIGNALS {
                break;
            }
            self.bytes -= b.len();
            self.kept.pop_front();
        }
    }

    /// What came at or after `since`, oldest first.
    pub fn since(&self, since: Instant) -> Vec<Vec<u8>> {
        self.kept
            .iter()
            .filter(|(at, _)| *at >= since)
            .map(|(_, b)| b.clone())
            .collect()
    }
}
