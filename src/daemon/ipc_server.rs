//! Accepts connections on the daemon's socket and turns each request line into a message for
//! the daemon's core loop, which owns all state and answers through a channel.

use std::sync::Arc;

use rustix::event::{poll, PollFd, PollFlags};
use tokio::io::BufReader;
use tokio::net::unix::OwnedReadHalf;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, Notify};

use crate::ipc::framing::{self, FrameError};
use crate::ipc::peer;
use crate::ipc::schema::{Reply, Request};
use crate::ipc::{decode_request, write_tagged};

/// One request from a client, with the way back.
#[derive(Debug)]
pub struct IpcMessage {
    /// The request.
    pub request: Request,
    /// Replies to send (several for `Subscribe`); closed when the client goes away.
    pub reply: mpsc::Sender<Reply>,
}

/// Serves the socket until the listener fails. Each connection may send any number of
/// requests, also after `Subscribe` (the panel subscribes and then asks for Focus on the same
/// connection): one writer task per connection interleaves every request's replies. A request
/// line longer than [`framing::MAX_REQUEST_LINE`] is answered with an error and the connection
/// is closed once that error is written. A peer of another uid is closed at once, unread
/// ([`crate::ipc::peer`]).
pub async fn serve(listener: UnixListener, core: mpsc::Sender<IpcMessage>) {
    let owner = peer::owner();
    let mut refusals = peer::Refusals::default();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tracing::warn!("socket accept failed; the socket stops serving");
            return;
        };
        let cred = stream.peer_cred().ok();
        let verdict = peer::judge(cred.map(|c| c.uid()), owner);
        if verdict != peer::Verdict::Owner {
            if let Some(unlogged) = refusals.refused(std::time::Instant::now()) {
                let pid = cred.and_then(|c| c.pid());
                tracing::warn!("{}", peer::refusal_line(verdict, pid, owner, unlogged));
            }
            drop(stream);
            continue;
        }
        tokio::spawn(connection(stream, core.clone()));
    }
}

/// Serves one connection until the client goes away (see [`serve`]).
async fn connection(stream: UnixStream, core: mpsc::Sender<IpcMessage>) {
    let (r, mut w) = stream.into_split();
    let (out_tx, mut out_rx) = mpsc::channel::<(Option<u64>, Reply)>(super::bus::QUEUE);
    let close = Arc::new(Notify::new());
    let closed = close.clone();
    tokio::spawn(async move {
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
        let (tx, mut rx) = mpsc::channel(super::bus::QUEUE);
        if core.send(IpcMessage { request, reply: tx }).await.is_err() {
            return;
        }
        let out = out_tx.clone();
        tokio::spawn(async move {
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
