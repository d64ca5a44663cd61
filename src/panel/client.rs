//! The panel's side of the daemon's socket: one connection speaking JSON lines
//! ([`Request`] out, [`Reply`] in), with a cap on line length so a broken peer cannot make the
//! panel grow without bound. A line that does not parse is skipped with a warning.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

use crate::ipc::schema::{Reply, Request};

/// Longest reply line accepted (a snapshot of a very large server fits easily).
pub const MAX_LINE: u64 = 16 * 1024 * 1024;

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

    /// The next reply; `None` when the daemon closed the connection.
    pub fn next_reply(&mut self) -> io::Result<Option<Reply>> {
        loop {
            self.line.clear();
            let n = (&mut self.reader)
                .take(MAX_LINE)
                .read_until(b'\n', &mut self.line)?;
            if n == 0 {
                return Ok(None);
            }
            if self.line.last() != Some(&b'\n') && n as u64 == MAX_LINE {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "reply line too long",
                ));
            }
            let text = String::from_utf8_lossy(&self.line);
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            match serde_json::from_str::<Reply>(text) {
                Ok(r) => return Ok(Some(r)),
                Err(e) => tracing::warn!(error = %e, "panel: skipping a reply that does not parse"),
            }
        }
    }
}

/// Writes one request as a JSON line on `w`.
pub fn send_to(w: &mut impl Write, req: &Request) -> io::Result<()> {
    let mut line = serde_json::to_vec(req).map_err(io::Error::other)?;
    line.push(b'\n');
    w.write_all(&line)?;
    w.flush()
}
