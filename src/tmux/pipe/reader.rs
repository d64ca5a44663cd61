//! One pane's pipe, read the way a control client's output is ([`crate::tmux::connection`]):
//! a write wakes the reader at once when the pipe was quiet; while the pane keeps writing, the
//! pipe is left unwatched and read at the next instant of the read grid (if the grid's set says
//! it holds bytes: [`super::ready`]), so that a pane drawing every few milliseconds wakes the
//! process once per period. An agent's pane is read on the
//! half-step grid while it draws, and for two read periods after, thirty while the grid's
//! wake-ups are shared with others ([`super::pace::grid_read`]).
//!
//! Each read takes everything the pipe holds, however much: tmux keeps whatever a pipe does not
//! take in its own memory, without bound, and does not let a pane whose pipe still holds bytes
//! close. Floods and big writes are paced as [`super::pace`] says. What of it
//! goes to the daemon is bounded by the pipe's [`Keeper`]: past a burst and a rate, only the
//! escape sequences, and a count of the bytes left out (`skipped`), so that the daemon looks
//! at the screen again. When the daemon falls behind (the event channel is full) what is kept
//! waits here, within the same bounds.

use std::io::Read as _;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::keep::Keeper;
use super::pace::{
    deliver_now, flood_wait, grid_read, Flood, Lately, BIG_READ, FLOOD_BYTES, FLOOD_STEP,
};
use super::ready::GridReady;
use super::{PipeEvent, PIPES};
use crate::ids::PaneId;
use crate::tmux::connection::{ConnEvent, ConnId, Pacing};

/// Most bytes read in one wake-up before the other tasks get a turn (the next read comes at
/// once).
const READ_LIMIT: usize = 8 * 1024 * 1024;
/// How much each read takes at most.
const CHUNK: usize = 64 * 1024;
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

    /// The unwatched stream, for the grid's set ([`GridReady`]).
    fn unwatched(&self) -> Option<&std::os::unix::net::UnixStream> {
        match self {
            Stream::Unwatched(s) => Some(s),
            _ => None,
        }
    }

    fn try_read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Watched(s) => s.try_read(buf),
            Stream::Unwatched(s) => s.read(buf),
            Stream::Gone => Err(std::io::Error::other("pipe lost")),
        }
    }
}

/// Which pipe a reader reads.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pipe {
    pub pane: PaneId,
    pub serial: u64,
}

/// Reads `pane`'s pipe until tmux closes it (the pane closed, or someone else's `pipe-pane`
/// replaced ours) or the task is aborted (the observer let the pipe go). Nothing is read before
/// `start` fires: the observer hears of the pipe first. While the pipe is read on the grid it
/// is in `ready`, and a grid instant at which `ready` says it holds nothing reads nothing.
pub(super) async fn read(
    pipe: Pipe,
    fd: OwnedFd,
    events: mpsc::Sender<(ConnId, ConnEvent)>,
    pacing: Pacing,
    ready: GridReady,
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
    // Whether the pipe is in the grid's set (read only when the set says it holds bytes).
    let mut in_set = false;
    loop {
        let owed = !pending.is_empty() || keeper.skipped() > 0;
        let mut empty = false;
        let woke = match next_read {
            Some(at) => {
                if stream.unwatch().is_err() {
                    break;
                }
                if !in_set {
                    in_set = stream.unwatched().is_some_and(|s| ready.add(serial, s));
                }
                pacing.timer.sleep_until(at).await;
                empty = in_set && !ready.holds(serial, at);
                at
            }
            None => {
                leave_set(&mut in_set, &stream, &ready);
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
        let (got, eof) = if empty {
            (0, false)
        } else {
            read_available(&mut stream, &mut keeper, &mut pending)
        };
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
        } else {
            let quick = pacing.quick.contains(pane);
            let on_grid = next_read.is_some();
            let shared = on_grid && pacing.timer.woke_in_company(woke);
            let at = grid_read(got, quick, on_grid, shared, last_data, woke, grid);
            if got > 0 {
                last_data = Some(woke);
            }
            at
        };
    }
    leave_set(&mut in_set, &stream, &ready);
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

/// Takes the pipe out of the grid's set if it is in it (it is watched again, or its reader
/// ends), while its descriptor is still open.
fn leave_set(in_set: &mut bool, stream: &Stream, ready: &GridReady) {
    if std::mem::take(in_set) {
        if let Some(s) = stream.unwatched() {
            ready.remove(s);
        }
    }
}

/// Reads what the pipe holds (up to [`READ_LIMIT`]) through `keeper` onto `pending`. Returns
/// the bytes read and whether the pipe ended. An unwatched pipe's read that took less than it
/// had room for emptied the pipe (a socket's read takes all it holds up to the room), so no
/// read follows it to find nothing; a watched pipe is read until it says so, which is what lets
/// the runtime wait for its next write.
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
            if n < scratch.len() && stream.unwatched().is_some() {
                return (got, false);
            }
        }
        (got, false)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Starts a reader of `ours` (pane %1) on a read grid of `period` with tokio's timer,
    /// reporting on `tx`; it reads once the returned sender fires.
    fn spawn_reader(
        ours: std::os::unix::net::UnixStream,
        tx: mpsc::Sender<(ConnId, ConnEvent)>,
        period: Duration,
    ) -> (tokio::task::JoinHandle<()>, oneshot::Sender<()>) {
        let (start, started) = oneshot::channel();
        let pacing = Pacing::every(period, crate::timer::Timer::tokio());
        let pipe = Pipe {
            pane: PaneId(1),
            serial: 1,
        };
        let ready = GridReady::new();
        let task = tokio::spawn(read(pipe, OwnedFd::from(ours), tx, pacing, ready, started));
        (task, start)
    }

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
        let (task, start) = spawn_reader(ours, tx, period);
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

    /// What closes the writes of these tests, as an agent's title closes its redraw.
    const TITLE: &[u8] = b"\x1b]0;Ready\x07";

    /// Writes pieces of these sizes, each followed by its pause, the title closing the last
    /// one, to a reader with a 10 s read grid. Returns what came by the deadline (what waited
    /// for the grid would miss it), and how much was written.
    async fn pieces_then_title(pieces: &[(usize, Duration)]) -> (Vec<u8>, usize) {
        let pieces = pieces.to_vec();
        let total = pieces.iter().map(|(n, _)| n).sum::<usize>() + TITLE.len();
        let got = delivered_until(Duration::from_secs(10), TITLE, move |w| {
            use std::io::Write as _;
            for (i, (n, pause)) in pieces.iter().enumerate() {
                let mut piece = body(*n);
                if i == pieces.len() - 1 {
                    piece.extend_from_slice(TITLE);
                }
                w.write_all(&piece).expect("write");
                std::thread::sleep(*pause);
            }
        })
        .await;
        (got, total)
    }

    #[tokio::test]
    async fn the_end_of_a_flood_comes_at_once_when_the_pane_stops_not_on_the_grid() {
        // A 230 KB redraw in one go (it fills the pipe: a flood), its title last.
        let (got, total) = pieces_then_title(&[(230 * 1024, Duration::ZERO)]).await;
        assert!(
            got.ends_with(TITLE),
            "the burst's end was held back: {} of {total} bytes came",
            got.len()
        );
        assert_eq!(got.len(), total, "every byte, once");
    }

    #[tokio::test]
    async fn a_big_write_that_comes_in_pieces_is_read_to_its_end_not_on_the_grid() {
        // Three pieces of 40 KB (each below a flood's pipe-full, each above a big read) a few
        // milliseconds apart, as tmux passes a big write on; the title closes the last one.
        let (got, total) = pieces_then_title(&[(40 * 1024, Duration::from_millis(10)); 3]).await;
        assert!(
            got.ends_with(TITLE),
            "the write's end waited for the grid: {} of {total} bytes came",
            got.len()
        );
    }

    #[tokio::test]
    async fn a_late_tail_after_a_big_write_s_flood_is_read_when_it_comes_not_on_the_grid() {
        // A 100 KB redraw fills the pipe (a flood) and 20 KB more follow; the title that
        // closes it comes 30 ms later, after a read found the pipe empty.
        let ms = Duration::from_millis;
        let (got, total) =
            pieces_then_title(&[(100 * 1024, ms(10)), (20 * 1024, ms(30)), (187, ms(0))]).await;
        assert!(
            got.ends_with(TITLE),
            "the late tail waited for the grid: {} of {total} bytes came",
            got.len()
        );
    }

    #[tokio::test]
    async fn a_big_write_passed_on_in_small_pieces_is_read_to_its_end_not_on_the_grid() {
        // A busy tmux passes a big write on in pieces of one to four of its 4095-byte reads of
        // the pane, a few milliseconds apart (the pieces a busy server made of Gemini CLI's
        // end-of-reply redraw); the title closes the last one.
        let pieces = [16380, 4095, 12285, 8190, 4095, 4095].map(|n| (n, Duration::from_millis(4)));
        let (got, total) = pieces_then_title(&pieces).await;
        assert!(
            got.ends_with(TITLE),
            "the write's end waited for the grid: {} of {total} bytes came",
            got.len()
        );
    }

    #[tokio::test]
    async fn a_steady_stream_is_read_as_a_flood_not_at_each_write() {
        // A build log at 1 MiB/s in 21 KB writes every 20 ms, for a second, on a 100 ms grid:
        // read at each write (and again 2 ms later, as a big write's end is), it would wake the
        // reader about a hundred times; read as a flood, its reads gather several writes.
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().expect("socket pair");
        let (tx, mut rx) = mpsc::channel(256);
        let (task, start) = spawn_reader(ours, tx, Duration::from_millis(100));
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
}
