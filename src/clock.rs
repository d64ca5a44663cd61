//! Time, read in one place. The daemon reads the clock once per wake-up ([`Now::read`]) and hands
//! that reading to everything it calls, so a whole turn of the loop sees one instant, and the
//! pure parts (trackers, rollup, schedulers) take `now` as an argument and run on a fake clock in
//! tests. Unix times for the wire are derived from the same reading.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// One reading of both clocks, taken together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Now {
    /// The monotonic instant (for deadlines and durations).
    pub at: Instant,
    /// Unix milliseconds at the same moment (for the wire and reports).
    pub unix_ms: u64,
}

impl Now {
    /// Reads both clocks.
    pub fn read() -> Now {
        Now {
            at: Instant::now(),
            unix_ms: unix_ms(),
        }
    }

    /// A reading for tests: `at` with an arbitrary unix time.
    #[cfg(test)]
    pub fn fake(at: Instant, unix_ms: u64) -> Now {
        Now { at, unix_ms }
    }

    /// Unix seconds.
    pub fn unix_s(&self) -> u64 {
        self.unix_ms / 1000
    }

    /// The unix milliseconds of another instant, by its distance from this reading.
    pub fn unix_ms_of(&self, t: Instant) -> u64 {
        unix_ms_at(t, self.at, self.unix_ms)
    }

    /// This reading `d` later.
    #[cfg(test)]
    pub fn after(self, d: std::time::Duration) -> Now {
        Now {
            at: self.at + d,
            unix_ms: self.unix_ms + d.as_millis() as u64,
        }
    }
}

/// Unix milliseconds now (0 if the system clock is before 1970).
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Unix seconds now.
pub fn unix_s() -> u64 {
    unix_ms() / 1000
}

/// The unix milliseconds of instant `at`, given the pair (`now`, `now_unix_ms`) read together.
pub fn unix_ms_at(at: Instant, now: Instant, now_unix_ms: u64) -> u64 {
    let back = now.saturating_duration_since(at).as_millis() as u64;
    let ahead = at.saturating_duration_since(now).as_millis() as u64;
    now_unix_ms.saturating_sub(back).saturating_add(ahead)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn instants_map_to_unix_time_both_ways() {
        let t = Instant::now();
        let now = Now::fake(t + Duration::from_secs(5), 10_000);
        assert_eq!(now.unix_ms_of(t), 5_000);
        assert_eq!(now.unix_ms_of(t + Duration::from_secs(7)), 12_000);
        assert_eq!(now.unix_s(), 10);
        assert_eq!(now.after(Duration::from_millis(250)).unix_ms, 10_250);
        assert_eq!(Now::fake(t, 100).unix_ms_of(t - Duration::from_secs(1)), 0);
    }
}
