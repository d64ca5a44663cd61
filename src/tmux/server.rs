//! Which tmux server to watch, found the way tmux itself finds it: `-S PATH`, `-L NAME`
//! (under `$TMUX_TMPDIR` or `/tmp`, in `tmux-UID/`), `$TMUX`, then the default socket.

use std::path::{Path, PathBuf};

/// How the user named the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerChoice {
    /// `-S PATH`.
    Path(PathBuf),
    /// `-L NAME`.
    Name(String),
    /// Neither: `$TMUX`, then `default`.
    Default,
}

/// A resolved tmux server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerAddress {
    /// The socket path.
    pub socket: PathBuf,
}

impl ServerAddress {
    /// Resolves the choice against the environment.
    pub fn resolve(choice: &ServerChoice) -> ServerAddress {
        let socket = match choice {
            ServerChoice::Path(p) => p.clone(),
            ServerChoice::Name(n) => socket_dir().join(n),
            ServerChoice::Default => match std::env::var("TMUX") {
                Ok(t) if !t.is_empty() => PathBuf::from(t.split(',').next().unwrap_or(&t)),
                _ => socket_dir().join("default"),
            },
        };
        ServerAddress { socket }
    }

    /// The arguments that make a `tmux` command talk to this server.
    pub fn tmux_args(&self) -> Vec<String> {
        vec!["-S".into(), self.socket.display().to_string()]
    }

    /// Whether a server listens on the socket (a connect, no process spawned). Non-blocking: a
    /// stopped server whose backlog is full counts as alive instead of holding the caller.
    pub fn is_alive(&self) -> bool {
        use rustix::io::Errno;
        use rustix::net::{connect, socket_with, AddressFamily, SocketAddrUnix, SocketFlags};
        let Ok(fd) = socket_with(
            AddressFamily::UNIX,
            rustix::net::SocketType::STREAM,
            SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
            None,
        ) else {
            return false;
        };
        let Ok(addr) = SocketAddrUnix::new(self.socket.as_path()) else {
            return false;
        };
        match connect(&fd, &addr) {
            Ok(()) => true,
            Err(e) => e == Errno::AGAIN || e == Errno::INPROGRESS,
        }
    }

    /// A short, stable, file-name-safe key for this server: `NAME-HASH`.
    pub fn key(&self) -> String {
        let name: String = self
            .socket
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .take(32)
            .collect();
        format!(
            "{name}-{:08x}",
            fnv1a(self.socket.as_os_str().as_encoded_bytes()) as u32
        )
    }
}

fn socket_dir() -> PathBuf {
    let base = match std::env::var_os("TMUX_TMPDIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from("/tmp"),
    };
    base.join(format!("tmux-{}", crate::paths::uid()))
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Finds `tmux` on PATH.
pub fn find_tmux() -> Option<PathBuf> {
    find_on_path("tmux")
}

/// Finds an executable on `$PATH`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listening_socket_is_alive_and_a_stale_one_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sock");
        let addr = ServerAddress {
            socket: path.clone(),
        };
        assert!(!addr.is_alive(), "no socket");
        let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
        assert!(addr.is_alive());
        drop(listener);
        assert!(!addr.is_alive(), "a socket file nobody listens on");
    }

    #[test]
    fn explicit_path_wins_and_keys_are_stable() {
        let a = ServerAddress::resolve(&ServerChoice::Path("/tmp/x/sock".into()));
        assert_eq!(a.socket, PathBuf::from("/tmp/x/sock"));
        assert_eq!(a.key(), a.clone().key());
        assert!(a.key().starts_with("sock-"));
        let b = ServerAddress::resolve(&ServerChoice::Path("/tmp/y/sock".into()));
        assert_ne!(a.key(), b.key());
        let n = ServerAddress::resolve(&ServerChoice::Name("evals".into()));
        assert!(n.socket.ends_with("evals"));
        assert!(n.socket.to_string_lossy().contains("tmux-"));
    }
}
