//! One pane's pipe, read the way a control client's output is ([`crate::tmux::connection`]):
//! a write wakes the reader at once when the pipe was quiet; while the pane keeps writing, the
//! pipe is left unwatched and read at the next instant of the read grid, so that a pane drawing
//! every few milliseconds wakes the process once per period.
//!
//! The reader never stops reading: tmux keeps whatever a pipe does not take in its own memory,
//! and does not let a pane whose pipe still holds bytes close. When the daemon falls behind (the
//! event channel is full) the bytes wait here, up to [`MAX_PENDING`]; beyond that they are
//! dropped and the next delivery says so (`lost`), so that the daemon looks at the screen again.

use std::io::Read as _;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::{PipeEvent, PIPES};
use crate::ids::PaneId;
use crate::tmux::connection::{ConnEvent, ConnId, Pacing};

/// Most bytes read in one wake-up before the other tasks get a turn.
const READ_LIMIT: usize = 256 * 1024;
/// Most bytes kept for a daemon that is behind; more are dropped.
pub const MAX_PENDING: usize = 1024 * 1024;
/// How much room each read makes.
const CHUNK: usize = 16 * 1024;
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
    let mut lost = false;
    let mut last_data: Option<Instant> = None;
    let mut next_read: Option<Instant> = None;
    loop {
        let woke = match next_read {
            Some(at) => {
                if stream.unwatch().is_err() {
                    break;
                }
                pacing.timer.sleep_until(at).await;
                at
            }
            None => {
                match stream.watched() {
                    Ok(s) => {
                        if s.readable().await.is_err() {
                            break;
                        }
                    }
                    Err(_) => break,
                }
                Instant::now()
            }
        };
        let (got, eof) = read_available(&mut stream, &mut pending, &mut lost);
        let mut behind = false;
        if !pending.is_empty() || lost {
            let ev = PipeEvent::Output {
                pane,
                serial,
                data: std::mem::take(&mut pending),
                lost,
            };
            match events.try_send((PIPES, ConnEvent::Pipe(ev))) {
                Ok(()) => lost = false,
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
        next_read = if behind {
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
    if !pending.is_empty() || lost {
        let ev = PipeEvent::Output {
            pane,
            serial,
            data: pending,
            lost,
        };
        let _ = events.send((PIPES, ConnEvent::Pipe(ev))).await;
    }
    let _ = events
        .send((PIPES, ConnEvent::Pipe(PipeEvent::Closed { pane, serial })))
        .await;
}

/// Reads what the pipe holds (up to [`READ_LIMIT`]) onto `pending`, dropping it all and setting
/// `lost` past [`MAX_PENDING`]. Returns the bytes read and whether the pipe ended.
fn read_available(stream: &mut Stream, pending: &mut Vec<u8>, lost: &mut bool) -> (usize, bool) {
    let mut got = 0;
    while got < READ_LIMIT {
        if pending.len() + CHUNK > MAX_PENDING {
            pending.clear();
            *lost = true;
        }
        let len = pending.len();
        pending.resize(len + CHUNK, 0);
        let r = stream.try_read(&mut pending[len..]);
        let n = match r {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                pending.truncate(len);
                continue;
            }
            Err(e) => {
                pending.truncate(len);
                return (got, e.kind() != std::io::ErrorKind::WouldBlock);
            }
        };
        pending.truncate(len + n);
        if n == 0 {
            return (got, true);
        }
        got += n;
    }
    (got, false)
}
