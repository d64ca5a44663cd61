//! One pane's pipe, read the way a control client's output is ([`crate::tmux::connection`]):
//! a write wakes the reader at once when the pipe was quiet; while the pane keeps writing, the
//! pipe is left unwatched and read at the next instant of the read grid, so that a pane drawing
//! every few milliseconds wakes the process once per period.
//!
//! Each read takes everything the pipe holds, however much: tmux keeps whatever a pipe does not
//! take in its own memory, without bound, and does not let a pane whose pipe still holds bytes
//! close. A pipe holds about 64 KiB of tmux's writes, so a pane whose reads bring that much
//! within a read period (a flood: one read of a full pipe, or a steady stream) is read as soon
//! as tmux writes while each read finds it full, and [`FLOOD_STEP`] later when one found less,
//! until a read period brings little; what is kept of it still goes to the daemon once a
//! period, and at once when a read brings less than [`EBB_BYTES`]: the pane (all but) stopped,
//! and the end of its burst (often the title or report that closes an agent's redraw) does
//! not wait for the grid. A flood younger than a read period is one big write (Gemini CLI's
//! 230 KB end-of-reply redraw): it is read every [`FLOOD_STEP`] until a read finds the pipe
//! empty, and so is a pane in the read period after a read of [`BIG_READ`], so that the end of
//! a write tmux passes on in pieces does not wait for the grid. What of it
//! goes to the daemon is bounded by the pipe's [`Keeper`]: past a burst and a rate, only the
//! escape sequences, and a count of the bytes left out (`skipped`), so that the daemon looks
//! at the screen again. When the daemon falls behind (the event channel is full) what is kept
//! waits here, within the same bounds.

use std::io::Read as _;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::keep::Keeper;
use super::{PipeEvent, PIPES};
use crate::ids::PaneId;
use crate::tmux::connection::{ConnEvent, ConnId, Pacing};

/// Most bytes read in one wake-up before the other tasks get a turn (the next read comes at
/// once).
const READ_LIMIT: usize = 8 * 1024 * 1024;
/// How much each read takes at most.
const CHUNK: usize = 64 * 1024;
/// Reads that bring this much within a read period start a flood: one such read found the
/// pipe (about 64 KiB of tmux's 4 KiB writes) full; a 1 MiB/s build log read at each of its
/// 20 ms writes brings it in three.
const FLOOD_BYTES: usize = 48 * 1024;
/// The shortest wait of a flooding pane's pipe after a read that found it less than full.
const FLOOD_STEP: Duration = Duration::from_millis(2);
/// What a flooding pane's pipe is left to gather between two reads, at its last rate: well
/// below what makes tmux hold its writes back (about 53 KiB in the pipe), and in few wake-ups
/// (a 1 MiB/s build log is read about 30 times a second, not at each of tmux's writes).
const FLOOD_TARGET: usize = 24 * 1024;
/// A read that brings this much is part of a big write (an agent's whole redraw): for a read
/// period after it, a read that brings anything is followed by another [`FLOOD_STEP`] later,
/// not on the read grid. Below what tmux writes a pipe in one turn of its loop (16 KiB) and
/// two of its reads of a pane (2 × 4095 bytes): on a busy server Gemini CLI's 230 KB
/// end-of-reply redraw came in reads of 16 380, 4 095, 12 285 and 8 190 bytes, and what
/// followed waited for the grid.
const BIG_READ: usize = 8000;
/// A read in a flood that brings less than this (one of tmux's reads of a pane, 4 KiB) finds
/// the pane stopped or nearly: what the flood's reads kept goes to the daemon at once. The
/// last read of Gemini CLI's redraw brought 187 bytes, its title among them; the read grid
/// would have held them 100 ms.
const EBB_BYTES: usize = 4 * 1024;
/// How long a quiet pipe that tmux wrote to waits before it is read: tmux reads a pane 4 KiB at
/// a time and writes each piece to the pipe, so one write of the program (an agent's redraw
/// that sets two titles) comes in pieces less than a millisecond apart; read at the first
/// piece, the rest waited for the next grid instant, and the daemon showed the first title's
/// state for 100 ms.
const GATHER: Duration = Duration::from_millis(2);
/// The retry step for a full channel when there is no read grid.
const RETRY: Duration = Duration::from_millis(10);

/// The reading end, registered with the runtime (a write wakes us) or not.
enum Stream {
    Watched(tokio::net::UnixStream),
    Unwatched(std::os::unix::net::UnixStream),
    Gone,
}

impl Stream {
    fn watched(&mut self) -> std::io::Result<&tokio::net::UnixStream> {
        *self = match std::mem::replace(self, Stream::Gone) {
            Stream::Unwatched(s) => Stream::Watched(tokio::net::UnixStream::from_std(s)?),
            other => other,
        };
        match self {
            Stream::Watched(s) => Ok(s),
            _ => Err(std::io::Error::other("pipe lost")),
        }
    }

    fn unwatch(&mut self) -> std::io::Result<()> {
        *self = match std::mem::replace(self, Stream::Gone) {
            Stream::Watched(s) => {
                let s = s.into_std()?;
                s.set_nonblocking(true)?;
                Stream::Unwatched(s)
            }
            other => other,
        };
        Ok(())
    }

    fn try_read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Watched(s) => s.try_read(buf),
            Stream::Unwatched(s) => s.read(buf),
            Stream::Gone => Err(std::io::Error::other("pipe lost")),
        }
    }
}

/// A pane that floods its pipe: read as fast as it fills, delivered on the read grid.
#[derive(Clone, Copy, Debug)]
struct Flood {
    /// When the flood began.
    began: Instant,
    /// The start of the current read period, and the bytes read since.
    since: Instant,
    bytes: usize,
    /// When what is kept goes to the daemon next.
    deliver_at: Instant,
}

impl Flood {
    /// After a read of `got` bytes at `now`, `lately` bytes read in the [`Lately`] window
    /// (`got` among them): a flood starts once reads within a read period brought
    /// [`FLOOD_BYTES`] (one read that finds the pipe full, or the quick reads of a big write
    /// or a steady stream) and lasts while each read period brings as much (a quiet pipe is
    /// not read: a period with no read at all ended it).
    fn next(
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
    fn settled(&self, now: Instant, period: Duration) -> bool {
        now.duration_since(self.began) >= period
    }
}

/// The bytes read in a window of one read period, whatever the reads' sizes: how a flood that
/// comes in reads of less than a pipe-full is seen.
#[derive(Clone, Copy, Debug)]
struct Lately {
    since: Instant,
    bytes: usize,
}

impl Lately {
    /// Counts a read of `got` bytes at `now`; returns the window's bytes.
    fn count(&mut self, now: Instant, got: usize, period: Duration) -> usize {
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
fn flood_wait(got: usize, since: Option<Duration>, period: Duration) -> Duration {
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
fn deliver_now(flood: Option<&Flood>, woke: Instant, got: usize, eof: bool) -> bool {
    eof || got < EBB_BYTES || flood.is_none_or(|f| woke >= f.deliver_at)
}

/// Which pipe a reader reads.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pipe {
    pub pane: PaneId,
    pub serial: u64,
}

/// Reads `pane`'s pipe until tmux closes it (the pane closed, or someone else's `pipe-pane`
/// replaced ours) or the task is aborted (the observer let the pipe go). Nothing is read before
/// `start` fires: the observer hears of the pipe first.
pub(super) async fn read(
    pipe: Pipe,
    fd: OwnedFd,
    events: mpsc::Sender<(ConnId, ConnEvent)>,
    pacing: Pacing,
    start: oneshot::Receiver<()>,
) {
    let Pipe { pane, serial } = pipe;
    let std = std::os::unix::net::UnixStream::from(fd);
    if std.set_nonblocking(true).is_err() || start.await.is_err() {
        return;
    }
    let mut stream = Stream::Unwatched(std);
    let grid = pacing.grid;
    let reads = pacing.reads();
    let mut pending: Vec<u8> = Vec::new();
    let mut keeper = Keeper::new(Instant::now());
    let mut last_data: Option<Instant> = None;
    let mut next_read: Option<Instant> = None;
    let mut flood: Option<Flood> = None;
    let mut last_read: Option<Instant> = None;
    // When a read last brought BIG_READ or more.
    let mut last_big: Option<Instant> = None;
    let mut lately = Lately {
        since: Instant::now(),
        bytes: 0,
    };
    loop {
        let owed = !pending.is_empty() || keeper.skipped() > 0;
        let woke = match next_read {
            Some(at) => {
                if stream.unwatch().is_err() {
                    break;
                }
                pacing.timer.sleep_until(at).await;
                at
            }
            None => {
                let Ok(s) = stream.watched() else { break };
                match flood.as_ref().filter(|_| owed).map(|f| f.deliver_at) {
                    // What a flood kept goes out on the grid, writes or not.
                    Some(at) => {
                        tokio::select! {
                            r = s.readable() => if r.is_err() { break },
                            _ = pacing.timer.sleep_until(at) => {}
                        }
                    }
                    None => {
                        if s.readable().await.is_err() {
                            break;
                        }
                        if grid.is_on() && flood.is_none() {
                            // The rest of the write comes with it (see GATHER).
                            pacing.timer.sleep_until(Instant::now() + GATHER).await;
                        }
                    }
                }
                Instant::now()
            }
        };
        let (got, eof) = read_available(&mut stream, &mut keeper, &mut pending);
        let since_last_read = last_read.map(|t| woke.saturating_duration_since(t));
        last_read = Some(woke);
        if grid.is_on() {
            let lately = lately.count(woke, got, reads.period());
            flood = Flood::next(flood, woke, got, lately, reads.period());
        }
        if got >= BIG_READ {
            last_big = Some(woke);
        }
        let due = deliver_now(flood.as_ref(), woke, got, eof);
        tracing::trace!(%pane, got, flood = flood.is_some(), due, kept = pending.len(), "pipe read");
        let mut behind = false;
        if due && (!pending.is_empty() || keeper.skipped() > 0) {
            let ev = PipeEvent::Output {
                pane,
                serial,
                data: std::mem::take(&mut pending),
                skipped: keeper.skipped(),
            };
            match events.try_send((PIPES, ConnEvent::Pipe(ev))) {
                Ok(()) => {
                    keeper.delivered();
                    if let Some(f) = &mut flood {
                        f.deliver_at = reads.at_or_after(woke + grid.period());
                    }
                }
                Err(mpsc::error::TrySendError::Full((_, ConnEvent::Pipe(ev)))) => {
                    if let PipeEvent::Output { data, .. } = ev {
                        pending = data;
                    }
                    behind = true;
                }
                Err(_) => return,
            }
        }
        if eof {
            break;
        }
        next_read = if got >= READ_LIMIT {
            // The pipe may hold more: read again once the other tasks had a turn.
            Some(Instant::now())
        } else if flood
            .as_ref()
            .is_some_and(|f| !f.settled(woke, reads.period()))
        {
            // A big write's flood (younger than a read period): read every FLOOD_STEP until a
            // read finds the pipe empty (what was kept then goes at once: the write's end,
            // with the title or report that often closes it), then as soon as tmux writes
            // again (tmux passes a write on in pieces, late ones when it is busy).
            (got > 0).then(|| woke + FLOOD_STEP)
        } else if flood.is_some() {
            // A steady flood (what the pipe cannot take, tmux keeps): a read that found the
            // pipe nearly full reads again as soon as tmux writes; one that found less waits as
            // long as the pane takes to write FLOOD_TARGET at its last rate (at least
            // FLOOD_STEP, at most a read period), so that each read takes a good part of a
            // pipe-full rather than each 4 KiB tmux wrote; one that found it empty, a read
            // period (watched instead, a 1 MiB/s build log was read 46 times a second, not 35).
            (got < FLOOD_BYTES).then(|| woke + flood_wait(got, since_last_read, reads.period()))
        } else if got > 0 && !behind && last_big.is_some_and(|t| woke < t + reads.period()) {
            // Part of a big write that tmux is still passing on (it writes a pipe 16 KiB at a
            // time, 4 KiB when it is busy): the rest, and its end with the title or report
            // that often closes it, are read a moment later rather than on the grid.
            Some(woke + FLOOD_STEP)
        } else if behind {
            Some(if grid.is_on() {
                reads.at_or_after(woke + grid.period())
            } else {
                woke + RETRY
            })
        } else if got == 0 || !grid.is_on() {
            None
        } else {
            // Busy (as a control client is): data at the last read on the grid, or twice within
            // one read period. The next read waits for the grid.
            let busy = next_read.is_some()
                || last_data.is_some_and(|t| woke.duration_since(t) <= reads.period());
            last_data = Some(woke);
            busy.then(|| reads.at_or_after(woke + grid.period()))
        };
    }
    // What was read and not yet taken goes first.
    if !pending.is_empty() || keeper.skipped() > 0 {
        let ev = PipeEvent::Output {
            pane,
            serial,
            data: pending,
            skipped: keeper.skipped(),
        };
        let _ = events.send((PIPES, ConnEvent::Pipe(ev))).await;
    }
    let _ = events
        .send((PIPES, ConnEvent::Pipe(PipeEvent::Closed { pane, serial })))
        .await;
}

/// Reads what the pipe holds (up to [`READ_LIMIT`]) through `keeper` onto `pending`. Returns
/// the bytes read and whether the pipe ended.
fn read_available(
    stream: &mut Stream,
    keeper: &mut Keeper,
    pending: &mut Vec<u8>,
) -> (usize, bool) {
    thread_local! {
        /// One read buffer per runtime thread, not per pipe: a server's hundreds of quiet
        /// panes would each hold one (64 KiB each, 2.6 MB for 41 panes).
        static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    SCRATCH.with_borrow_mut(|scratch| {
        scratch.resize(CHUNK, 0);
        let mut got = 0;
        while got < READ_LIMIT {
            let n = match stream.try_read(scratch) {
                Ok(0) => return (got, true),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return (got, e.kind() != std::io::ErrorKind::WouldBlock),
            };
            keeper.take(Instant::now(), &scratch[..n], pending);
            got += n;
        }
        (got, false)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a reader on one end of a socket pair with a read grid of `period`; `write` writes
    /// the pane's bytes into the other end (from a thread, as tmux would). Returns every byte
    /// delivered until `tail` came, or what came by the deadline.
    async fn delivered_until(
        period: Duration,
        tail: &'static [u8],
        write: impl FnOnce(&mut std::os::unix::net::UnixStream) + Send + 'static,
    ) -> Vec<u8> {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().expect("socket pair");
        let (tx, mut rx) = mpsc::channel(64);
        let (start, started) = oneshot::channel();
        let pacing = Pacing::every(period, crate::timer::Timer::tokio());
        let pipe = Pipe {
            pane: PaneId(1),
            serial: 1,
        };
        let task = tokio::spawn(read(pipe, OwnedFd::from(ours), tx, pacing, started));
        let _ = start.send(());
        // The pipe stays open until the test is done, as tmux keeps it while the pane lives.
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let writer = std::thread::spawn(move || {
            let mut theirs = theirs;
            write(&mut theirs);
            let _ = wait.recv_timeout(Duration::from_secs(10));
        });
        let mut got = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !got.ends_with(tail) {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some((_, ConnEvent::Pipe(PipeEvent::Output { data, .. })))) => {
                    got.extend_from_slice(&data)
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
        task.abort();
        let _ = done.send(());
        let _ = writer.join();
        got
    }

    /// A body of `n` bytes of text.
    fn body(n: usize) -> Vec<u8> {
        b"0123456789abcdef"
            .iter()
            .copied()
            .cycle()
            .take(n)
            .collect()
    }

    /// Writes pieces of these sizes `gap` apart, a title closing the last one, to a reader
    /// with a 10 s grid, and checks that the title came by the deadline.
    async fn assert_pieces_come_whole(sizes: &[usize], gap: Duration) {
        const TITLE: &[u8] = b"\x1b]0;Ready\x07";
        let sizes = sizes.to_vec();
        let total = sizes.iter().sum::<usize>() + TITLE.len();
        let got = delivered_until(Duration::from_secs(10), TITLE, move |w| {
            use std::io::Write as _;
            for (i, n) in sizes.iter().enumerate() {
                let mut piece = body(*n);
                if i == sizes.len() - 1 {
                    piece.extend_from_slice(TITLE);
                }
                w.write_all(&piece).expect("write");
                std::thread::sleep(gap);
            }
        })
        .await;
        assert!(
            got.ends_with(TITLE),
            "the write's end waited for the grid: {} of {total} bytes came",
            got.len()
        );
    }

    #[tokio::test]
    async fn the_end_of_a_flood_comes_at_once_when_the_pane_stops_not_on_the_grid() {
        // A 230 KB redraw in one go (it fills the pipe: a flood), its title last. The grid is
        // 10 s long: what waited for it would miss the 5 s deadline.
        const TITLE: &[u8] = b"\x1b]0;Ready\x07";
        let got = delivered_until(Duration::from_secs(10), TITLE, |w| {
            use std::io::Write as _;
            let mut all = body(230 * 1024);
            all.extend_from_slice(TITLE);
            w.write_all(&all).expect("write");
        })
        .await;
        assert!(
            got.ends_with(TITLE),
            "the burst's end was held back: {} of {} bytes came",
            got.len(),
            230 * 1024 + TITLE.len()
        );
        assert_eq!(got.len(), 230 * 1024 + TITLE.len(), "every byte, once");
    }

    #[tokio::test]
    async fn a_big_write_that_comes_in_pieces_is_read_to_its_end_not_on_the_grid() {
        // Three pieces of 40 KB (each below a flood's pipe-full, each above a big read) a few
        // milliseconds apart, as tmux passes a big write on; the title closes the last one.
        assert_pieces_come_whole(&[40 * 1024; 3], Duration::from_millis(10)).await;
    }

    #[tokio::test]
    async fn a_late_tail_after_a_big_write_s_flood_is_read_when_it_comes_not_on_the_grid() {
        // A 100 KB redraw fills the pipe (a flood) and 20 KB more follow; the title that
        // closes it comes 30 ms later, after a read found the pipe empty.
        const TITLE: &[u8] = b"\x1b]0;Ready\x07";
        let got = delivered_until(Duration::from_secs(10), TITLE, |w| {
            use std::io::Write as _;
            w.write_all(&body(100 * 1024)).expect("write");
            std::thread::sleep(Duration::from_millis(10));
            w.write_all(&body(20 * 1024)).expect("write");
            std::thread::sleep(Duration::from_millis(30));
            let mut tail = body(187);
            tail.extend_from_slice(TITLE);
            w.write_all(&tail).expect("write");
        })
        .await;
        assert!(
            got.ends_with(TITLE),
            "the late tail waited for the grid: {} of {} bytes came",
            got.len(),
            120 * 1024 + 187 + TITLE.len()
        );
    }

    #[tokio::test]
    async fn a_big_write_passed_on_in_small_pieces_is_read_to_its_end_not_on_the_grid() {
        // A busy tmux passes a big write on in pieces of one to four of its 4095-byte reads of
        // the pane, a few milliseconds apart (the pieces a busy server made of Gemini CLI's
        // end-of-reply redraw); the title closes the last one.
        let pieces = [16380, 4095, 12285, 8190, 4095, 4095];
        assert_pieces_come_whole(&pieces, Duration::from_millis(4)).await;
    }

    #[tokio::test]
    async fn a_steady_stream_is_read_as_a_flood_not_at_each_write() {
        // A build log at 1 MiB/s in 21 KB writes every 20 ms, for a second, on a 100 ms grid:
        // read at each write (and again 2 ms later, as a big write's end is), it would wake the
        // reader about a hundred times; read as a flood, its reads gather several writes.
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().expect("socket pair");
        let (tx, mut rx) = mpsc::channel(256);
        let (start, started) = oneshot::channel();
        let pacing = Pacing::every(Duration::from_millis(100), crate::timer::Timer::tokio());
        let pipe = Pipe {
            pane: PaneId(1),
            serial: 1,
        };
        let task = tokio::spawn(read(pipe, OwnedFd::from(ours), tx, pacing, started));
        let _ = start.send(());
        let writer = std::thread::spawn(move || {
            use std::io::Write as _;
            let mut theirs = theirs;
            for _ in 0..50 {
                theirs.write_all(&body(21 * 1024)).expect("write");
                std::thread::sleep(Duration::from_millis(20));
            }
            theirs
        });
        let mut deliveries = 0;
        let mut bytes = 0;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while bytes < 50 * 21 * 1024 {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some((_, ConnEvent::Pipe(PipeEvent::Output { data, .. })))) => {
                    deliveries += 1;
                    bytes += data.len();
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
        task.abort();
        let _theirs = writer.join();
        assert_eq!(bytes, 50 * 21 * 1024, "every byte came");
        assert!(
            deliveries <= 30,
            "{deliveries} deliveries for 50 writes: the stream was read at each write"
        );
    }

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
