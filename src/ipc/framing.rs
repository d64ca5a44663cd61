//! The one JSON-lines framing of the daemon's socket, used by every reader and writer (the
//! server, the CLI's [`Client`](super::Client) and the panel): a message is one JSON value on
//! one line, ended by `\n`. Every line has a cap, so a peer cannot make the other side buffer
//! without bound: a longer line is an error that says so, and the reader stops there (the rest
//! of the stream is out of step; the caller closes the connection).
//!
//! The line splitting is [`take`], pure and shared by the blocking and the tokio readers.

use std::io;

use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// Longest request line the daemon reads. Requests are small (the largest, `focus` with a
/// client name, is under 200 bytes); 64 KiB leaves room for any future request and bounds what
/// a client can make the daemon hold per connection.
pub const MAX_REQUEST_LINE: usize = 64 * 1024;

/// Longest reply line the daemon writes and clients read. A snapshot row is about 1 KiB for a
/// busy agent pane (measured: 500 such panes are about 0.6 MiB, see the tests), but a program
/// may report up to 256 subtasks of 2 KiB each in one pane; 16 MiB holds thousands of panes and
/// still bounds a client's memory. A reply that would be longer is replaced by an error reply.
pub const MAX_REPLY_LINE: usize = 16 * 1024 * 1024;

/// Why a line could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// A line longer than the cap (without its newline).
    #[error("{what} line longer than the {cap}-byte cap")]
    TooLong {
        /// `request` or `reply`.
        what: &'static str,
        /// The cap, in bytes.
        cap: usize,
    },
    /// The line is not the JSON expected.
    #[error("{what} line is not valid: {source}")]
    Json {
        /// `request` or `reply`.
        what: &'static str,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// The connection failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl From<FrameError> for io::Error {
    fn from(e: FrameError) -> io::Error {
        match e {
            FrameError::Io(e) => e,
            other => io::Error::new(io::ErrorKind::InvalidData, other),
        }
    }
}

/// Which way a line goes, with its cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// `request` or `reply`, for messages.
    pub what: &'static str,
    /// Longest line, without its newline.
    pub cap: usize,
}

/// Client to daemon.
pub const REQUEST: Frame = Frame {
    what: "request",
    cap: MAX_REQUEST_LINE,
};

/// Daemon to client.
pub const REPLY: Frame = Frame {
    what: "reply",
    cap: MAX_REPLY_LINE,
};

impl Frame {
    fn too_long(self) -> FrameError {
        FrameError::TooLong {
            what: self.what,
            cap: self.cap,
        }
    }

    /// `value` as one line with its newline; [`FrameError::TooLong`] beyond the cap.
    pub fn encode<T: Serialize>(self, value: &T) -> Result<Vec<u8>, FrameError> {
        let mut line = serde_json::to_vec(value).map_err(|source| FrameError::Json {
            what: self.what,
            source,
        })?;
        if line.len() > self.cap {
            return Err(self.too_long());
        }
        line.push(b'\n');
        Ok(line)
    }

    /// Parses one line (without its newline).
    pub fn decode<T: DeserializeOwned>(self, line: &[u8]) -> Result<T, FrameError> {
        serde_json::from_slice(line).map_err(|source| FrameError::Json {
            what: self.what,
            source,
        })
    }
}

/// What [`take`] did with the bytes it was offered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Bytes used (the newline included when one was found).
    pub used: usize,
    /// The line is complete.
    pub done: bool,
}

/// Appends the next bytes of a line from `avail` to `line`, up to and not including a newline.
/// None when `line` would grow beyond `cap` bytes; then nothing is used.
pub fn take(line: &mut Vec<u8>, avail: &[u8], cap: usize) -> Option<Step> {
    let (part, step) = match memchr::memchr(b'\n', avail) {
        Some(i) => (
            &avail[..i],
            Step {
                used: i + 1,
                done: true,
            },
        ),
        None => (
            avail,
            Step {
                used: avail.len(),
                done: false,
            },
        ),
    };
    if line.len() + part.len() > cap {
        return None;
    }
    line.extend_from_slice(part);
    Some(step)
}

/// Reads one line into `line` (cleared first, newline dropped) from a blocking reader. `false`
/// at the end of the stream with nothing read; a last line without a newline counts as a line.
pub fn read_line(
    r: &mut impl io::BufRead,
    frame: Frame,
    line: &mut Vec<u8>,
) -> Result<bool, FrameError> {
    line.clear();
    loop {
        let avail = match r.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        if avail.is_empty() {
            return Ok(!line.is_empty());
        }
        let step = take(line, avail, frame.cap).ok_or_else(|| frame.too_long())?;
        r.consume(step.used);
        if step.done {
            return Ok(true);
        }
    }
}

/// [`read_line`] for a tokio reader.
pub async fn read_line_async(
    r: &mut (impl AsyncBufRead + Unpin),
    frame: Frame,
    line: &mut Vec<u8>,
) -> Result<bool, FrameError> {
    line.clear();
    loop {
        let avail = r.fill_buf().await?;
        if avail.is_empty() {
            return Ok(!line.is_empty());
        }
        let step = take(line, avail, frame.cap).ok_or_else(|| frame.too_long())?;
        r.consume(step.used);
        if step.done {
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests;
