//! One control-mode client, attached with `attach-session -E -t SESSION -f read-only` over our own client connection ([`super::attach`], no `tmux`
//! process). A reader task decodes its stdout into notifications (sent to a shared
//! channel, tagged with the connection's id) and hands each command reply to whoever awaits it;
//! a writer task sends command lines. Replies come back in the order commands were sent, which
//! is how a reply finds its caller.
//!
//! Reading on a [`Grid`]: after a read that found something, the reader stops watching the pipe
//! and reads it again at the next grid instant, so a pane that writes every few milliseconds
//! wakes the process once per period, not once per write, and every connection's reader wakes at
//! the same instant. The pipe is watched again (a write wakes the reader at once) as soon as a
//! grid instant finds it empty, and whenever a command's reply is awaited.

use std::collections::VecDeque;
use std::io::Read as _;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::io::AsyncWriteExt;
use tokio::net::unix::pipe;
use tokio::sync::{mpsc, oneshot, Notify};

use super::attach::{attach, AttachError, Peer};
use super::escape::Escaped;
use super::grid::Grid;
use super::protocol::{Body, Decoder, Line, LineSplitter, Notification, Reply};
pub use super::quick::QuickPanes;
use super::server::ServerAddress;
use crate::ids::PaneId;
use crate::timer::Timer;

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
    /// From a pane's pipe, not a control client (sent with [`super::pipe::PIPES`]).
    Pipe(super::pipe::PipeEvent),
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
    /// The connection's queue of commands is full: tmux is not reading them (stopped, or far
    /// behind). The command was not sent.
    #[error("tmux is not reading commands: {0} already wait")]
    Busy(usize),
    /// No answer in time (the caller stopped waiting).
    #[error("tmux did not answer within {0:?}")]
    Timeout(std::time::Duration),
}

/// The waiters for replies due, in the order their commands went out; `None` once the reader
/// has ended, so that a waiter queued after that is dropped (its caller sees `Closed`) instead of
/// waiting for a reply nobody will read.
type Pending = Arc<Mutex<Option<VecDeque<oneshot::Sender<Reply>>>>>;

/// Whether someone still waits for one of the replies due (a dropped receiver waits for
/// nothing: a command sent with [`Connection::send`]).
fn awaited(pending: &Pending) -> bool {
    pending
        .lock()
        .map(|p| p.iter().flatten().any(|w| !w.is_closed()))
        .unwrap_or(false)
}

/// How a busy connection is read: on which grid, woken by which timer.
#[derive(Clone, Debug)]
pub struct Pacing {
    /// Reads of a busy client happen on every second instant of this grid ([`Pacing::reads`]);
    /// the instants between are for timers that need the finer step (a capture shortly after a
    /// quiet pane wrote), and for the reads of [`Pacing::quick`] panes.
    pub grid: Grid,
    /// What wakes the reader at those instants.
    pub timer: Timer,
    /// Panes whose pipe is read on the finer grid while they keep writing.
    pub quick: QuickPanes,
}

impl Pacing {
    /// Every write is read at once.
    pub fn immediate() -> Pacing {
        Pacing {
            grid: Grid::off(),
            timer: Timer::tokio(),
            quick: QuickPanes::default(),
        }
    }

    /// Busy clients read every `period`, from now (a zero period: every write at once).
    pub fn every(period: std::time::Duration, timer: Timer) -> Pacing {
        Pacing {
            grid: Grid::new(Instant::now(), period / 2),
            timer,
            quick: QuickPanes::default(),
        }
    }

    /// The instants busy clients are read at.
    pub fn reads(&self) -> Grid {
        self.grid.coarser(2)
    }
}

/// Commands that may wait for a control client to take them; one more is refused
/// ([`CommandError::Busy`]) rather than queued without bound while tmux does not read.
pub const COMMAND_QUEUE: usize = 1024;
/// Batches of notifications that may wait for the daemon; at this bound a reader waits.
pub const EVENT_QUEUE: usize = 1024;

/// Most bytes read in one wake-up before the other tasks get a turn.
const DRAIN_LIMIT: usize = 256 * 1024;

/// A handle on a running control client. Cheap to clone; the client detaches when the last
/// handle is dropped (its input closes).
#[derive(Clone, Debug)]
pub struct Connection {
    id: ConnId,
    commands: mpsc::Sender<(String, oneshot::Sender<Reply>)>,
    /// Set by the reader when the client ends.
    exit: Arc<Mutex<Option<String>>>,
    /// Commands are being dropped because the queue is full (logged once per stall).
    stalled: Arc<AtomicBool>,
}

/// Control-client flags: never type into panes.
///
/// Not `ignore-size`: a control client that never sent a size (`refresh-client -C`, which we
/// never send) is already left out of every window-size calculation (tmux 3.2 and later,
/// `ignore_client_size` in `resize.c`). The flag only made that calculation slower: for a client
/// with it, tmux walks every client to see whether one lacks it, for every window, at every
/// `set-option` (`options_push_changes` recalculates every window's size): windows × clients²
/// steps, which at 210 windows and 40 control clients was a quarter of a core while agents
/// worked (the spinner's frames are `set-option`s). `tests/tmux.rs` checks that our clients
/// still never change a window's size.
pub const ATTACH_FLAGS: &str = "read-only";

/// [`ATTACH_FLAGS`] for a client that takes no pane output (the panes' bytes come through their
/// pipes, [`super::pipe`]): tmux skips such a client at once when it copies or walks output.
pub const ATTACH_FLAGS_NO_OUTPUT: &str = "read-only,no-output";

impl Connection {
    /// Attaches a control client to `session` (a tmux target such as `$3`) with `flags`
    /// ([`ATTACH_FLAGS`] or [`ATTACH_FLAGS_NO_OUTPUT`]), read at the `pacing` grid's instants
    /// while it is busy (see the module's doc). The client is ours ([`super::attach`]): no
    /// `tmux` process, and never half-identified in the server.
    pub async fn attach(
        addr: &ServerAddress,
        session: &str,
        flags: &str,
        id: ConnId,
        events: mpsc::Sender<(ConnId, ConnEvent)>,
        pacing: Pacing,
    ) -> Result<Connection, AttachError> {
        let name = format!("thinkterm-sidecar-{}-{}", std::process::id(), id.0);
        let attached = attach(
            &addr.socket,
            &name,
            &["attach-session", "-E", "-t", session, "-f", flags],
        )
        .await?;
        let input = pipe::Sender::from_owned_fd(attached.input)?;
        // Our own registration of the pipe, which the reader drops and makes again.
        let output = pipe::Receiver::from_owned_fd(attached.output)?;
        let pending: Pending = Arc::new(Mutex::new(Some(VecDeque::new())));
        let awaited_reply = Arc::new(Notify::new());
        let (tx, rx) = mpsc::channel(COMMAND_QUEUE);
        let (ready_tx, ready_rx) = oneshot::channel();
        tokio::spawn(write_loop(
            input,
            rx,
            pending.clone(),
            ready_rx,
            awaited_reply.clone(),
        ));
        let exit = Arc::new(Mutex::new(None));
        let reader = Reader {
            stdout: Stdout::Watched(output),
            pending,
            id,
            events,
            ready: Some(ready_tx),
            pacing,
            awaited_reply,
            exit: exit.clone(),
        };
        tokio::spawn(reader.run(attached.peer));
        Ok(Connection {
            id,
            commands: tx,
            exit,
            stalled: Arc::default(),
        })
    }

    /// Why tmux ended this client, once it has (an `%exit` reason or the server's exit
    /// message: "detached", "server exited", a protocol version mismatch ...).
    pub fn exit_reason(&self) -> Option<String> {
        self.exit.lock().ok().and_then(|e| e.clone())
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
        let reply = self.start_body(line);
        async move { reply.await.map(|b| b.to_lines()) }
    }

    /// [`Connection::start`], with the reply body as tmux sent it (one text, no allocation
    /// per line: what a captured screen needs).
    pub fn start_body(
        &self,
        line: String,
    ) -> impl std::future::Future<Output = Result<Body, CommandError>> + use<> {
        let sent = checked(line).and_then(|line| {
            let (tx, rx) = oneshot::channel();
            match self.commands.try_send((line, tx)) {
                Ok(()) => Ok(rx),
                Err(mpsc::error::TrySendError::Full(_)) => Err(CommandError::Busy(COMMAND_QUEUE)),
                Err(mpsc::error::TrySendError::Closed(_)) => Err(CommandError::Closed),
            }
        });
        reply_of(sent)
    }

    /// [`Connection::start_body`] for a burst larger than the queue (the shutdown's clean-up):
    /// waits for room in the queue instead of refusing the command, then gives the reply's
    /// future.
    pub async fn start_waiting(
        &self,
        line: String,
    ) -> impl std::future::Future<Output = Result<Body, CommandError>> + use<> {
        let sent = match checked(line) {
            Ok(line) => {
                let (tx, rx) = oneshot::channel();
                match self.commands.send((line, tx)).await {
                    Ok(()) => Ok(rx),
                    Err(_) => Err(CommandError::Closed),
                }
            }
            Err(e) => Err(e),
        };
        reply_of(sent)
    }

    /// Sends one command without waiting for its reply (status-line options, focus): the reply
    /// is read and dropped. Refuses empty and multi-line commands like [`Connection::command`].
    pub fn send(&self, line: impl Into<String>) {
        let Ok(line) = checked(line.into()) else {
            tracing::debug!("refusing an empty or multi-line command");
            return;
        };
        // Nobody waits for this reply: the reader reads and drops it.
        let (tx, _) = oneshot::channel();
        match self.commands.try_send((line, tx)) {
            Ok(()) => {
                if self.stalled.swap(false, Ordering::Relaxed) {
                    tracing::info!(conn = self.id.0, "tmux takes commands again");
                }
            }
            Err(mpsc::error::TrySendError::Full(_)) => {
                if !self.stalled.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        conn = self.id.0,
                        "tmux is not reading commands ({COMMAND_QUEUE} wait): status-line updates are dropped until it does"
                    );
                }
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }

    /// Whether the client is still running.
    pub fn is_open(&self) -> bool {
        !self.commands.is_closed()
    }
}

/// A command line tmux can take: one line, not empty.
fn checked(line: String) -> Result<String, CommandError> {
    if line.trim().is_empty() || line.contains('\n') || line.contains('\r') {
        Err(CommandError::BadLine)
    } else {
        Ok(line)
    }
}

/// The future of a queued command's reply: its body, or tmux's error as one line.
async fn reply_of(
    sent: Result<oneshot::Receiver<Reply>, CommandError>,
) -> Result<Body, CommandError> {
    let reply = sent?.await.map_err(|_| CommandError::Closed)?;
    if reply.ok {
        Ok(reply.body)
    } else {
        Err(CommandError::Tmux(
            reply.body.lines().collect::<Vec<_>>().join(" "),
        ))
    }
}

async fn write_loop(
    mut stdin: pipe::Sender,
    mut rx: mpsc::Receiver<(String, oneshot::Sender<Reply>)>,
    pending: Pending,
    ready: oneshot::Receiver<()>,
    awaited_reply: Arc<Notify>,
) {
    // Commands sent before the attach completes fail with "no current client".
    if ready.await.is_err() {
        return;
    }
    let mut out = String::new();
    while let Some(first) = rx.recv().await {
        // Every command queued by now goes out in one write.
        out.clear();
        let mut awaited = false;
        let mut next = Some(first);
        while let Some((line, reply)) = next {
            awaited |= !reply.is_closed();
            // Queue the waiter before the line can be answered (dropped if the reader is gone).
            if let Ok(mut p) = pending.lock() {
                if let Some(p) = p.as_mut() {
                    p.push_back(reply);
                }
            }
            tracing::trace!(command = %line, "to tmux");
            out.push_str(&line);
            out.push('\n');
            next = rx.try_recv().ok();
        }
        if stdin.write_all(out.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
        if awaited {
            // Someone waits for the reply: the reader must watch the pipe now.
            awaited_reply.notify_one();
        }
    }
    // Dropping stdin detaches the client.
}

/// The reading end of the client's stdout.
enum Stdout {
    /// Registered with the runtime: a write wakes the reader.
    Watched(pipe::Receiver),
    /// Not registered (non-blocking): read at grid instants; writes wake nobody.
    Unwatched(std::fs::File),
    /// Between the two, only if a conversion failed.
    Gone,
}

impl Stdout {
    /// Registers the pipe (if it is not) so that a write wakes the reader.
    fn watched(&mut self) -> std::io::Result<&pipe::Receiver> {
        *self = match std::mem::replace(self, Stdout::Gone) {
            Stdout::Unwatched(f) => {
                Stdout::Watched(pipe::Receiver::from_owned_fd_unchecked(OwnedFd::from(f))?)
            }
            other => other,
        };
        match self {
            Stdout::Watched(r) => Ok(r),
            _ => Err(std::io::Error::other("pipe lost")),
        }
    }

    /// Drops the pipe's registration: writes wake nobody until [`Stdout::watched`].
    fn unwatch(&mut self) -> std::io::Result<()> {
        *self = match std::mem::replace(self, Stdout::Gone) {
            Stdout::Watched(r) => Stdout::Unwatched(std::fs::File::from(r.into_nonblocking_fd()?)),
            other => other,
        };
        Ok(())
    }

    /// Reads what is there without waiting: `Ok(0)` at end of file, `WouldBlock` when empty.
    fn try_read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stdout::Watched(r) => r.try_read(buf),
            Stdout::Unwatched(f) => f.read(buf),
            Stdout::Gone => Err(std::io::Error::other("pipe lost")),
        }
    }
}

struct Reader {
    stdout: Stdout,
    pending: Pending,
    id: ConnId,
    events: mpsc::Sender<(ConnId, ConnEvent)>,
    /// Told when tmux has answered the attach (commands may go out).
    ready: Option<oneshot::Sender<()>>,
    pacing: Pacing,
    /// Notified by the writer when it sent a command whose reply is awaited.
    awaited_reply: Arc<Notify>,
    /// Where the reason the client ended is left for [`Connection::exit_reason`].
    exit: Arc<Mutex<Option<String>>>,
}

impl Reader {
    async fn run(mut self, peer: Peer) {
        let mut buf = vec![0u8; 64 * 1024];
        let mut splitter = LineSplitter::default();
        let mut decoder = Decoder::default();
        let mut exit_reason = None;
        let grid = self.pacing.grid;
        let reads = self.pacing.reads();
        let mut last_data: Option<Instant> = None;
        let mut next_read: Option<Instant> = None;
        'read: loop {
            let hurry = self.ready.is_some() || awaited(&self.pending);
            let woke = match next_read.filter(|_| !hurry) {
                Some(at) => {
                    if self.stdout.unwatch().is_err() {
                        break;
                    }
                    tokio::select! {
                        _ = self.pacing.timer.sleep_until(at) => at,
                        _ = self.awaited_reply.notified() => Instant::now(),
                    }
                }
                None => {
                    match self.stdout.watched() {
                        Ok(r) => {
                            if r.readable().await.is_err() {
                                break;
                            }
                        }
                        Err(_) => break,
                    }
                    Instant::now()
                }
            };
            let watched = matches!(self.stdout, Stdout::Watched(_));
            let mut got = 0;
            let mut batch: Vec<Notification> = Vec::new();
            let mut eof = false;
            while got < DRAIN_LIMIT {
                let n = match self.stdout.try_read(&mut buf) {
                    Ok(0) => {
                        eof = true;
                        break;
                    }
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => {
                        eof = true;
                        break;
                    }
                };
                got += n;
                let (pending, ready) = (&self.pending, &mut self.ready);
                splitter.feed(&buf[..n], |line| match decoder.decode_line(line) {
                    Line::Output(pane, wire) => push_output(&mut batch, pane, wire, n),
                    Line::Note(note) => {
                        dispatch(note, &mut batch, &mut exit_reason, pending, ready)
                    }
                    Line::Nothing => {}
                });
                // A short read emptied the pipe; a watched pipe reads on to `WouldBlock`, which
                // tells the runtime to wait for the next write.
                if n < buf.len() && !watched {
                    break;
                }
            }
            // At the bound the reader waits (tmux keeps what it has not written for this client):
            // the daemon takes batches far faster than tmux produces them, and floods that
            // nothing reads are paused.
            if !batch.is_empty()
                && self
                    .events
                    .send((self.id, ConnEvent::Batch(batch)))
                    .await
                    .is_err()
            {
                break 'read;
            }
            if eof {
                break;
            }
            next_read = if got == 0 || !grid.is_on() {
                None
            } else {
                // Busy: something came at the last read on the grid, or twice within one read
                // period. Then the next read waits for the grid (at least half a period).
                let busy = next_read.is_some()
                    || last_data.is_some_and(|t| woke.duration_since(t) <= reads.period());
                last_data = Some(woke);
                busy.then(|| reads.at_or_after(woke + grid.period()))
            };
        }
        if let Ok(mut p) = self.pending.lock() {
            *p = None;
        }
        // The server's own word (exit message, version mismatch) when the stream had none.
        let exit_reason = exit_reason.or_else(|| peer.exit_reason());
        // Closing the client's socket ends the client in tmux, if it is not gone already.
        drop(peer);
        if let Ok(mut e) = self.exit.lock() {
            e.clone_from(&exit_reason);
        }
        let _ = self
            .events
            .send((self.id, ConnEvent::Closed(exit_reason)))
            .await;
    }
}

/// Queues a pane's output, merged with the batch's last entry when that is the same pane's: a
/// pane that streams costs one event per read, not one per line. A new entry has room for
/// `read` bytes (the read it comes from), so a stream is copied once.
fn push_output(batch: &mut Vec<Notification>, pane: PaneId, wire: &[u8], read: usize) {
    if let Some(Notification::Output { pane: last, data }) = batch.last_mut() {
        if *last == pane {
            data.extend_wire(wire);
            return;
        }
    }
    batch.push(Notification::Output {
        pane,
        data: Escaped::from_wire_with_capacity(wire, read),
    });
}

/// Hands a reply to its waiter, or queues the notification into `batch`.
fn dispatch(
    note: Notification,
    batch: &mut Vec<Notification>,
    exit_reason: &mut Option<String>,
    pending: &Pending,
    ready: &mut Option<oneshot::Sender<()>>,
) {
    match note {
        Notification::Reply(r) if r.from_client => {
            let waiter = pending
                .lock()
                .ok()
                .and_then(|mut p| p.as_mut().and_then(VecDeque::pop_front));
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
            *exit_reason = reason;
        }
        other => {
            if matches!(other, Notification::SessionChanged(..)) {
                if let Some(r) = ready.take() {
                    let _ = r.send(());
                }
            }
            batch.push(other);
        }
    }
}
