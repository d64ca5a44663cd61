//! The daemon's unix socket and its JSON-lines protocol: one socket per tmux server in
//! `$XDG_RUNTIME_DIR/thinkterm/` (directory 0700, socket 0600), a request line in, reply lines
//! out. [`schema`] holds the vocabulary; this module binds, connects and frames.

pub mod schema;

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
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
    line: String,
}

impl Client {
    /// Connects to the daemon's socket.
    pub async fn connect(path: &Path) -> io::Result<Client> {
        let s = UnixStream::connect(path).await?;
        let (r, w) = s.into_split();
        Ok(Client {
            reader: BufReader::new(r),
            writer: w,
            line: String::new(),
        })
    }

    /// Sends one request.
    pub async fn send(&mut self, req: &Request) -> io::Result<()> {
        let mut line = serde_json::to_string(req).map_err(io::Error::other)?;
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await
    }

    /// Reads the next reply line; `None` at end of stream.
    pub async fn next(&mut self) -> io::Result<Option<Reply>> {
        self.line.clear();
        if self.reader.read_line(&mut self.line).await? == 0 {
            return Ok(None);
        }
        serde_json::from_str(&self.line)
            .map(Some)
            .map_err(io::Error::other)
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

/// Writes one reply as a JSON line.
pub async fn write_reply(w: &mut (impl AsyncWriteExt + Unpin), reply: &Reply) -> io::Result<()> {
    let mut line = serde_json::to_string(reply).map_err(io::Error::other)?;
    line.push('\n');
    w.write_all(line.as_bytes()).await
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
}
