//! The daemon's unix socket and its JSON-lines protocol: one socket per tmux server in
//! `$XDG_RUNTIME_DIR/thinkterm/` (directory 0700, socket 0600), a request line in, reply lines
//! out. [`schema`] holds the vocabulary, [`framing`] the lines and their caps; this module binds
//! and connects.

pub mod framing;
pub mod schema;

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use crate::tmux::server::ServerAddress;
use schema::{Reply, Request};

/// The socket of the daemon serving `addr`.
pub fn socket_path(addr: &ServerAddress) -> PathBuf {
    crate::paths::runtime_dir().join(format!("{}.sock", addr.key()))
}

/// Why binding failed.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// Another daemon answers on the socket.
    #[error("another thinkterm-sidecar already serves this tmux server (socket {0})")]
    InUse(PathBuf),
    /// The socket's directory is not ours alone.
    #[error("unsafe socket directory: {0}")]
    Directory(#[from] crate::paths::PrivateDirError),
    /// Filesystem trouble.
    #[error("cannot create socket {0}: {1}")]
    Io(PathBuf, io::Error),
}

/// Binds the socket: creates its directory (0700) or checks that an existing one is ours alone
/// ([`crate::paths::ensure_private_dir`]), replaces a stale socket, refuses a live one.
pub fn bind(path: &Path) -> Result<UnixListener, BindError> {
    let err = |e| BindError::Io(path.to_path_buf(), e);
    if let Some(dir) = path.parent() {
        crate::paths::ensure_private_dir(dir)?;
    }
    if path.exists() {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(BindError::InUse(path.to_path_buf()));
        }
        std::fs::remove_file(path).map_err(err)?;
    }
    let l = UnixListener::bind(path).map_err(err)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(err)?;
    Ok(l)
}

/// A client connection to the daemon.
pub struct Client {
    reader: BufReader<tokio::net::unix::OwnedReadHalf>,
    writer: tokio::net::unix::OwnedWriteHalf,
    line: Vec<u8>,
}

impl Client {
    /// Connects to the daemon's socket.
    pub async fn connect(path: &Path) -> io::Result<Client> {
        let s = UnixStream::connect(path).await?;
        let (r, w) = s.into_split();
        Ok(Client {
            reader: BufReader::new(r),
            writer: w,
            line: Vec::new(),
        })
    }

    /// Sends one request.
    pub async fn send(&mut self, req: &Request) -> io::Result<()> {
        let line = framing::REQUEST.encode(req)?;
        self.writer.write_all(&line).await
    }

    /// Reads the next reply line; `None` at end of stream. A line longer than
    /// [`framing::MAX_REPLY_LINE`] is an error that says so.
    pub async fn next(&mut self) -> io::Result<Option<Reply>> {
        if !framing::read_line_async(&mut self.reader, framing::REPLY, &mut self.line).await? {
            return Ok(None);
        }
        Ok(Some(framing::REPLY.decode(&self.line)?))
    }

    /// Sends a request and reads one reply.
    pub async fn request(&mut self, req: &Request) -> io::Result<Reply> {
        self.send(req).await?;
        self.next().await?.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the daemon closed the connection",
            )
        })
    }
}

/// Writes one reply as a JSON line. A reply longer than [`framing::MAX_REPLY_LINE`] (which no
/// client would read) goes out as an error reply that says how long it was.
pub async fn write_reply(w: &mut (impl AsyncWriteExt + Unpin), reply: &Reply) -> io::Result<()> {
    let line = match framing::REPLY.encode(reply) {
        Err(e @ framing::FrameError::TooLong { .. }) => framing::REPLY.encode(&Reply::Error {
            message: format!("the daemon could not send its answer: {e}"),
        })?,
        other => other?,
    };
    w.write_all(&line).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bind_refuses_a_planted_directory_and_tightens_its_own() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).expect("mkdir");
        let planted = tmp.path().join("planted");
        std::os::unix::fs::symlink(&elsewhere, &planted).expect("symlink");
        let err = bind(&planted.join("x.sock")).expect_err("refused");
        assert!(matches!(err, BindError::Directory(_)), "{err}");
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        assert!(!elsewhere.join("x.sock").exists());

        let ours = tmp.path().join("ours");
        std::fs::create_dir(&ours).expect("mkdir");
        std::fs::set_permissions(&ours, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let _l = bind(&ours.join("x.sock")).expect("bound");
        let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode(&ours), 0o700);
        assert_eq!(mode(&ours.join("x.sock")), 0o600);
    }

    /// A reply line beyond the cap is an error that says so, not an endless buffer; a reply too
    /// long to send goes out as an error reply instead.
    #[tokio::test]
    async fn replies_beyond_the_cap_are_errors_on_both_sides() {
        use tokio::io::AsyncReadExt;
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("s.sock");
        let listener = UnixListener::bind(&path).expect("bind");
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.expect("accept");
            let mut req = [0u8; 64];
            let _ = s.read(&mut req).await;
            let big = vec![b'x'; framing::MAX_REPLY_LINE + 1];
            let _ = s.write_all(&big).await;
        });
        let mut c = Client::connect(&path).await.expect("connect");
        let e = c.request(&Request::Agents).await.expect_err("too long");
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert_eq!(
            e.to_string(),
            format!(
                "reply line longer than the {}-byte cap",
                framing::MAX_REPLY_LINE
            )
        );
        server.await.expect("server");

        let mut out = Vec::new();
        let huge = Reply::Done {
            message: "y".repeat(framing::MAX_REPLY_LINE),
        };
        write_reply(&mut out, &huge).await.expect("written");
        let line = std::str::from_utf8(&out).expect("utf-8");
        assert!(line.ends_with('\n') && line.len() < 200, "{line}");
        let back: Reply = serde_json::from_str(line).expect("json");
        assert!(
            matches!(&back, Reply::Error { message } if message.contains("reply line longer than")),
            "{back:?}"
        );
    }
}
