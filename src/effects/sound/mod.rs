//! The two sounds (S6.1–S6.5): `done` and `waiting`, bundled in the binary and written out to a
//! file at first use so a player gets a path; played by [`player::SoundPlayer`];
//! when they ring is decided by [`trigger`].

pub mod player;
pub mod trigger;

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

const DONE_WAV: &[u8] = include_bytes!("../../../sounds/done.wav");
const WAITING_WAV: &[u8] = include_bytes!("../../../sounds/waiting.wav");

/// The one vocabulary of sounds (the rollup decides, this module plays).
pub use crate::state::Sound;

impl Sound {
    /// Both sounds.
    pub const ALL: [Sound; 2] = [Sound::Done, Sound::Waiting];

    /// The bundled file's name.
    pub fn file_name(self) -> &'static str {
        match self {
            Sound::Done => "done.wav",
            Sound::Waiting => "waiting.wav",
        }
    }

    /// The bundled bytes (16-bit mono WAV).
    pub fn bundled_bytes(self) -> &'static [u8] {
        match self {
            Sound::Done => DONE_WAV,
            Sound::Waiting => WAITING_WAV,
        }
    }

    fn index(self) -> usize {
        match self {
            Sound::Done => 0,
            Sound::Waiting => 1,
        }
    }
}

/// The sound settings of the config file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SoundConfig {
    /// `sound = true|false` (on by default).
    pub enabled: bool,
    /// Another file for `done`.
    pub done_file: Option<PathBuf>,
    /// Another file for `waiting`.
    pub waiting_file: Option<PathBuf>,
}

impl Default for SoundConfig {
    fn default() -> Self {
        SoundConfig {
            enabled: true,
            done_file: None,
            waiting_file: None,
        }
    }
}

impl SoundConfig {
    /// The configured file for `sound`, if any.
    pub fn file_for(&self, sound: Sound) -> Option<&Path> {
        match sound {
            Sound::Done => self.done_file.as_deref(),
            Sound::Waiting => self.waiting_file.as_deref(),
        }
    }
}

/// Where the bundled sounds are written: `$XDG_STATE_HOME/thinkterm/sounds`.
pub fn default_sounds_dir() -> PathBuf {
    crate::paths::state_dir().join("sounds")
}

/// Writes the bundled `sound` into `dir` unless an identical file is already there, and
/// returns its path. Written to a temporary name and renamed, so a player never reads half.
pub fn install_bundled(dir: &Path, sound: Sound) -> io::Result<PathBuf> {
    let path = dir.join(sound.file_name());
    let bytes = sound.bundled_bytes();
    if std::fs::read(&path).map(|b| b == bytes).unwrap_or(false) {
        return Ok(path);
    }
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{}.{}", sound.file_name(), std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, &path)?;
    Ok(path)
}

/// Installs the bundled sound in [`default_sounds_dir`], else in the runtime dir.
pub fn locate_bundled(sound: Sound) -> io::Result<PathBuf> {
    install_bundled(&default_sounds_dir(), sound)
        .or_else(|_| install_bundled(&crate::paths::runtime_dir().join("sounds"), sound))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_sounds_are_small_wavs_and_install_once() {
        for s in Sound::ALL {
            let b = s.bundled_bytes();
            assert!(
                b.starts_with(b"RIFF") && &b[8..12] == b"WAVE",
                "{s:?} is a WAV"
            );
            assert!(b.len() < 32 * 1024, "{s:?} is small");
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let sub = dir.path().join("x/sounds");
        let p = install_bundled(&sub, Sound::Done).expect("installed");
        assert_eq!(std::fs::read(&p).expect("read"), DONE_WAV);
        std::fs::write(&p, b"stale").expect("write");
        let again = install_bundled(&sub, Sound::Done).expect("reinstalled");
        assert_eq!(std::fs::read(again).expect("read"), DONE_WAV);
    }

    #[test]
    fn config_deserialises_with_defaults() {
        let c: SoundConfig = toml::from_str("done_file = \"/x/ding.ogg\"").expect("toml");
        assert!(c.enabled);
        assert_eq!(c.file_for(Sound::Done), Some(Path::new("/x/ding.ogg")));
        assert_eq!(c.file_for(Sound::Waiting), None);
    }
}
