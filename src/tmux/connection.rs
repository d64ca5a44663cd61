//! One control-mode client: `tmux -S SOCKET -C attach -t SESSION -f ignore-size,read-only`, run
//! as a child process. A reader task decodes its stdout into notifications (sent to a shared
//! channel, tagged with the connection's id) and hands each command reply to whoever awaits it;
//! a writer task sends command lines. Replies come back in the order commands were sent, which
//! is how a reply finds its caller.

use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot};

use super::protocol::{Decoder, LineSplitter, Notification, Reply};
use super::server::ServerAddress;

/// Identifies a connection in the shared event channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub u64);

/// What a connection tells its owner.
#[derive(Debug)]
pub enum ConnEvent {
    /// The notifications of one read, in order (never replies to our commands). Consecutive
    /// output of one pane is merged into one `Output`: a pane that streams costs one event per
    /// read, not one per line.
    Batch(Vec<Notification>),
    /// The client ended (stdout closed); the reason from `%exit` when tmux gave one.
    Closed(Option<String>),
}

/// Why a command got no reply.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// An empty line would detach the client; a newline would split the command.
    #[error("refusing to send an empty or multi-line command")]
    BadLine,
    /// The connection ended before replying.
    #[error("the tmux control connection closed")]
    Closed,
    /// tmux answered with `%error`.
    #[error("tmux: {0}")]
    Tmux(String),
}

type Pending = Arc<Mutex<VecDeque<oneshot::Sender<Reply>>>>;

/// A handle on a running control client. Cheap to clone; the client detaches when the last
/// handle is dropped (its stdin closes).
#[derive(Clone, Debug)]
pub struct Connection {
    id: ConnId,
    commands: mpsc::UnboundedSender<(String, oneshot::Sender<Reply>)>,
}

/// Control-client flags: never resize windows, never type into panes.
pub const ATTACH_FLAGS: &str = "ignore-size,read-only";

impl Connection {
    /// Starts a control client attached to `session` (a tmux target such as `$3`).
    pub fn spawn(
        tmux: &Path,
        addr: &ServerAddress,
        session: &str,
        id: ConnId,
        events: mpsc::UnboundedSender<(ConnId, ConnEvent)>,
    ) -> std::io::Result<Connection> {
        let mut child = Command::new(tmux)
            .args(addr.tmux_args())
            .args(["-C", "attach-session", "-t", session, "-f", ATTACH_FLAGS])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout"))?;
        let pending: Pending = Arc::default();
        let (tx, rx) = mpsc::unbounded_channel();
        let (ready_tx, ready_rx) = oneshot::channel();
        tokio::spawn(write_loop(stdin, rx, pending.clone(), ready_rx));
        tokio::spawn(read_loop(child, stdout, pending, id, events, ready_tx));
        Ok(Connection { id, commands: tx })
    }

    /// This connection's id.
    pub fn id(&self) -> ConnId {
        self.id
    }

    /// Sends one command line and awaits its reply body.
    pub async fn command(&self, line: impl Into<String>) -> Result<Vec<String>, CommandError> {
        self.start(line.into()).await
    }

    /// Sends one command line now and returns the future of its reply body, so that several
    /// commands can be in flight at once (their replies come back in order, often in one read).
    pub fn start(
        &self,
        line: String,
    ) -> impl std::future::Future<Output = Result<Vec<String>, CommandError>> + use<> {
        let sent = if line.trim().is_empty() || line.contains('\n') || line.contains('\r') {
            Err(CommandError::BadLine)
        } else {
            let (tx, rx) = oneshot::channel();
            self.commands
                .send((line, tx))
                .map(|_| rx)
                .map_err(|_| CommandError::Closed)
        };
        async move {
            let reply = sent?.await.map_err(|_| CommandError::Closed)?;
            if reply.ok {
                Ok(reply.body)
            } else {
                Err(CommandError::Tmux(reply.body.join(" ")))
            }
        }
    }

    /// Sends one command without waiting for its reply (status-line options, focus): the reply
    /// is read and dropped. Refuses empty and multi-line commands like [`Connection::command`].
    pub fn send(&self, line: impl Into<String>) {
        // `start` sends at once; dropping its future drops only the wait for the reply.
        drop(self.start(line.into()));
    }

    /// Whether the client is still running.
    pub fn is_open(&self) -> bool {
        !self.commands.is_closed()
    }
}

async fn write_loop(
    mut stdin: ChildStdin,
    mut rx: mpsc::UnboundedReceiver<(String, oneshot::Sender<Reply>)>,
    pending: Pending,
    ready: oneshot::Receiver<()>,
) {
    // Commands sent before the attach completes fail with "no current client".
    if ready.await.is_err() {
        return;
    }
    while let Some((mut line, reply)) = rx.recv().await {
        // Queue the waiter before the line can be answered.
        if let Ok(mut p) = pending.lock() {
            p.push_back(reply);
        }
        line.push('\n');
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
    // Dropping stdin detaches the client.
}

async fn read_loop(
    mut child: Child,
    mut stdout: ChildStdout,
    pending: Pending,
    id: ConnId,
    events: mpsc::UnboundedSender<(ConnId, ConnEvent)>,
    ready: oneshot::Sender<()>,
) {
    let mut ready = Some(ready);
    let mut buf = vec![0u8; 64 * 1024];
    let mut splitter = LineSplitter::default();
    let mut decoder = Decoder::default();
    let mut exit_reason = None;
    let mut out: Vec<Notification> = Vec::new();
    'read: loop {
        let n = match stdout.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        splitter.feed(&buf[..n], |line| out.extend(decoder.decode(line)));
        let mut batch: Vec<Notification> = Vec::new();
        for note in out.drain(..) {
            match note {
                Notification::Reply(r) if r.from_client => {
                    let waiter = pending.lock().ok().and_then(|mut p| p.pop_front());
                    if let Some(w) = waiter {
                        let _ = w.send(r);
                    }
                }
                Notification::Reply(_) => {
                    // tmux's own reply to the attach: the client is attached.
                    if let Some(r) = ready.take() {
                        let _ = r.send(());
                    }
                }
                Notification::Exit(reason) => {
                    exit_reason = reason;
                }
                other => {
                    if matches!(other, Notification::SessionChanged(..)) {
                        if let Some(r) = ready.take() {
                            let _ = r.send(());
                        }
                    }
                    match (batch.last_mut(), other) {
                        (
                            Some(Notification::Output {
                                pane: last,
                                data: acc,
                            }),
                            Notification::Output { pane, data },
                        ) if *last == pane => acc.extend_from_slice(&data),
                        (_, other) => batch.push(other),
                    }
                }
            }
        }
        if !batch.is_empty() && events.send((id, ConnEvent::Batch(batch))).is_err() {
            break 'read;
        }
    }
    if let Ok(mut p) = pending.lock() {
        p.clear();
    }
    let _ = child.start_kill();
    let _ = child.wait().await;
    let _ = events.send((id, ConnEvent::Closed(exit_reason)));
}
