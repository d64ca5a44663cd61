//! Accepts connections on the daemon's socket and turns each request line into a message for
//! the daemon's core loop, which owns all state and answers through a channel.

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::UnixListener;
use tokio::sync::mpsc;

use crate::ipc::schema::{Reply, Request};
use crate::ipc::write_reply;

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
/// connection): one writer task per connection interleaves every request's replies.
pub async fn serve(listener: UnixListener, core: mpsc::Sender<IpcMessage>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tracing::warn!("socket accept failed; the socket stops serving");
            return;
        };
        let core = core.clone();
        tokio::spawn(async move {
            let (r, mut w) = stream.into_split();
            let (out_tx, mut out_rx) = mpsc::channel::<Reply>(1024);
            tokio::spawn(async move {
                while let Some(reply) = out_rx.recv().await {
                    if write_reply(&mut w, &reply).await.is_err() {
                        return;
                    }
                }
            });
            let mut lines = BufReader::new(r).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if line.trim().is_empty() {
                    continue;
                }
                let request: Request = match serde_json::from_str(&line) {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = out_tx
                            .send(Reply::Error {
                                message: format!("bad request: {e}"),
                            })
                            .await;
                        continue;
                    }
                };
                let streaming = matches!(request, Request::Subscribe | Request::Events);
                let (tx, mut rx) = mpsc::channel(super::bus::QUEUE);
                if core.send(IpcMessage { request, reply: tx }).await.is_err() {
                    return;
                }
                let out = out_tx.clone();
                tokio::spawn(async move {
                    while let Some(reply) = rx.recv().await {
                        if out.send(reply).await.is_err() || !streaming {
                            return;
                        }
                    }
                });
            }
        });
    }
}
