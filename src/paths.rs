//! Where the sidecar keeps things (XDG base directories), in one place, and the check that the
//! directory holding the daemon's socket is ours alone.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

fn xdg(var: &str, fallback: &str) -> PathBuf {
    match std::env::var_os(var) {
        Some(v) if !v.is_empty() && PathBuf::from(&v).is_absolute() => PathBuf::from(v),
        _ => home().join(fallback),
    }
}

/// `$XDG_CONFIG_HOME/thinkterm`.
pub fn config_dir() -> PathBuf {
    xdg("XDG_CONFIG_HOME", ".config").join("thinkterm")
}

/// `$XDG_CONFIG_HOME/thinkterm/config.toml`.
pub fn config_file() -> PathBuf {
    config_dir().join("config.toml")
}

/// `$XDG_CONFIG_HOME/thinkterm/agent-detection`: rule overrides.
pub fn rules_dir() -> PathBuf {
    config_dir().join("agent-detection")
}

/// `$XDG_STATE_HOME/thinkterm`.
pub fn state_dir() -> PathBuf {
    xdg("XDG_STATE_HOME", ".local/state").join("thinkterm")
}

/// `$XDG_RUNTIME_DIR/thinkterm` (falls back to `/tmp/thinkterm-UID` like tmux does for its own).
pub fn runtime_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(v) if !v.is_empty() => PathBuf::from(v).join("thinkterm"),
        _ => PathBuf::from(format!("/tmp/thinkterm-{}", uid())),
    }
}

/// The real user id of this process.
pub fn uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// Why a directory is not fit to hold the daemon's socket.
#[derive(Debug, thiserror::Error)]
pub enum PrivateDirError {
    /// The path is a symbolic link (someone may have planted it to point elsewhere).
    #[error(
        "{0}: is a symbolic link, not a directory; refusing to put the socket there (remove it)"
    )]
    Symlink(PathBuf),
    /// The path exists and is not a directory.
    #[error("{0}: exists and is not a directory; refusing to put the socket there (remove it)")]
    NotDirectory(PathBuf),
    /// Another user owns the directory (it could read, replace or fake our socket).
    #[error(
        "{path}: owned by uid {owner}, not by this user (uid {us}); refusing to put the socket \
         there (remove it)"
    )]
    NotOurs {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// This process's uid.
        us: u32,
    },
    /// Creating, opening or changing the directory failed.
    #[error("{0}: {1}")]
    Io(PathBuf, io::Error),
}

/// Creates `dir` (mode 0700) if it is missing and makes sure only this user can use it: it must
/// be a real directory, not a symbolic link, and owned by this uid, else it is refused. An
/// existing directory of ours with a looser mode is set back to 0700 (only this user could have
/// made it so). The checks and the mode change are made on one open file descriptor (opened
/// with `O_NOFOLLOW`), so the directory cannot be swapped between check and change.
///
/// Without `XDG_RUNTIME_DIR` the socket directory is `/tmp/thinkterm-UID`, a name any user can
/// create first: this is what stops another user from owning our socket's directory.
pub fn ensure_private_dir(dir: &Path) -> Result<(), PrivateDirError> {
    let io_err = |e| PrivateDirError::Io(dir.to_path_buf(), e);
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(io_err)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io_err(e)),
    }
    let kind = std::fs::symlink_metadata(dir).map_err(io_err)?.file_type();
    if kind.is_symlink() {
        return Err(PrivateDirError::Symlink(dir.to_path_buf()));
    }
    if !kind.is_dir() {
        return Err(PrivateDirError::NotDirectory(dir.to_path_buf()));
    }
    let handle = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::DIRECTORY).bits() as i32)
        .open(dir)
        .map_err(|e| match e.raw_os_error() {
            // Replaced by a link or a file since the look above.
            Some(n) if n == rustix::io::Errno::LOOP.raw_os_error() => {
                PrivateDirError::Symlink(dir.to_path_buf())
            }
            Some(n) if n == rustix::io::Errno::NOTDIR.raw_os_error() => {
                PrivateDirError::NotDirectory(dir.to_path_buf())
            }
            _ => io_err(e),
        })?;
    let meta = handle.metadata().map_err(io_err)?;
    let us = uid();
    if meta.uid() != us {
        return Err(PrivateDirError::NotOurs {
            path: dir.to_path_buf(),
            owner: meta.uid(),
            us,
        });
    }
    if meta.mode() & 0o7777 != 0o700 {
        handle
            .set_permissions(std::fs::Permissions::from_mode(0o700))
            .map_err(io_err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).expect("stat").mode() & 0o7777
    }

    #[test]
    fn uid_is_the_process_uid() {
        let status = std::fs::read_to_string("/proc/self/status").expect("procfs");
        let line = status
            .lines()
            .find(|l| l.starts_with("Uid:"))
            .expect("Uid line");
        assert_eq!(
            line.split_whitespace().nth(1),
            Some(uid().to_string().as_str())
        );
    }

    #[test]
    fn a_missing_directory_is_made_0700_and_a_loose_one_of_ours_is_tightened() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("run/thinkterm");
        ensure_private_dir(&dir).expect("created");
        assert_eq!(mode(&dir), 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        ensure_private_dir(&dir).expect("ours, fixed");
        assert_eq!(mode(&dir), 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1755)).expect("chmod");
        ensure_private_dir(&dir).expect("ours, fixed");
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn a_symlink_is_refused_even_to_a_directory_of_ours() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let target = tmp.path().join("elsewhere");
        std::fs::create_dir(&target).expect("mkdir");
        let link = tmp.path().join("thinkterm-1000");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let err = ensure_private_dir(&link).expect_err("a link is refused");
        assert!(matches!(err, PrivateDirError::Symlink(_)), "{err}");
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("{}: is a symbolic link", link.display())),
            "{text}"
        );
        // A file is refused too.
        let file = tmp.path().join("file");
        std::fs::write(&file, "").expect("file");
        let err = ensure_private_dir(&file).expect_err("a file is refused");
        assert!(matches!(err, PrivateDirError::NotDirectory(_)), "{err}");
    }

    #[test]
    fn a_directory_owned_by_another_user_is_refused() {
        if uid() != 0 {
            eprintln!("skipped: only root can make a directory owned by another uid");
            return;
        }
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("thinkterm-0");
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        std::os::unix::fs::chown(&dir, Some(4242), Some(4242)).expect("chown");
        let err = ensure_private_dir(&dir).expect_err("not ours");
        assert!(
            matches!(
                err,
                PrivateDirError::NotOurs {
                    owner: 4242,
                    us: 0,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("owned by uid 4242"), "{err}");
        assert_eq!(
            mode(&dir),
            0o777,
            "someone else's directory is left as it is"
        );
    }
}
