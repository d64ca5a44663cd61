//! The done marks survive a restart of the sidecar (S4.1): the set of done windows is saved as
//! JSON, keyed by the tmux server's identity so that a new server's reused window ids never
//! inherit old marks. Writes are atomic (temp file + rename); a corrupt file is logged and ignored.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::ids::WindowId;

/// Why the state file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    /// Reading, writing or renaming failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a done-marks file.
    #[error("{path}: corrupt state file: {source}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: serde_json::Error,
    },
}

#[derive(Serialize, Deserialize)]
struct DoneFile {
    version: u32,
    server: String,
    done: Vec<WindowId>,
}

/// The server identity key: tmux server pid and its start time (any unit, e.g. unix seconds).
pub fn server_key(server_pid: u32, start_time: u64) -> String {
    format!("{server_pid}-{start_time}")
}

/// Loads the done windows saved for `server`; a missing file or another server's file is empty.
pub fn load(path: &Path, server: &str) -> Result<BTreeSet<WindowId>, PersistError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeSet::new()),
        Err(source) => {
            return Err(PersistError::Io {
                path: path.into(),
                source,
            })
        }
    };
    let file: DoneFile = serde_json::from_str(&text).map_err(|source| PersistError::Corrupt {
        path: path.into(),
        source,
    })?;
    if file.version != 1 || file.server != server {
        return Ok(BTreeSet::new());
    }
    Ok(file.done.into_iter().collect())
}

/// [`load`], logging any error and starting empty.
pub fn load_or_empty(path: &Path, server: &str) -> BTreeSet<WindowId> {
    load(path, server).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "done marks not restored");
        BTreeSet::new()
    })
}

/// Saves the done windows for `server` atomically (creates the parent folder).
pub fn save(path: &Path, server: &str, done: &BTreeSet<WindowId>) -> Result<(), PersistError> {
    let io = |source| PersistError::Io {
        path: path.into(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let file = DoneFile {
        version: 1,
        server: server.into(),
        done: done.iter().copied().collect(),
    };
    let text = serde_json::to_string(&file).map_err(|source| PersistError::Corrupt {
        path: path.into(),
        source,
    })?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp.{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_key_mismatch() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sub/done-x.json");
        let set: BTreeSet<_> = [WindowId(3), WindowId(7)].into();
        save(&path, "100-5", &set).expect("save");
        assert_eq!(load(&path, "100-5").expect("load"), set);
        assert!(load(&path, "100-6").expect("load").is_empty(), "new server");
        assert!(load(&dir.path().join("none.json"), "k")
            .expect("load")
            .is_empty());
    }

    #[test]
    fn corrupt_file_is_an_error_and_loads_empty() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("done.json");
        std::fs::write(&path, "{not json").expect("write");
        assert!(matches!(
            load(&path, "k"),
            Err(PersistError::Corrupt { .. })
        ));
        assert!(load_or_empty(&path, "k").is_empty());
    }
}
