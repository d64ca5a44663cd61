//! The panel's side of the daemon's socket: one blocking connection speaking the socket's
//! JSON lines ([`Request`] out, [`Reply`] in) through [`crate::ipc::framing`], whose cap on line
//! length keeps a broken peer from making the panel grow without bound. A line that does not
//! parse is skipped with a warning.

use std::io::{self, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

use crate::ipc::framing::{self, FrameError};
use crate::ipc::schema::{Reply, Request};

/// One connection to the daemon.
#[derive(Debug)]
pub struct Connection {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    line: Vec<u8>,
}

impl Connection {
    /// Connects to the socket at `path`.
    pub fn connect(path: &Path) -> io::Result<Self> {
        let stream = UnixStream::connect(path)?;
        let writer = stream.try_clone()?;
        Ok(Connection {
            reader: BufReader::new(stream),
            writer,
            line: Vec::new(),
        })
    }

    /// A second handle for writing from another thread.
    pub fn writer(&self) -> io::Result<UnixStream> {
        self.writer.try_clone()
    }

    /// Sends one request line.
    pub fn send(&mut self, req: &Request) -> io::Result<()> {
        send_to(&mut self.writer, req)
    }

    /// The next reply; `None` when the daemon closed the connection. A line longer than
    /// [`framing::MAX_REPLY_LINE`] is an error that says so.
    pub fn next_reply(&mut self) -> io::Result<Option<Reply>> {
        loop {
            if !framing::read_line(&mut self.reader, framing::REPLY, &mut self.line)? {
                return Ok(None);
            }
            if self.line.trim_ascii().is_empty() {
                continue;
            }
            match framing::REPLY.decode::<Reply>(&self.line) {
                Ok(r) => return Ok(Some(r)),
                Err(FrameError::Json { source, .. }) => {
                    tracing::warn!(error = %source, "panel: skipping a reply that does not parse")
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// Writes one request as a JSON line on `w`.
pub fn send_to(w: &mut impl Write, req: &Request) -> io::Result<()> {
    let line = framing::REQUEST.encode(req)?;
    w.write_all(&line)?;
    w.flush()
}
