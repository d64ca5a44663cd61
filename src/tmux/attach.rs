//! Attaching a control client by speaking tmux's client protocol ourselves, instead of running
//! `tmux -C attach`, so that the tmux server can never see a half-identified control client.
//!
//! Why: a tmux client identifies itself in several messages, and two of them carry a file
//! descriptor. The server reads a descriptor-carrying message alone, so the identification
//! arrives in at least three reads with event-loop turns in between. The `tmux` client sends its
//! flags (which mark it a control client) in the first read and `MSG_IDENTIFY_DONE` (which
//! allocates its control state) in the last; a `%sessions-changed` (or any other notification
//! sent to every control client) that the server emits in between is written to a control client
//! with no control state, and tmux 3.2 to 3.5a dereference NULL in `control_write`
//! (`control.c`). We send the two descriptor-carrying messages first and everything else —
//! flags, `MSG_IDENTIFY_DONE` and the attach command — in one write after them, which the server
//! reads and handles in one go: by the time it can notify anyone, the client is complete.
//!
//! The client's input and output are two pipes whose far ends go to the server (it reads our
//! command lines and writes the control-mode stream directly); the socket stays open for the
//! client's life, and a task answers what the server sends on it (exit, detach, file requests).
//! The client sends no environment and attaches with `-E`, so attaching never changes a
//! session's environment (tmux's `update-environment` would copy ours into it).

use std::io::{self, IoSlice};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
use tokio::io::Interest;
use tokio::net::UnixStream;
use tokio::sync::watch;

use super::imsg::{self, Decoder, Message};

/// Why the attach did not happen.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    /// The socket, a pipe or a send failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The server speaks another protocol version (a tmux older than 3.2, or a future one).
    #[error("the tmux server speaks protocol version {0}, not {v}", v = imsg::PROTOCOL_VERSION)]
    Version(u32),
}

/// A control client attached over our own connection.
#[derive(Debug)]
pub struct Attached {
    /// Where command lines go (the server reads the other end).
    pub input: OwnedFd,
    /// The control-mode stream (the server writes the other end; end of file when the client
    /// is gone).
    pub output: OwnedFd,
    /// The client's connection to the server: dropping it ends the client.
    pub peer: Peer,
}

/// The client's socket, answered by a task. Dropping this ends the task and closes the socket,
/// which tmux takes as the client leaving.
#[derive(Debug)]
pub struct Peer {
    task: tokio::task::JoinHandle<()>,
    exit: watch::Receiver<Option<String>>,
}

impl Peer {
    /// Why the server ended the client, once it has (`None` while attached, or when the socket
    /// simply closed).
    pub fn exit_reason(&self) -> Option<String> {
        self.exit.borrow().clone()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Attaches a control client to the server at `socket`, running `argv` (a tmux command such as
/// `attach-session -E -t $3 -f read-only`) as its first command. `name` is the
/// client's name in `list-clients`: it is sent as the client's tty name, which tmux names a
/// client after (ours read `thinkterm-sidecar-PID-N`).
pub async fn attach(socket: &Path, name: &str, argv: &[&str]) -> Result<Attached, AttachError> {
    // std's pipes are close-on-exec: no program we spawn inherits them.
    let (server_input, input) = io::pipe()?;
    let (output, server_output) = io::pipe()?;
    let stream = UnixStream::connect(socket).await?;
    send_with_fd(&stream, imsg::MSG_IDENTIFY_STDIN, server_input.as_fd()).await?;
    send_with_fd(&stream, imsg::MSG_IDENTIFY_STDOUT, server_output.as_fd()).await?;
    // The server has its own copies now; ours would keep the pipes open after it is gone.
    drop((server_input, server_output));
    send_all(&stream, &identify_and_command(name, argv)).await?;
    let (tx, exit) = watch::channel(None);
    let task = tokio::spawn(answer(stream, tx));
    Ok(Attached {
        input: input.into(),
        output: output.into(),
        peer: Peer { task, exit },
    })
}

/// Everything after the two descriptors, in one buffer: the flags, the rest of the identity,
/// `MSG_IDENTIFY_DONE`, then the command.
fn identify_and_command(name: &str, argv: &[&str]) -> Vec<u8> {
    let flags = imsg::CLIENT_CONTROL | imsg::CLIENT_UTF8;
    let mut out = Vec::with_capacity(512);
    imsg::encode(
        &mut out,
        imsg::MSG_IDENTIFY_FLAGS,
        false,
        &(flags as i32).to_ne_bytes(),
    );
    imsg::encode(
        &mut out,
        imsg::MSG_IDENTIFY_LONGFLAGS,
        false,
        &flags.to_ne_bytes(),
    );
    imsg::encode(
        &mut out,
        imsg::MSG_IDENTIFY_TERM,
        false,
        &imsg::string_payload(""),
    );
    imsg::encode(
        &mut out,
        imsg::MSG_IDENTIFY_FEATURES,
        false,
        &0i32.to_ne_bytes(),
    );
    imsg::encode(
        &mut out,
        imsg::MSG_IDENTIFY_TTYNAME,
        false,
        &imsg::string_payload(name),
    );
    imsg::encode(
        &mut out,
        imsg::MSG_IDENTIFY_CWD,
        false,
        &imsg::string_payload("/"),
    );
    imsg::encode(
        &mut out,
        imsg::MSG_IDENTIFY_CLIENTPID,
        false,
        &(std::process::id() as i32).to_ne_bytes(),
    );
    imsg::encode(&mut out, imsg::MSG_IDENTIFY_DONE, false, &[]);
    imsg::encode(
        &mut out,
        imsg::MSG_COMMAND,
        false,
        &imsg::command_payload(argv),
    );
    out
}

/// Sends one empty message of `kind` with `fd` attached (a message alone in its write: the
/// server's read stops at a descriptor).
async fn send_with_fd(
    stream: &UnixStream,
    kind: u32,
    fd: std::os::fd::BorrowedFd<'_>,
) -> io::Result<()> {
    let mut msg = Vec::with_capacity(imsg::HEADER_LEN);
    imsg::encode(&mut msg, kind, true, &[]);
    let fds = [fd];
    let sent = stream
        .async_io(Interest::WRITABLE, || {
            let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
            let mut control = SendAncillaryBuffer::new(&mut space);
            control.push(SendAncillaryMessage::ScmRights(&fds));
            sendmsg(
                stream,
                &[IoSlice::new(&msg)],
                &mut control,
                SendFlags::NOSIGNAL,
            )
            .map_err(io::Error::from)
        })
        .await?;
    // The descriptor went with the first byte; finish a short write without it.
    send_all(stream, &msg[sent..]).await
}

/// Writes all of `bytes`.
async fn send_all(stream: &UnixStream, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        stream.writable().await?;
        match stream.try_write(bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Answers the server on the client's socket until it closes: an exit or shutdown ends the
/// client (closing the socket), a detach is acknowledged, file requests are refused (we never
/// ask for one).
async fn answer(stream: UnixStream, exit: watch::Sender<Option<String>>) {
    let mut decoder = Decoder::default();
    let mut buf = vec![0u8; 4096];
    loop {
        if stream.readable().await.is_err() {
            return;
        }
        match stream.try_read(&mut buf) {
            Ok(0) => return,
            Ok(n) => decoder.feed(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(_) => return,
        }
        loop {
            let msg = match decoder.next_message() {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(error = %e, "unreadable message from tmux; leaving");
                    return;
                }
            };
            match reply_to(&msg) {
                Reply::Nothing => {}
                Reply::Send(bytes) => {
                    if send_all(&stream, &bytes).await.is_err() {
                        return;
                    }
                }
                Reply::Leave(reason) => {
                    exit.send_replace(reason);
                    return;
                }
            }
        }
    }
}

/// What to do about one message from the server.
#[derive(Debug, PartialEq, Eq)]
enum Reply {
    Nothing,
    Send(Vec<u8>),
    Leave(Option<String>),
}

fn reply_to(msg: &Message) -> Reply {
    match msg.kind {
        imsg::MSG_VERSION => Reply::Leave(Some(format!(
            "protocol version mismatch (server {})",
            msg.version
        ))),
        imsg::MSG_EXIT => {
            let (_, message) = imsg::exit_payload(&msg.data);
            Reply::Leave(message)
        }
        imsg::MSG_SHUTDOWN => Reply::Leave(Some("server exited".into())),
        imsg::MSG_EXITED => Reply::Leave(None),
        imsg::MSG_DETACH | imsg::MSG_DETACHKILL => {
            let mut out = Vec::new();
            imsg::encode(&mut out, imsg::MSG_EXITING, false, &[]);
            Reply::Send(out)
        }
        imsg::MSG_READ_OPEN | imsg::MSG_WRITE_OPEN => {
            let Some(stream) = imsg::stream_of(&msg.data) else {
                return Reply::Nothing;
            };
            let kind = if msg.kind == imsg::MSG_READ_OPEN {
                imsg::MSG_READ_DONE
            } else {
                imsg::MSG_WRITE_READY
            };
            let mut data = stream.to_ne_bytes().to_vec();
            data.extend_from_slice(&rustix::io::Errno::BADF.raw_os_error().to_ne_bytes());
            let mut out = Vec::new();
            imsg::encode(&mut out, kind, false, &data);
            Reply::Send(out)
        }
        _ => Reply::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(bytes: &[u8]) -> Vec<Message> {
        let mut d = Decoder::default();
        d.feed(bytes);
        std::iter::from_fn(|| d.next_message().expect("well formed")).collect()
    }

    #[test]
    fn flags_done_and_the_command_go_out_together_after_the_descriptors() {
        let msgs = decode_all(&identify_and_command(
            "thinkterm-sidecar-1-0",
            &["attach-session", "-t", "$1"],
        ));
        let kinds: Vec<u32> = msgs.iter().map(|m| m.kind).collect();
        // Everything that marks the client a control client, and the DONE that completes it,
        // is in this one write; the descriptors were sent before it.
        assert_eq!(kinds.first(), Some(&imsg::MSG_IDENTIFY_FLAGS));
        assert!(kinds.contains(&imsg::MSG_IDENTIFY_LONGFLAGS));
        let done = kinds.iter().position(|&k| k == imsg::MSG_IDENTIFY_DONE);
        assert_eq!(done, Some(kinds.len() - 2));
        assert_eq!(kinds.last(), Some(&imsg::MSG_COMMAND));
        assert!(!kinds.contains(&imsg::MSG_IDENTIFY_STDIN));
        assert!(!kinds.contains(&imsg::MSG_IDENTIFY_STDOUT));
        assert!(msgs.iter().all(|m| !m.has_fd));
        // tmux reads the tty name without a check at DONE: it must be sent.
        let tty = msgs
            .iter()
            .find(|m| m.kind == imsg::MSG_IDENTIFY_TTYNAME)
            .expect("tty name sent");
        assert_eq!(tty.data, b"thinkterm-sidecar-1-0\0");
        let flags = msgs
            .iter()
            .find(|m| m.kind == imsg::MSG_IDENTIFY_LONGFLAGS)
            .expect("flags");
        let flags = u64::from_ne_bytes(flags.data[..8].try_into().expect("8 bytes"));
        assert_eq!(
            flags & (imsg::CLIENT_CONTROL | imsg::CLIENT_UTF8),
            imsg::CLIENT_CONTROL | imsg::CLIENT_UTF8
        );
    }

    fn message(kind: u32, data: &[u8]) -> Message {
        Message {
            kind,
            has_fd: false,
            version: imsg::PROTOCOL_VERSION,
            data: data.to_vec(),
        }
    }

    #[test]
    fn the_server_s_messages_are_answered() {
        let mut exit = 0i32.to_ne_bytes().to_vec();
        exit.extend_from_slice(b"detached\0");
        assert_eq!(
            reply_to(&message(imsg::MSG_EXIT, &exit)),
            Reply::Leave(Some("detached".into()))
        );
        assert!(matches!(
            reply_to(&message(imsg::MSG_VERSION, &[])),
            Reply::Leave(Some(_))
        ));
        let Reply::Send(ack) = reply_to(&message(imsg::MSG_DETACH, b"s\0")) else {
            panic!("a detach is acknowledged");
        };
        assert_eq!(decode_all(&ack)[0].kind, imsg::MSG_EXITING);
        let Reply::Send(refusal) =
            reply_to(&message(imsg::MSG_WRITE_OPEN, &[7, 0, 0, 0, 1, 0, 0, 0]))
        else {
            panic!("a file request is refused");
        };
        let r = &decode_all(&refusal)[0];
        assert_eq!(r.kind, imsg::MSG_WRITE_READY);
        assert_eq!(imsg::stream_of(&r.data), Some(7));
        assert_eq!(reply_to(&message(9999, &[])), Reply::Nothing);
    }
}
