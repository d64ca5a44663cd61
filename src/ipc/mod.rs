//! The daemon's unix socket and its JSON-lines protocol: one socket per tmux server in
//! `$XDG_RUNTIME_DIR/thinkterm/` (directory 0700, socket 0600, and only peers of our own uid:
//! [`peer`]), a request line in, reply lines out. [`schema`] holds the vocabulary, [`framing`]
//! the lines and their caps; this module binds and connects.

pub mod framing;
pub mod peer;
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
    write_tagged(w, None, reply).await
}

/// [`write_reply`] with the id of the request it answers, when that request carried one.
pub async fn write_tagged(
    w: &mut (impl AsyncWriteExt + Unpin),
    id: Option<u64>,
    reply: &Reply,
) -> io::Result<()> {
    let line = match encode_tagged(id, reply) {
        Err(e @ framing::FrameError::TooLong { .. }) => encode_tagged(
            id,
            &Reply::Error {
                message: format!("the daemon could not send its answer: {e}"),
            },
        )?,
        other => other?,
    };
    w.write_all(&line).await
}

// Requests may carry an `"id"` (a number) beside their `"request"`; every reply to such a
// request carries the same `"id"`. A connection that mixes a stream with requests (a machine
// link: `follow`, then `focus`…) tells the replies apart that way. Without an id nothing
// changes: the protocol stays what it was.

/// The `"id"` member of a request or reply object.
const ID: &str = "id";

fn with_id(value: serde_json::Value, id: Option<u64>) -> serde_json::Value {
    match (value, id) {
        (serde_json::Value::Object(mut m), Some(id)) => {
            m.insert(ID.into(), id.into());
            serde_json::Value::Object(m)
        }
        (v, _) => v,
    }
}

fn take_id(value: &mut serde_json::Value) -> Option<u64> {
    value
        .as_object_mut()
        .and_then(|m| m.remove(ID))
        .and_then(|v| v.as_u64())
}

/// A request as one line, with its id when it has one.
pub fn encode_request(id: Option<u64>, request: &Request) -> Result<Vec<u8>, framing::FrameError> {
    let v = serde_json::to_value(request).map_err(|source| framing::FrameError::Json {
        what: framing::REQUEST.what,
        source,
    })?;
    framing::REQUEST.encode(&with_id(v, id))
}

/// A request line's id (if any) and request.
pub fn decode_request(line: &[u8]) -> Result<(Option<u64>, Request), framing::FrameError> {
    let mut v: serde_json::Value = framing::REQUEST.decode(line)?;
    let id = take_id(&mut v);
    let request = serde_json::from_value(v).map_err(|source| framing::FrameError::Json {
        what: framing::REQUEST.what,
        source,
    })?;
    Ok((id, request))
}

/// A reply as one line, with the id of its request when that had one.
pub fn encode_tagged(id: Option<u64>, reply: &Reply) -> Result<Vec<u8>, framing::FrameError> {
    let v = serde_json::to_value(reply).map_err(|source| framing::FrameError::Json {
        what: framing::REPLY.what,
        source,
    })?;
    framing::REPLY.encode(&with_id(v, id))
}

/// A reply line's id (if any) and reply.
pub fn decode_tagged(line: &[u8]) -> Result<(Option<u64>, Reply), framing::FrameError> {
    let mut v: serde_json::Value = framing::REPLY.decode(line)?;
    let id = take_id(&mut v);
    let reply = serde_json::from_value(v).map_err(|source| framing::FrameError::Json {
        what: framing::REPLY.what,
        source,
    })?;
    Ok((id, reply))
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_travel_beside_requests_and_replies_and_are_optional() {
        use super::*;
        use crate::ids::PaneId;
        let focus = Request::Focus {
            pane: PaneId(3),
            client: None,
            machine: None,
        };
        let line = encode_request(Some(7), &focus).expect("encodes");
        let text = String::from_utf8_lossy(&line);
        assert!(
            text.contains("\"id\":7") && text.contains("\"request\":\"focus\""),
            "{text}"
        );
        let (id, back) = decode_request(&line[..line.len() - 1]).expect("decodes");
        assert_eq!((id, back), (Some(7), focus.clone()));
        // Without an id: the line an older client sends.
        let (id, _) = decode_request(br#"{"request":"focus","pane":"%3"}"#).expect("old form");
        assert_eq!(id, None);
        let done = Reply::Done {
            message: "ok".into(),
        };
        let line = encode_tagged(Some(7), &done).expect("encodes");
        assert_eq!(
            decode_tagged(&line[..line.len() - 1]).expect("decodes"),
            (Some(7), done.clone())
        );
        let plain = encode_tagged(None, &done).expect("encodes");
        assert!(!String::from_utf8_lossy(&plain).contains("\"id\""));
    }

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
