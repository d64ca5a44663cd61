//! How a pane's pipe is paced ([`super::reader`]): when a read counts as part of a flood or of
//! a big write, how long a flooding pipe is left to gather, when what its reads kept goes to
//! the daemon, and on which grid a pane that keeps writing is read next ([`grid_read`]: an
//! agent's on the half step). Pure: every function takes the instants it needs.
//!
//! A pipe holds about 64 KiB of tmux's writes. A pane whose reads bring that much within a read
//! period is a flood (one read of a full pipe, or a steady stream); tmux keeps what the pipe
//! cannot take, without bound. A flood is read as soon as tmux writes while each read finds the
//! pipe full, and a moment later, at its last rate, when one found less; what its reads kept
//! goes to the daemon once a read period, and at once when a read brings little: the pane
//! (all but) stopped, and the end of its burst (often the title or report that closes an
//! agent's redraw) does not wait for the grid. A flood younger than a read period is one big
//! write (Gemini CLI's 230 KB end-of-reply redraw) and is read every [`FLOOD_STEP`] until a
//! read finds the pipe empty; so is a pane in the read period after a read of [`BIG_READ`],
//! so that the end of a write tmux passes on in pieces does not wait for the grid.

use std::time::{Duration, Instant};

use crate::tmux::grid::Grid;

/// Reads that bring this much within a read period start a flood: one such read found the
/// pipe (about 64 KiB of tmux's 4 KiB writes) full; a 1 MiB/s build log read at each of its
/// 20 ms writes brings it in three.
pub(super) const FLOOD_BYTES: usize = 48 * 1024;
/// The shortest wait of a flooding pane's pipe after a read that found it less than full.
pub(super) const FLOOD_STEP: Duration = Duration::from_millis(2);
/// What a flooding pane's pipe is left to gather between two reads, at its last rate: well
/// below what makes tmux hold its writes back (about 53 KiB in the pipe), and in few wake-ups
/// (a 1 MiB/s build log is read about 30 times a second, not at each of tmux's writes).
pub(super) const FLOOD_TARGET: usize = 24 * 1024;
/// A read that brings this much is part of a big write (an agent's whole redraw): for a read
/// period after it, a read that brings anything is followed by another [`FLOOD_STEP`] later,
/// not on the read grid. Below what tmux writes a pipe in one turn of its loop (16 KiB) and
/// two of its reads of a pane (2 × 4095 bytes): on a busy server Gemini CLI's 230 KB
/// end-of-reply redraw came in reads of 16 380, 4 095, 12 285 and 8 190 bytes, and what
/// followed waited for the grid.
pub(super) const BIG_READ: usize = 8000;
/// A read in a flood that brings less than this (one of tmux's reads of a pane, 4 KiB) finds
/// the pane stopped or nearly: what the flood's reads kept goes to the daemon at once. The
/// last read of Gemini CLI's redraw brought 187 bytes, its title among them; the read grid
/// would have held them 100 ms.
pub(super) const EBB_BYTES: usize = 4 * 1024;

/// How many read periods after its last write an agent's pipe stays on the fine grid.
pub(super) const QUICK_TAIL: u32 = 2;
/// ... and how many while the grid reads that find it quiet are wake-ups shared with others
/// (5.25 s at the default 175 ms). Simulated on the paced recordings (600 s, random phases), a
/// tail of ten: five Claude Code panes took 27.5 wake-ups a second to read with [`QUICK_TAIL`]
/// alone and 21.1 with it; twenty agents of all five kinds 33.7 and 24.4; one pane alone 14.2
/// either way (a tail this long without the condition: 17.2). Measured on twin servers (the
/// 50-pane load): a tail of two cost the daemon 0.032 % of a core more than ten, and thirty
/// 0.006 % less; a pane read on the grid is read in a wake-up the process makes anyway, a
/// watched one wakes it twice at its next write (the write, then the gathering wait).
pub(super) const SHARED_TAIL: u32 = 30;

/// A pane that floods its pipe: read as fast as it fills, delivered on the read grid.
#[derive(Clone, Copy, Debug)]
pub(super) struct Flood {
    /// When the flood began.
    pub began: Instant,
    /// The start of the current read period, and the bytes read since.
    pub since: Instant,
    pub bytes: usize,
    /// When what is kept goes to the daemon next.
    pub deliver_at: Instant,
}

impl Flood {
    /// After a read of `got` bytes at `now`, `lately` bytes read in the [`Lately`] window
    /// (`got` among them): a flood starts once reads within a read period brought
    /// [`FLOOD_BYTES`] (one read that finds the pipe full, or the quick reads of a big write
    /// or a steady stream) and lasts while each read period brings as much (a quiet pipe is
    /// not read: a period with no read at all ended it).
    pub(super) fn next(
        flood: Option<Flood>,
        now: Instant,
        got: usize,
        lately: usize,
        period: Duration,
    ) -> Option<Flood> {
        let start = |f: Option<Flood>| {
            (lately >= FLOOD_BYTES).then_some(Flood {
                began: f.map_or(now, |f| f.began),
                since: now,
                bytes: got,
                deliver_at: f.map_or(now, |f| f.deliver_at),
            })
        };
        match flood {
            None => start(None),
            Some(f) if now.duration_since(f.since) >= period * 2 => start(None),
            Some(mut f) if now.duration_since(f.since) < period => {
                f.bytes += got;
                Some(f)
            }
            Some(f) if f.bytes >= FLOOD_BYTES => Some(Flood {
                since: now,
                bytes: got,
                ..f
            }),
            Some(f) => start(Some(f)),
        }
    }

    /// Whether the flood has lasted a read period: a steady stream, not one big write.
    pub(super) fn settled(&self, now: Instant, period: Duration) -> bool {
        now.duration_since(self.began) >= period
    }
}

/// The bytes read in a window of one read period, whatever the reads' sizes: how a flood that
/// comes in reads of less than a pipe-full is seen.
#[derive(Clone, Copy, Debug)]
pub(super) struct Lately {
    pub since: Instant,
    pub bytes: usize,
}

impl Lately {
    /// Counts a read of `got` bytes at `now`; returns the window's bytes.
    pub(super) fn count(&mut self, now: Instant, got: usize, period: Duration) -> usize {
        if now.duration_since(self.since) >= period {
            *self = Lately {
                since: now,
                bytes: 0,
            };
        }
        self.bytes += got;
        self.bytes
    }
}

/// How long to leave a flooding pipe after a read that took `got` bytes `since` the previous
/// read: the time the pane takes to write [`FLOOD_TARGET`] at that rate, within
/// [`FLOOD_STEP`] and `period`.
pub(super) fn flood_wait(got: usize, since: Option<Duration>, period: Duration) -> Duration {
    let Some(since) = since else {
        return FLOOD_STEP;
    };
    if got == 0 {
        // Woken with nothing to read: the flood is ebbing.
        return period.max(FLOOD_STEP);
    }
    let wait = since.mul_f64(FLOOD_TARGET as f64 / got as f64);
    wait.clamp(FLOOD_STEP, period.max(FLOOD_STEP))
}

/// Whether what is kept goes to the daemon after a read that took `got` bytes at `woke`: at
/// once outside a flood and when the pipe ended; in a flood, on the read grid, or as soon as a
/// read brings less than [`EBB_BYTES`]: the pane stopped, and what it wrote last (the end of a
/// burst: the title Gemini CLI sets after its 230 KB end-of-reply redraw) is not left waiting
/// for the grid.
pub(super) fn deliver_now(flood: Option<&Flood>, woke: Instant, got: usize, eof: bool) -> bool {
    eof || got < EBB_BYTES || flood.is_none_or(|f| woke >= f.deliver_at)
}

/// The next read of a pane's pipe that neither floods nor waits for the daemon, after a read
/// at `woke` that brought `got` bytes (`None`: watch the pipe, and read its next write at
/// once). `drew` is when a read last brought something before this one.
///
/// - An agent's pane (`quick`: [`crate::tmux::quick::QuickPanes`]) that brought something now
///   or within the last [`QUICK_TAIL`] read periods is read at the next instant of the fine
///   grid: its next write waits half a read period at most, in a wake-up the other agents'
///   reads share (an agent writes 4 – 24 times a second; watched, each write cost a wake-up to
///   read it and one after [`super::reader`]'s gathering wait). So is one that brought
///   something within the last [`SHARED_TAIL`] read periods when the grid read that found it
///   quiet (`shared`) was a wake-up the process made for others too: reading it there costs a
///   read, watching it would cost two wake-ups at its next write.
/// - Another pane that is busy (`got` and `drew` within a read period, or it was read on the
///   grid already: `on_grid`) is read at the next read-grid instant at least half a read
///   period on, as a control client is.
pub(super) fn grid_read(
    got: usize,
    quick: bool,
    on_grid: bool,
    shared: bool,
    drew: Option<Instant>,
    woke: Instant,
    grid: Grid,
) -> Option<Instant> {
    if !grid.is_on() {
        return None;
    }
    let reads = grid.coarser(2);
    let lately =
        |within: u32| drew.is_some_and(|t| woke.duration_since(t) <= reads.period() * within);
    if quick && (got > 0 || lately(QUICK_TAIL) || (shared && lately(SHARED_TAIL))) {
        Some(grid.at_or_after(woke + grid.period() / 2))
    } else if got > 0 && (on_grid || lately(1)) {
        Some(reads.at_or_after(woke + grid.period()))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_that_bring_a_pipe_full_within_a_period_start_a_flood() {
        let t0 = Instant::now();
        let period = Duration::from_millis(100);
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut lately = Lately {
            since: t0,
            bytes: 0,
        };
        let mut flood = None;
        for (i, ms) in [0, 20, 40].into_iter().enumerate() {
            let n = lately.count(at(ms), 21 * 1024, period);
            flood = Flood::next(flood, at(ms), 21 * 1024, n, period);
            assert_eq!(flood.is_some(), i == 2, "after read {i}");
        }
        // Reads further apart than a period never add up.
        let mut lately = Lately {
            since: t0,
            bytes: 0,
        };
        let mut flood = None;
        for ms in [0, 120, 240, 360] {
            let n = lately.count(at(ms), 30 * 1024, period);
            flood = Flood::next(flood, at(ms), 30 * 1024, n, period);
            assert!(flood.is_none(), "at {ms} ms");
        }
    }

    #[test]
    fn in_a_flood_a_read_that_brings_little_delivers_at_once() {
        let now = Instant::now();
        let flood = Flood {
            began: now,
            since: now,
            bytes: 200 * 1024,
            deliver_at: now + Duration::from_millis(100),
        };
        // The last piece of Gemini CLI's redraw: 187 bytes, its title among them.
        assert!(deliver_now(Some(&flood), now, 187, false));
        assert!(
            deliver_now(Some(&flood), now, 0, false),
            "the pipe was empty"
        );
        assert!(
            !deliver_now(Some(&flood), now, 20 * 1024, false),
            "a flood still pouring in waits for the grid"
        );
        assert!(deliver_now(
            Some(&flood),
            now + Duration::from_millis(100),
            20 * 1024,
            false
        ));
        assert!(
            deliver_now(None, now, 20 * 1024, false),
            "no flood: at once"
        );
    }

    #[test]
    fn an_agent_that_draws_is_read_on_the_fine_grid_and_another_pane_on_the_read_grid() {
        let e = Instant::now();
        let ms = |n| e + Duration::from_millis(n);
        let grid = Grid::new(e, Duration::from_millis(50));
        // An agent's write, read at 1010 after a quiet spell: its next read at 1050, not
        // watched (its next write would cost two wake-ups of its own).
        assert_eq!(
            grid_read(40, true, false, false, None, ms(1010), grid),
            Some(ms(1050))
        );
        // Read on the grid and found empty: it drew 150 ms ago, so the grid goes on...
        assert_eq!(
            grid_read(0, true, true, false, Some(ms(900)), ms(1050), grid),
            Some(ms(1100))
        );
        // ... until two read periods passed without a write: watched again.
        assert_eq!(
            grid_read(0, true, true, false, Some(ms(800)), ms(1050), grid),
            None
        );
        // ... unless the grid read that found it quiet was a wake-up shared with others: then
        // the grid goes on until thirty read periods passed without a write.
        assert_eq!(
            grid_read(0, true, true, true, Some(ms(800)), ms(1050), grid),
            Some(ms(1100))
        );
        assert_eq!(
            grid_read(0, true, true, true, Some(ms(1050)), ms(4050), grid),
            Some(ms(4100))
        );
        assert_eq!(
            grid_read(0, true, true, true, Some(ms(1049)), ms(4050), grid),
            None
        );
        // Other panes never stay for company.
        assert_eq!(
            grid_read(0, false, true, true, Some(ms(1000)), ms(1050), grid),
            None
        );
        // Another pane: a first write is watched for the next; a busy one waits for the read
        // grid (every second instant), at least half a read period on.
        assert_eq!(
            grid_read(40, false, false, false, None, ms(1010), grid),
            None
        );
        assert_eq!(
            grid_read(40, false, false, false, Some(ms(950)), ms(1010), grid),
            Some(ms(1100))
        );
        assert_eq!(
            grid_read(40, false, true, false, None, ms(1100), grid),
            Some(ms(1200))
        );
        assert_eq!(
            grid_read(0, false, true, false, Some(ms(1050)), ms(1100), grid),
            None
        );
        // No grid: every write is read at once.
        assert_eq!(
            grid_read(40, true, true, true, Some(ms(1000)), ms(1010), Grid::off()),
            None
        );
    }

    #[test]
    fn a_flood_is_left_to_gather_a_part_of_a_pipe_full_at_its_rate() {
        let period = Duration::from_millis(100);
        let ms = Duration::from_millis;
        // 1 MiB/s: 2 KiB came in 2 ms, so 24 KiB take about 23 ms.
        let w = flood_wait(2048, Some(ms(2)), period);
        assert!(w >= ms(22) && w <= ms(25), "{w:?}");
        // Faster than the shortest wait allows, or the first read of a flood.
        assert_eq!(flood_wait(40_000, Some(ms(1)), period), FLOOD_STEP);
        assert_eq!(flood_wait(100, None, period), FLOOD_STEP);
        // Slow, or nothing: at most a read period.
        assert_eq!(flood_wait(100, Some(ms(50)), period), period);
        assert_eq!(flood_wait(0, Some(ms(2)), period), period);
    }
}
