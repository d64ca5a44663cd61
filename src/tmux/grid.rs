//! The wake-up grid: instants spaced one period apart from a common epoch. A control client that
//! keeps being written to is read on the grid (every second instant) instead of at every write,
//! and the daemon's own timers that can wait (capture rounds, spinner frames, slow probes) land
//! on it too, so that one wake-up serves every connection and every timer due at that instant.
//!
//! Why: on a virtual machine a wake-up of an idle process costs tens of microseconds before it
//! does anything (measured: 40 µs for a bare read of a pipe), and five agents redrawing every
//! 50 ms wake a reader of every write about 100 times a second. Pure: no clock of its own.

use std::time::{Duration, Instant};

/// A grid of instants `epoch + k × period`. A zero period is no grid: every instant is on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    epoch: Instant,
    period: Duration,
}

impl Grid {
    /// A grid of `period` starting at `epoch`.
    pub fn new(epoch: Instant, period: Duration) -> Grid {
        Grid { epoch, period }
    }

    /// No grid: nothing is rounded, and readers read every write at once.
    pub fn off() -> Grid {
        Grid {
            epoch: Instant::now(),
            period: Duration::ZERO,
        }
    }

    /// Whether there is a grid at all.
    pub fn is_on(&self) -> bool {
        !self.period.is_zero()
    }

    /// The spacing of the grid (zero when off).
    pub fn period(&self) -> Duration {
        self.period
    }

    /// The grid of every `k`-th instant of this one (same epoch).
    pub fn coarser(&self, k: u32) -> Grid {
        Grid {
            epoch: self.epoch,
            period: self.period * k,
        }
    }

    /// The first grid instant at or after `t` (`t` itself when the grid is off, or when `t` is
    /// before the epoch).
    pub fn at_or_after(&self, t: Instant) -> Instant {
        if !self.is_on() || t <= self.epoch {
            return t;
        }
        let since = t.duration_since(self.epoch).as_nanos();
        let step = self.period.as_nanos();
        let k = since.div_ceil(step);
        self.epoch + nanos(k * step)
    }

    /// The grid instant nearest to `from + every` (the later one on a tie), and always after
    /// `from`: a period that repeats lands on the grid without drifting (`from + every` itself
    /// when the grid is off).
    pub fn nearest(&self, from: Instant, every: Duration) -> Instant {
        let t = from + every;
        if !self.is_on() {
            return t;
        }
        let early = t.checked_sub(self.period / 2).unwrap_or(t);
        self.at_or_after(early).max(self.after(from))
    }

    /// The first grid instant strictly after `t` (`t` itself when the grid is off).
    pub fn after(&self, t: Instant) -> Instant {
        if !self.is_on() {
            return t;
        }
        let at = self.at_or_after(t);
        if at == t {
            at + self.period
        } else {
            at
        }
    }
}

fn nanos(n: u128) -> Duration {
    // A grid instant fits in a Duration: it is at most one period past an existing Instant.
    Duration::new(
        u64::try_from(n / 1_000_000_000).unwrap_or(u64::MAX),
        (n % 1_000_000_000) as u32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn rounds_up_to_the_next_multiple_of_the_period() {
        let e = Instant::now();
        let g = Grid::new(e, ms(50));
        assert_eq!(g.at_or_after(e + ms(1)), e + ms(50));
        assert_eq!(g.at_or_after(e + ms(49)), e + ms(50));
        assert_eq!(g.at_or_after(e + ms(50)), e + ms(50));
        assert_eq!(g.at_or_after(e + ms(51)), e + ms(100));
        assert_eq!(
            g.at_or_after(e + Duration::from_secs(86_400 * 365) + ms(1)),
            e + Duration::from_secs(86_400 * 365) + ms(50)
        );
        assert_eq!(g.at_or_after(e), e);
    }

    #[test]
    fn after_is_strictly_later() {
        let e = Instant::now();
        let g = Grid::new(e, ms(40));
        assert_eq!(g.after(e + ms(40)), e + ms(80));
        assert_eq!(g.after(e + ms(41)), e + ms(80));
        assert_eq!(g.after(e), e + ms(40));
    }

    #[test]
    fn two_deadlines_in_one_period_meet_on_one_instant() {
        let e = Instant::now();
        let g = Grid::new(e, ms(50));
        assert_eq!(g.at_or_after(e + ms(103)), g.at_or_after(e + ms(141)));
    }

    #[test]
    fn nearest_lands_on_the_grid_and_moves_forward() {
        let e = Instant::now();
        let g = Grid::new(e, ms(100));
        // From a grid instant or from between two, a 100 ms period lands on the next instant.
        assert_eq!(g.nearest(e + ms(100), ms(100)), e + ms(200));
        assert_eq!(g.nearest(e + ms(150), ms(100)), e + ms(200));
        assert_eq!(g.nearest(e + ms(103), ms(120)), e + ms(200));
        assert_eq!(g.nearest(e + ms(100), ms(160)), e + ms(300));
        // Never the instant it starts from, even for a short period.
        assert_eq!(g.nearest(e + ms(100), ms(10)), e + ms(200));
        let off = Grid::off();
        assert_eq!(off.nearest(e, ms(7)), e + ms(7));
    }

    #[test]
    fn a_coarser_grid_keeps_the_epoch() {
        let e = Instant::now();
        let g = Grid::new(e, ms(50));
        let c = g.coarser(2);
        assert_eq!(c.period(), ms(100));
        assert_eq!(c.at_or_after(e + ms(51)), e + ms(100));
        assert_eq!(c.at_or_after(e + ms(101)), e + ms(200));
        assert_eq!(g.at_or_after(c.at_or_after(e + ms(101))), e + ms(200));
    }

    #[test]
    fn off_changes_nothing() {
        let g = Grid::off();
        let t = Instant::now() + ms(7);
        assert!(!g.is_on());
        assert_eq!(g.at_or_after(t), t);
        assert_eq!(g.after(t), t);
    }
}
