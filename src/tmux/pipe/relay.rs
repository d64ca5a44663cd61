//! The relay: the program `pipe-pane` starts for a pane (`thinkterm-sidecar __pipe-relay SOCKET
//! PANE TOKEN`). tmux gives it one end of a socket pair as its standard input; the relay passes
//! that descriptor to the daemon over the daemon's pipe socket (`SCM_RIGHTS`) with one line
//! saying which pane it is and the daemon's token, and exits. From then on tmux writes the pane's
//! bytes straight to the daemon; no process stays behind.
//!
//! The message is one line, `thinkterm-pipe/1 TOKEN %N\n`, sent with the descriptor in one
//! `sendmsg`. Both sides are here: [`message`] and [`parse`] are pure, [`run`] is the relay's
//! whole life (blocking, no runtime: it runs before anything else in `main`).

use std::ffi::OsString;
use std::io::{self, IoSlice};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use rustix::net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};

use crate::ids::PaneId;

/// The hidden first argument that makes the binary a relay (not a clap subcommand: the relay
/// runs before the command line is parsed or logging is set up, and prints nothing).
pub const RELAY_ARG: &str = "__pipe-relay";

/// The first word of the message: the protocol and its version.
pub const PROTOCOL: &str = "thinkterm-pipe/1";

/// The longest message the daemon reads (the token is 32 hex digits).
pub const MAX_MESSAGE: usize = 128;

/// The relay's message for `pane`.
pub fn message(token: &str, pane: PaneId) -> Vec<u8> {
    format!("{PROTOCOL} {token} {pane}\n").into_bytes()
}

/// Why a message was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    /// Not one line of the protocol (another program, or another version of it).
    #[error("not a pipe hand-over message")]
    Malformed,
    /// The token is not this daemon's (a relay started for an earlier daemon).
    #[error("wrong token")]
    Token,
}

/// Reads a relay's message: the pane, if the line is well formed and carries `token`.
pub fn parse(msg: &[u8], token: &str) -> Result<PaneId, MessageError> {
    let line = std::str::from_utf8(msg)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .ok_or(MessageError::Malformed)?;
    let mut words = line.split(' ');
    let (Some(PROTOCOL), Some(t), Some(pane), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(MessageError::Malformed);
    };
    let pane = PaneId::parse(pane).ok_or(MessageError::Malformed)?;
    if t.is_empty() {
        return Err(MessageError::Malformed);
    }
    if t != token {
        return Err(MessageError::Token);
    }
    Ok(pane)
}

/// The relay's whole life: `args` are what follows [`RELAY_ARG`] (SOCKET PANE TOKEN). Returns
/// the exit code (tmux ignores it; its standard error is `/dev/null`).
pub fn run(args: &[OsString]) -> i32 {
    let [socket, pane, token] = args else {
        return 2;
    };
    let (Some(pane), Some(token)) = (pane.to_str().and_then(PaneId::parse), token.to_str()) else {
        return 2;
    };
    match hand_over(std::path::Path::new(socket), pane, token) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// Sends our standard input (tmux's socket) to the daemon at `socket`.
fn hand_over(socket: &std::path::Path, pane: PaneId, token: &str) -> io::Result<()> {
    let stream = UnixStream::connect(socket)?;
    // A daemon that stopped reading must not keep a relay (and tmux's pipe) waiting.
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    let msg = message(token, pane);
    let stdin = io::stdin();
    let fds = [stdin.as_fd()];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(io::Error::other("no room for the descriptor"));
    }
    let sent = sendmsg(
        &stream,
        &[IoSlice::new(&msg)],
        &mut control,
        SendFlags::NOSIGNAL,
    )?;
    if sent != msg.len() {
        // The daemon reads the line in one piece or refuses it.
        return Err(io::Error::other("short write"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn a_message_reads_back_as_its_pane() {
        assert_eq!(parse(&message(TOKEN, PaneId(7)), TOKEN), Ok(PaneId(7)));
        assert!(message(TOKEN, PaneId(u32::MAX)).len() <= MAX_MESSAGE);
    }

    #[test]
    fn anything_else_is_refused() {
        let other = "ffffffffffffffffffffffffffffffff";
        assert_eq!(
            parse(&message(other, PaneId(7)), TOKEN),
            Err(MessageError::Token)
        );
        for bad in [
            &b""[..],
            b"\n",
            b"thinkterm-pipe/1 0123456789abcdef0123456789abcdef %7",
            b"thinkterm-pipe/2 0123456789abcdef0123456789abcdef %7\n",
            b"thinkterm-pipe/1 0123456789abcdef0123456789abcdef @7\n",
            b"thinkterm-pipe/1 0123456789abcdef0123456789abcdef %7 x\n",
            b"thinkterm-pipe/1  %7\n",
            b"thinkterm-pipe/1 0123456789abcdef0123456789abcdef %\xff\n",
        ] {
            assert_eq!(parse(bad, TOKEN), Err(MessageError::Malformed), "{bad:?}");
        }
    }

    #[test]
    fn the_relay_refuses_a_bad_command_line() {
        assert_eq!(run(&[]), 2);
        let args: Vec<OsString> = ["/nonexistent.sock", "@1", TOKEN]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(run(&args), 2);
        let args: Vec<OsString> = ["/nonexistent/thinkterm.sock", "%1", TOKEN]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(run(&args), 1, "no daemon there");
    }
}
