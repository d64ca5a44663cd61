//! tmux's client–server messages (OpenBSD `imsg` framing, tmux protocol version 8, the same from
//! tmux 3.2 to 3.5a): a 16-byte header in the machine's byte order (`type: u32`, `len: u16`
//! including the header, `flags: u16` with bit 1 = "a file descriptor comes with this message",
//! `peerid: u32` carrying the protocol version, `pid: u32`), then the payload. Pure: encoding
//! and incremental decoding, no I/O (the socket and the descriptors are [`super::attach`]'s).

/// The protocol version tmux 3.2 to 3.5a speak. A server of another version answers any
/// message with [`MSG_VERSION`] and drops the client.
pub const PROTOCOL_VERSION: u32 = 8;
/// Header size.
pub const HEADER_LEN: usize = 16;
/// The largest message tmux accepts (`MAX_IMSGSIZE`).
pub const MAX_MESSAGE: usize = 16384;
/// Header flag: a file descriptor travels with this message.
pub const FLAG_HAS_FD: u16 = 1;

/// Server → client: the protocol versions differ.
pub const MSG_VERSION: u32 = 12;
/// Client → server: `int` client flags.
pub const MSG_IDENTIFY_FLAGS: u32 = 100;
/// Client → server: the terminal name (`TERM`), NUL-terminated.
pub const MSG_IDENTIFY_TERM: u32 = 101;
/// Client → server: the tty name, NUL-terminated ("" for none).
pub const MSG_IDENTIFY_TTYNAME: u32 = 102;
/// Client → server: the client's input, with its descriptor.
pub const MSG_IDENTIFY_STDIN: u32 = 104;
/// Client → server: the end of identification; the server starts the client here.
pub const MSG_IDENTIFY_DONE: u32 = 106;
/// Client → server: the client's pid.
pub const MSG_IDENTIFY_CLIENTPID: u32 = 107;
/// Client → server: the working directory, NUL-terminated.
pub const MSG_IDENTIFY_CWD: u32 = 108;
/// Client → server: `int` terminal features.
pub const MSG_IDENTIFY_FEATURES: u32 = 109;
/// Client → server: the client's output, with its descriptor.
pub const MSG_IDENTIFY_STDOUT: u32 = 110;
/// Client → server: `u64` client flags.
pub const MSG_IDENTIFY_LONGFLAGS: u32 = 111;
/// Client → server: a command (`int argc`, then each argument NUL-terminated).
pub const MSG_COMMAND: u32 = 200;
/// Server → client: detach.
pub const MSG_DETACH: u32 = 201;
/// Server → client: detach and hang up the parent.
pub const MSG_DETACHKILL: u32 = 202;
/// Server → client: exit (`int` status, then an optional message).
pub const MSG_EXIT: u32 = 203;
/// Server → client: the exit is complete.
pub const MSG_EXITED: u32 = 204;
/// Client → server: the client is exiting (the answer to a detach).
pub const MSG_EXITING: u32 = 205;
/// Server → client: the server is shutting down.
pub const MSG_SHUTDOWN: u32 = 210;
/// Server → client: open a file for reading (`int stream`, `int fd`, path).
pub const MSG_READ_OPEN: u32 = 300;
/// Client → server: the read is over (`int stream`, `int error`).
pub const MSG_READ_DONE: u32 = 302;
/// Server → client: open a file for writing (`int stream`, `int fd`, `int flags`, path).
pub const MSG_WRITE_OPEN: u32 = 303;
/// Client → server: the write side is ready or failed (`int stream`, `int error`).
pub const MSG_WRITE_READY: u32 = 305;

/// tmux's `CLIENT_CONTROL` flag (`-C`), the same value from tmux 3.0 to 3.5a.
pub const CLIENT_CONTROL: u64 = 0x2000;
/// tmux's `CLIENT_UTF8` flag (`-u`, or a UTF-8 locale).
pub const CLIENT_UTF8: u64 = 0x10000;

/// One message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// Its type (`MSG_*`).
    pub kind: u32,
    /// Whether a descriptor travels with it.
    pub has_fd: bool,
    /// The protocol version in the sender's `peerid`.
    pub version: u32,
    /// The payload.
    pub data: Vec<u8>,
}

/// Why bytes are not a message.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A header announces fewer bytes than a header, or more than tmux ever sends.
    #[error("bad message length {0}")]
    BadLength(usize),
}

/// Appends one message to `out`.
///
/// # Panics
/// When the payload is over [`MAX_MESSAGE`] (ours are a few hundred bytes at most).
pub fn encode(out: &mut Vec<u8>, kind: u32, has_fd: bool, data: &[u8]) {
    let len = HEADER_LEN + data.len();
    assert!(len <= MAX_MESSAGE, "imsg payload too large");
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(&(len as u16).to_ne_bytes());
    out.extend_from_slice(&(if has_fd { FLAG_HAS_FD } else { 0 }).to_ne_bytes());
    out.extend_from_slice(&PROTOCOL_VERSION.to_ne_bytes());
    out.extend_from_slice(&std::process::id().to_ne_bytes());
    out.extend_from_slice(data);
}

/// A `MSG_COMMAND` payload: `argc`, then each argument NUL-terminated (tmux's
/// `cmd_pack_argv`).
pub fn command_payload(argv: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(argv.len() as i32).to_ne_bytes());
    for a in argv {
        out.extend_from_slice(a.as_bytes());
        out.push(0);
    }
    out
}

/// A NUL-terminated string payload.
pub fn string_payload(s: &str) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.push(0);
    v
}

/// The exit status and message of a `MSG_EXIT` payload (`int`, then an optional
/// NUL-terminated message).
pub fn exit_payload(data: &[u8]) -> (Option<i32>, Option<String>) {
    let status = data
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .map(i32::from_ne_bytes);
    let message = data
        .get(4..)
        .map(|m| m.split(|&b| b == 0).next().unwrap_or(m))
        .filter(|m| !m.is_empty())
        .map(|m| String::from_utf8_lossy(m).into_owned());
    (status, message)
}

/// The leading `int stream` of a file message's payload.
pub fn stream_of(data: &[u8]) -> Option<i32> {
    data.get(..4)
        .and_then(|b| b.try_into().ok())
        .map(i32::from_ne_bytes)
}

/// Splits a byte stream into messages, whatever the reads' boundaries.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
}

impl Decoder {
    /// Adds bytes read from the socket.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole message, if one has arrived.
    pub fn next_message(&mut self) -> Result<Option<Message>, FrameError> {
        if self.buf.len() < HEADER_LEN {
            return Ok(None);
        }
        let u32_at = |i: usize| {
            u32::from_ne_bytes([
                self.buf[i],
                self.buf[i + 1],
                self.buf[i + 2],
                self.buf[i + 3],
            ])
        };
        let u16_at = |i: usize| u16::from_ne_bytes([self.buf[i], self.buf[i + 1]]);
        let len = usize::from(u16_at(4));
        if !(HEADER_LEN..=MAX_MESSAGE).contains(&len) {
            return Err(FrameError::BadLength(len));
        }
        if self.buf.len() < len {
            return Ok(None);
        }
        let msg = Message {
            kind: u32_at(0),
            has_fd: u16_at(6) & FLAG_HAS_FD != 0,
            version: u32_at(8) & 0xff,
            data: self.buf[HEADER_LEN..len].to_vec(),
        };
        self.buf.drain(..len);
        Ok(Some(msg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_round_trips_through_any_split() {
        let mut wire = Vec::new();
        encode(&mut wire, MSG_EXIT, false, &[1, 0, 0, 0, b'h', b'i', 0]);
        encode(&mut wire, MSG_IDENTIFY_STDIN, true, &[]);
        for cut in 0..=wire.len() {
            let mut d = Decoder::default();
            let mut got = Vec::new();
            for part in [&wire[..cut], &wire[cut..]] {
                d.feed(part);
                while let Some(m) = d.next_message().expect("well formed") {
                    got.push(m);
                }
            }
            assert_eq!(got.len(), 2, "cut at {cut}");
            assert_eq!(got[0].kind, MSG_EXIT);
            assert_eq!(got[0].version, PROTOCOL_VERSION);
            assert_eq!(exit_payload(&got[0].data), (Some(1), Some("hi".into())));
            assert!(!got[0].has_fd);
            assert_eq!(got[1].kind, MSG_IDENTIFY_STDIN);
            assert!(got[1].has_fd && got[1].data.is_empty());
        }
    }

    #[test]
    fn the_header_is_tmux_s_layout() {
        let mut wire = Vec::new();
        encode(
            &mut wire,
            MSG_COMMAND,
            false,
            &command_payload(&["a", "bc"]),
        );
        assert_eq!(&wire[0..4], &200u32.to_ne_bytes());
        assert_eq!(&wire[4..6], &(16u16 + 4 + 5).to_ne_bytes());
        assert_eq!(&wire[6..8], &0u16.to_ne_bytes());
        assert_eq!(&wire[8..12], &8u32.to_ne_bytes());
        assert_eq!(&wire[16..20], &2i32.to_ne_bytes());
        assert_eq!(&wire[20..], b"a\0bc\0");
    }

    #[test]
    fn a_short_or_huge_length_is_an_error_not_a_hang() {
        for len in [0u16, 15, 20000] {
            let mut wire = vec![0u8; 16];
            wire[4..6].copy_from_slice(&len.to_ne_bytes());
            let mut d = Decoder::default();
            d.feed(&wire);
            assert_eq!(
                d.next_message(),
                Err(FrameError::BadLength(usize::from(len)))
            );
        }
    }

    #[test]
    fn exit_payloads_without_message_or_status() {
        assert_eq!(exit_payload(&[]), (None, None));
        assert_eq!(exit_payload(&0i32.to_ne_bytes()), (Some(0), None));
    }
}
