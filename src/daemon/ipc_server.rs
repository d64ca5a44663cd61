//! Accepts connections on the daemon's socket and turns each request line into a message for
//! the daemon's core loop, which owns all state and answers through a channel.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags};
use tokio::io::BufReader;
use tokio::net::unix::OwnedReadHalf;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, Notify, OwnedSemaphorePermit, Semaphore};

use crate::ipc::framing::{self, FrameError};
use crate::ipc::peer;
use crate::ipc::schema::{Reply, Request};
use crate::ipc::{decode_request, encode_tagged, write_tagged};

/// One request from a client, with the way back.
#[derive(Debug)]
pub struct IpcMessage {
    /// The request.
    pub request: Request,
    /// Replies to send (several for `Subscribe`); closed when the client goes away.
    pub reply: mpsc::Sender<Reply>,
}

/// Most connections served at once. One more is answered with an error and closed: each holds
/// buffers and queues (see `docs/security.md` for what one may cost), and a client that opens
/// connections without end would otherwise run the daemon out of memory or descriptors.
pub const MAX_CONNECTIONS: usize = 512;
/// Most replies waiting for a connection's writer. Small, so that a client that does not read
/// is seen as behind by the subscriber queues ([`super::bus`]), which know what to drop.
pub const OUT_QUEUE: usize = 16;
/// Most requests of one connection in the daemon at once (their answers not yet handed to its
/// writer); the next request is read when one is done.
pub const MAX_IN_FLIGHT: usize = 8;
/// Most streams (`subscribe`, `events`, `follow`) one connection may open.
pub const MAX_STREAMS: usize = 2;
/// How long the socket waits after `accept` failed (out of descriptors) before trying again.
pub const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// Serves the socket for as long as the daemon runs. Each connection may send any number of
/// requests, also after `Subscribe` (the panel subscribes and then asks for Focus on the same
/// connection): one writer task per connection interleaves every request's replies. A request
/// line longer than [`framing::MAX_REQUEST_LINE`] is answered with an error and the connection
/// is closed once that error is written. A peer of another uid is closed at once, unread
/// ([`crate::ipc::peer`]). A failed `accept` (the process is out of descriptors) is logged and
/// tried again after [`ACCEPT_RETRY`]: the socket never stops serving.
pub async fn serve(listener: UnixListener, core: mpsc::Sender<IpcMessage>) {
    let owner = peer::owner();
    let mut refusals = peer::Refusals::default();
    let mut failures = peer::Refusals::default();
    let mut crowded = peer::Refusals::default();
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                if let Some(unlogged) = failures.refused(Instant::now()) {
                    tracing::warn!(
                        "the socket could not accept a connection: {e}; trying again in {} ms \
                         ({unlogged} more failures since the last such line)",
                        ACCEPT_RETRY.as_millis()
                    );
                }
                tokio::time::sleep(ACCEPT_RETRY).await;
                continue;
            }
        };
        let cred = stream.peer_cred().ok();
        let verdict = peer::judge(cred.map(|c| c.uid()), owner);
        if verdict != peer::Verdict::Owner {
            if let Some(unlogged) = refusals.refused(Instant::now()) {
                let pid = cred.and_then(|c| c.pid());
                tracing::warn!("{}", peer::refusal_line(verdict, pid, owner, unlogged));
            }
            drop(stream);
            continue;
        }
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            if let Some(unlogged) = crowded.refused(Instant::now()) {
                tracing::warn!(
                    "{MAX_CONNECTIONS} connections are open on the socket: one more was turned \
                     away ({unlogged} more since the last such line)"
                );
            }
            let message =
                format!("the daemon serves {MAX_CONNECTIONS} connections at once; try again later");
            if let Ok(line) = encode_tagged(None, &Reply::Error { message }) {
                let _ = stream.try_write(&line);
            }
            continue;
        };
        tokio::spawn(connection(stream, core.clone(), slot));
    }
}

/// Serves one connection until the client goes away (see [`serve`]); `slot` is its place
/// among [`MAX_CONNECTIONS`], given back when its socket closes.
async fn connection(
    stream: UnixStream,
    core: mpsc::Sender<IpcMessage>,
    slot: OwnedSemaphorePermit,
) {
    let (r, mut w) = stream.into_split();
    let (out_tx, mut out_rx) = mpsc::channel::<(Option<u64>, Reply)>(OUT_QUEUE);
    let close = Arc::new(Notify::new());
    let closed = close.clone();
    tokio::spawn(async move {
        let _slot = slot;
        loop {
            tokio::select! {
                biased;
                () = closed.notified() => {
                    // What is queued (an error last) still goes out, then the socket closes.
                    while let Ok((id, reply)) = out_rx.try_recv() {
                        if write_tagged(&mut w, id, &reply).await.is_err() {
                            break;
                        }
                    }
                    return;
                }
                reply = out_rx.recv() => match reply {
                    Some((id, reply)) if write_tagged(&mut w, id, &reply).await.is_ok() => {}
                    _ => return,
                },
            }
        }
    });
    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let mut streams = 0;
    let mut reader = BufReader::new(r);
    let mut line = Vec::new();
    loop {
        match framing::read_line_async(&mut reader, framing::REQUEST, &mut line).await {
            Ok(true) => {}
            Err(e @ FrameError::TooLong { .. }) => {
                let message = format!("bad request: {e}; closing the connection");
                let _ = out_tx.send((None, Reply::Error { message })).await;
                close.notify_one();
                return;
            }
            Ok(false) | Err(_) => {
                // The end of the requests. A client that only shut its sending side still
                // reads its answers (and streams); one that is gone is let go now, streams
                // included: else its descriptor and tasks stay until the next event fails to
                // reach it, which on a quiet server may be hours.
                if hung_up(reader.get_ref()) {
                    close.notify_one();
                }
                return;
            }
        }
        if line.trim_ascii().is_empty() {
            continue;
        }
        let (id, request) = match decode_request(&line) {
            Ok(r) => r,
            Err(e) => {
                let message = format!("bad request: {e}");
                let _ = out_tx.send((None, Reply::Error { message })).await;
                continue;
            }
        };
        let streaming = matches!(
            request,
            Request::Subscribe | Request::Events | Request::Follow { .. }
        );
        let permit = if streaming {
            if streams == MAX_STREAMS {
                let message =
                    format!("bad request: this connection already has {MAX_STREAMS} streams open");
                let _ = out_tx.send((id, Reply::Error { message })).await;
                continue;
            }
            streams += 1;
            None
        } else {
            match in_flight.clone().acquire_owned().await {
                Ok(p) => Some(p),
                Err(_) => return,
            }
        };
        let (tx, mut rx) = mpsc::channel(super::bus::QUEUE);
        if core.send(IpcMessage { request, reply: tx }).await.is_err() {
            return;
        }
        let out = out_tx.clone();
        tokio::spawn(async move {
            let _permit = permit;
            loop {
                // A connection that closed drops `rx` at once: the core sees its queue closed.
                let reply = tokio::select! {
                    reply = rx.recv() => reply,
                    () = out.closed() => None,
                };
                let Some(reply) = reply else { return };
                if out.send((id, reply)).await.is_err() || !streaming {
                    return;
                }
            }
        });
    }
}

/// Whether the peer closed its end altogether (not only its sending side): the socket polls
/// as hung up.
fn hung_up(r: &OwnedReadHalf) -> bool {
    let zero = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let stream: &UnixStream = r.as_ref();
    let mut fds = [PollFd::new(stream, PollFlags::OUT)];
    matches!(poll(&mut fds, Some(&zero)), Ok(n) if n > 0)
        && fds[0].revents().contains(PollFlags::HUP)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A client that only shut its sending side still reads; one that closed is gone.
    #[tokio::test]
    async fn a_half_closed_client_is_not_taken_for_gone() {
        let (ours, mut theirs) = UnixStream::pair().expect("pair");
        let (r, _w) = ours.into_split();
        assert!(!hung_up(&r), "connected");
        theirs.shutdown().await.expect("shutdown");
        assert!(!hung_up(&r), "half closed: it still reads");
        drop(theirs);
        assert!(hung_up(&r), "closed");
    }
}
