//! Pane output through `pipe-pane`: each pane's bytes go from tmux straight to the daemon over a
//! socket of their own, raw, instead of as a control client's `%output`.
//!
//! Why: a control client that takes output costs the tmux server, for every byte below 0x20 of
//! every pane, one `printf` into the client's buffer, and in every turn of its loop a look-up of
//! every pane in every such client (see `BENCHMARKS.md`). A pipe costs tmux one `write` of the
//! bytes as they are. The control clients stay (one per session: titles, commands,
//! notifications, commands and captures) with `no-output`, which tmux skips at once.
//!
//! How: `pipe-pane -O` starts `thinkterm-sidecar __pipe-relay SOCKET %N TOKEN` with one end of a
//! socket pair as its standard input; the relay ([`relay`]) hands that descriptor to the
//! [`Pipes`] listener here and exits, and a reader task ([`reader`]) takes the pane's bytes from
//! then on. The listener checks the peer's uid (ours only) and the token (this daemon's: a
//! relay started for an earlier one is refused). Each pipe is marked with the pane option
//! `@thinkterm_pipe = TOKEN`, so that a later daemon can tell a pipe left by an earlier sidecar
//! (replaced) from the person's own `pipe-pane` (left alone: that pane is read through its
//! control client). Hooks on `after-new-window`, `after-split-window` and `after-new-session`
//! open the pipe of a new pane before tmux reads its first byte.
//!
//! Owns: the listener, the token and the reader tasks. The observer decides which panes get a
//! pipe ([`crate::tmux::observer`]).

pub mod keep;
mod pace;
mod reader;
mod ready;
pub mod relay;

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::Interest;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::{AbortHandle, JoinSet};

use super::command::quote;
use super::connection::{ConnEvent, ConnId, Pacing};
use crate::ids::PaneId;

/// The id pipe events carry in the observer's channel (no control client has it).
pub const PIPES: ConnId = ConnId(u64::MAX);

/// The pane option that marks a pipe as a sidecar's: its value is the daemon's token.
pub const MARK: &str = "@thinkterm_pipe";

/// The longest wait for a relay's message once it has connected.
const HANDSHAKE: Duration = Duration::from_secs(2);

/// Where the relay is and where it hands pipes over.
#[derive(Clone, Debug)]
pub struct PipeConfig {
    /// The `thinkterm-sidecar` binary that `pipe-pane` runs as the relay.
    pub relay: PathBuf,
    /// The socket the relays connect to (in the daemon's private runtime directory).
    pub socket: PathBuf,
}

impl PipeConfig {
    /// The daemon's: this binary, and a socket beside the daemon's own (`KEY.sock.pipe`).
    pub fn beside(daemon_socket: &Path) -> io::Result<PipeConfig> {
        let mut socket = daemon_socket.as_os_str().to_owned();
        socket.push(".pipe");
        Ok(PipeConfig {
            relay: std::env::current_exe()?,
            socket: PathBuf::from(socket),
        })
    }
}

/// What the pipes tell the observer (through its channel, as [`ConnEvent::Pipe`]).
#[derive(Debug)]
pub enum PipeEvent {
    /// A relay handed over `pane`'s pipe. Nothing of it is read until this is taken; dropping
    /// `handle` closes the pipe.
    Opened {
        /// The pane.
        pane: PaneId,
        /// Keeps the pipe's reader running; its serial tags the pipe's later events.
        handle: PipeHandle,
    },
    /// Bytes the pane wrote, raw.
    Output {
        /// The pane.
        pane: PaneId,
        /// Which of the pane's pipes (a pane piped twice has the later one).
        serial: u64,
        /// What the pipe's keeper kept of its bytes, in order, right after the previous
        /// delivery's: all of them, or, past a cut (a CAN), only the escape sequences.
        data: Vec<u8>,
        /// How many bytes were left out (the pane wrote faster than the daemon reads).
        skipped: u64,
    },
    /// tmux closed the pipe: the pane closed, or another `pipe-pane` replaced or closed ours.
    Closed {
        /// The pane.
        pane: PaneId,
        /// Which of its pipes.
        serial: u64,
    },
    /// Time to look at the pipes asked for and not handed over (sent by the observer's own
    /// timer task).
    Check,
}

/// A pipe's reader; dropping it stops the reader and closes our end of the pipe (tmux notices at
/// the pane's next write, or at once when told with `pipe-pane -t PANE`).
#[derive(Debug)]
pub struct PipeHandle {
    abort: AbortHandle,
    serial: u64,
}

impl PipeHandle {
    /// Tags this pipe's events.
    pub fn serial(&self) -> u64 {
        self.serial
    }
}

impl Drop for PipeHandle {
    fn drop(&mut self) {
        self.abort.abort();
    }
}

/// The listener the relays hand pipes to, and the pipes' readers. Dropping it stops them all
/// and removes the socket.
pub struct Pipes {
    config: PipeConfig,
    token: Arc<str>,
    task: AbortHandle,
}

impl Drop for Pipes {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.config.socket);
    }
}

impl std::fmt::Debug for Pipes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipes")
            .field("socket", &self.config.socket)
            .finish_non_exhaustive()
    }
}

impl Pipes {
    /// Binds the socket (replacing a stale one: its directory is ours alone) and starts
    /// listening. Pipes' bytes are read as `pacing` says and reported on `events`.
    pub fn start(
        config: PipeConfig,
        events: mpsc::Sender<(ConnId, ConnEvent)>,
        pacing: Pacing,
    ) -> io::Result<Pipes> {
        if config.socket.as_os_str().len() >= 108 {
            return Err(io::Error::other(format!(
                "{}: path too long for a socket",
                config.socket.display()
            )));
        }
        let _ = std::fs::remove_file(&config.socket);
        let listener = UnixListener::bind(&config.socket)?;
        std::fs::set_permissions(&config.socket, std::fs::Permissions::from_mode(0o600))?;
        let token: Arc<str> = new_token()?.into();
        let task = tokio::spawn(serve(listener, token.clone(), events, pacing)).abort_handle();
        Ok(Pipes {
            config,
            token,
            task,
        })
    }

    /// This daemon's token.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The socket relays connect to.
    pub fn socket(&self) -> &Path {
        &self.config.socket
    }

    /// The shell command `pipe-pane` runs, written for `pipe-pane`'s own expansion of its
    /// argument (formats, then `strftime`): `#` and `%` doubled in everything but the
    /// `#{pane_id}` it fills in.
    fn shell_command(&self) -> String {
        let literal = |s: &str| s.replace('#', "##").replace('%', "%%");
        format!(
            "exec {} {} {} #{{pane_id}} {}",
            literal(&sh_quote(&self.config.relay.to_string_lossy())),
            relay::RELAY_ARG,
            literal(&sh_quote(&self.config.socket.to_string_lossy())),
            self.token
        )
    }

    /// The command that opens `pane`'s pipe to us (replacing any pipe it has).
    pub fn open_command(&self, pane: PaneId) -> String {
        format!("pipe-pane -O -t {pane} {}", quote(&self.shell_command()))
    }

    /// The command that marks `pane`'s pipe as ours.
    pub fn mark_command(&self, pane: PaneId) -> String {
        format!("set-option -p -t {pane} {MARK} {}", self.token)
    }

    /// The commands that close `pane`'s pipe and take our mark off.
    pub fn close_commands(pane: PaneId) -> [String; 2] {
        [
            format!("pipe-pane -t {pane}"),
            format!("set-option -pu -t {pane} {MARK}"),
        ]
    }

    /// The command that opens and marks `pane`'s pipe again after it was held closed, unless
    /// the pane has a pipe now (someone's `pipe-pane`, which must stay).
    pub fn reopen_command(&self, pane: PaneId) -> String {
        self.open_unless_piped(&format!(" -t {pane}"))
    }

    /// The command our hooks run for a new pane (the hook's pane): open and mark its pipe,
    /// unless something (a hook of the person's) already piped it.
    pub fn hook_command(&self) -> String {
        self.open_unless_piped("")
    }

    /// Opens and marks the pipe of the pane `target` names (` -t %N`, or nothing: the
    /// context's pane) unless it has one.
    fn open_unless_piped(&self, target: &str) -> String {
        let open = format!(
            "pipe-pane -O{target} {} ; set-option -p{target} {MARK} {}",
            quote(&self.shell_command()),
            self.token
        );
        format!(
            "if-shell -F{target} {} {}",
            quote("#{?pane_pipe,,1}"),
            quote(&open)
        )
    }
}

/// Quotes `s` for `sh` (single quotes; a single quote inside as `'\''`).
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// 128 random bits as hex.
fn new_token() -> io::Result<String> {
    let mut bytes = [0u8; 16];
    io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Accepts relays; each hand-over becomes a reader.
async fn serve(
    listener: UnixListener,
    token: Arc<str>,
    events: mpsc::Sender<(ConnId, ConnEvent)>,
    pacing: Pacing,
) {
    let uid = crate::paths::uid();
    let mut handshakes: JoinSet<Option<(PaneId, OwnedFd)>> = JoinSet::new();
    let mut readers: JoinSet<()> = JoinSet::new();
    let mut serial = 0u64;
    let ready = ready::GridReady::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let token = token.clone();
                    handshakes.spawn(async move {
                        match tokio::time::timeout(HANDSHAKE, handshake(&stream, uid, &token)).await {
                            Ok(Ok(got)) => Some(got),
                            Ok(Err(e)) => {
                                tracing::debug!(error = %e, "pipe hand-over refused");
                                None
                            }
                            Err(_) => {
                                tracing::debug!("pipe hand-over timed out");
                                None
                            }
                        }
                    });
                }
                Err(e) => {
                    // Out of descriptors, most likely: wait rather than spin.
                    tracing::warn!(error = %e, "cannot accept a pipe hand-over");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            Some(done) = handshakes.join_next(), if !handshakes.is_empty() => {
                let Ok(Some((pane, fd))) = done else { continue };
                let (go, start) = oneshot::channel();
                serial += 1;
                let abort = readers.spawn(reader::read(
                    reader::Pipe { pane, serial },
                    fd,
                    events.clone(),
                    pacing.clone(),
                    ready.clone(),
                    start,
                ));
                let opened = PipeEvent::Opened { pane, handle: PipeHandle { abort, serial } };
                if events.send((PIPES, ConnEvent::Pipe(opened))).await.is_err() {
                    return;
                }
                let _ = go.send(());
            },
            Some(_) = readers.join_next(), if !readers.is_empty() => {},
        }
    }
}

/// Why a hand-over was refused.
#[derive(Debug, thiserror::Error)]
enum HandshakeError {
    #[error("from uid {0}, not ours")]
    Stranger(u32),
    #[error("no descriptor came with the message")]
    NoDescriptor,
    #[error(transparent)]
    Message(#[from] relay::MessageError),
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Reads one relay's message and descriptor.
async fn handshake(
    stream: &UnixStream,
    uid: u32,
    token: &str,
) -> Result<(PaneId, OwnedFd), HandshakeError> {
    use rustix::net::{recvmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let peer = stream.peer_cred()?.uid();
    if peer != uid {
        return Err(HandshakeError::Stranger(peer));
    }
    let mut buf = [0u8; relay::MAX_MESSAGE];
    let mut fds: Vec<OwnedFd> = Vec::new();
    let n = stream
        .async_io(Interest::READABLE, || {
            let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
            let mut control = RecvAncillaryBuffer::new(&mut space);
            let r = recvmsg(
                stream,
                &mut [io::IoSliceMut::new(&mut buf)],
                &mut control,
                RecvFlags::CMSG_CLOEXEC,
            )
            .map_err(io::Error::from)?;
            for msg in control.drain() {
                if let RecvAncillaryMessage::ScmRights(got) = msg {
                    fds.extend(got);
                }
            }
            Ok(r.bytes)
        })
        .await?;
    let pane = relay::parse(&buf[..n], token)?;
    // Exactly one descriptor; any other is closed with `fds`.
    if fds.len() != 1 {
        return Err(HandshakeError::NoDescriptor);
    }
    let fd = fds.pop().ok_or(HandshakeError::NoDescriptor)?;
    Ok((pane, fd))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sh_quoting_keeps_any_path_one_word() {
        assert_eq!(sh_quote("/a b/c"), "'/a b/c'");
        assert_eq!(sh_quote("/it's"), r"'/it'\''s'");
    }
}
