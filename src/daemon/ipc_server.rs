//! Accepts connections on the daemon's socket and turns each request line into a message for
//! the daemon's core loop, which owns all state and answers through a channel.

use tokio::io::BufReader;
use tokio::net::UnixListener;
use tokio::sync::mpsc;

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
        let core = core.clone();
        tokio::spawn(async move {
            let (r, mut w) = stream.into_split();
            let (out_tx, mut out_rx) = mpsc::channel::<(Option<u64>, Reply)>(super::bus::QUEUE);
            let close = std::sync::Arc::new(tokio::sync::Notify::new());
            let closed = close.clone();
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        biased;
                        () = closed.notified() => {
                            // What is queued (the error last) still goes out, then the socket
                            // closes.
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
                    Ok(false) | Err(_) => return,
                }
                if line.trim_ascii().is_empty() {
                    continue;
                }
                let (id, request) = match decode_request(&line) {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = out_tx
                            .send((
                                None,
                                Reply::Error {
                                    message: format!("bad request: {e}"),
                                },
                            ))
                            .await;
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
                    while let Some(reply) = rx.recv().await {
                        if out.send((id, reply)).await.is_err() || !streaming {
                            return;
                        }
                    }
                });
            }
        });
    }
}
