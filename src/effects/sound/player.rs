//! Plays a sound with `paplay FILE` or `pw-play FILE`, whichever is found first on PATH (S6.5),
//! spawned with an argv, never a shell. At most one of each sound plays at a time: a sound
//! asked for while its previous one still plays is skipped. Neither player: silence.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

use super::{install_bundled, Sound, SoundConfig};

/// Longest a player may run before it counts as hung.
pub const MAX_PLAY: Duration = Duration::from_secs(15);

/// The players tried, in order.
pub const PLAYERS: [&str; 2] = ["paplay", "pw-play"];

/// The first of [`PLAYERS`] found as an executable file in `path` (a PATH-style list).
pub fn find_player(path: Option<&OsStr>) -> Option<PathBuf> {
    let dirs: Vec<PathBuf> = path
        .map(|p| std::env::split_paths(p).collect())
        .unwrap_or_default();
    PLAYERS.iter().find_map(|name| {
        dirs.iter().map(|d| d.join(name)).find(|c| {
            c.metadata()
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
    })
}

/// The argv that plays `file` with `program`: `[program, file]`, nothing else.
pub fn player_argv(program: &Path, file: &Path) -> Vec<OsString> {
    vec![program.as_os_str().to_owned(), file.as_os_str().to_owned()]
}

/// What the sound player gets from its surroundings.
#[derive(Clone, Debug)]
pub struct SoundSetup {
    /// The PATH to search for a player.
    pub path: Option<OsString>,
    /// `THINKTERM_DISABLE_SOUND` is set.
    pub env_disabled: bool,
    /// Where the bundled sounds are written.
    pub sounds_dir: PathBuf,
}

impl SoundSetup {
    /// Read from this process's environment (PATH, `THINKTERM_DISABLE_SOUND`, XDG dirs).
    pub fn from_env() -> Self {
        SoundSetup {
            path: std::env::var_os("PATH"),
            env_disabled: crate::effects::disabled_by_env(),
            sounds_dir: super::default_sounds_dir(),
        }
    }
}

/// What [`SoundPlayer::play`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Played {
    /// A player was started (its pid).
    Started(u32),
    /// The same sound still plays: skipped.
    Busy,
    /// Sounds are off (config or `THINKTERM_DISABLE_SOUND`).
    Disabled,
    /// Neither player is on PATH.
    NoPlayer,
    /// No file to play, or the player could not be started (logged once).
    Failed,
}

/// Plays the two sounds; owns the running players.
#[derive(Debug)]
pub struct SoundPlayer {
    enabled: bool,
    program: Option<PathBuf>,
    config: SoundConfig,
    sounds_dir: PathBuf,
    files: [Option<PathBuf>; 2],
    running: [Option<Child>; 2],
    /// When each running player started.
    started: [Option<Instant>; 2],
    warned: bool,
    warned_hung: bool,
}

impl SoundPlayer {
    /// A player for `config` in `setup`. Looks for the player once, here.
    pub fn new(config: SoundConfig, setup: SoundSetup) -> Self {
        SoundPlayer {
            enabled: config.enabled && !setup.env_disabled,
            program: find_player(setup.path.as_deref()),
            config,
            sounds_dir: setup.sounds_dir,
            files: [None, None],
            running: [None, None],
            started: [None, None],
            warned: false,
            warned_hung: false,
        }
    }

    /// The player program in use, if any.
    pub fn program(&self) -> Option<&Path> {
        self.program.as_deref()
    }

    /// Whether sounds may play at all.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The file `sound` plays: the configured one if it exists, else the bundled one (written
    /// out on first use).
    pub fn file(&mut self, sound: Sound) -> Option<PathBuf> {
        let i = sound.index();
        if self.files[i].is_none() {
            let configured = self.config.file_for(sound).map(Path::to_path_buf);
            self.files[i] = match configured {
                Some(p) if p.is_file() => Some(p),
                other => {
                    if let Some(p) = other {
                        tracing::warn!(
                            "sound file {} not found; using the bundled sound",
                            p.display()
                        );
                    }
                    match install_bundled(&self.sounds_dir, sound) {
                        Ok(p) => Some(p),
                        Err(e) => {
                            tracing::warn!(
                                "cannot write the bundled sound to {}: {e}",
                                self.sounds_dir.display()
                            );
                            None
                        }
                    }
                }
            };
        }
        self.files[i].clone()
    }

    /// Whether `sound`'s previous player still runs (reaps it when it ended).
    pub fn is_playing(&mut self, sound: Sound) -> bool {
        let slot = &mut self.running[sound.index()];
        match slot.as_mut().map(Child::try_wait) {
            Some(Ok(None)) => true,
            Some(_) => {
                *slot = None;
                false
            }
            None => false,
        }
    }

    /// Reaps players that have ended (their processes would linger as zombies until the next
    /// sound otherwise).
    pub fn reap(&mut self) {
        for s in Sound::ALL {
            let _ = self.is_playing(s);
        }
    }

    /// Plays `sound` unless it is off, has no player, or still plays.
    pub fn play(&mut self, sound: Sound) -> Played {
        self.play_at(sound, Instant::now())
    }

    /// [`SoundPlayer::play`] at `now`. A player still running [`MAX_PLAY`] after it started
    /// hangs (the sounds last a second or two): it is killed and reaped, logged once, and the
    /// sound plays anew; so a hung player never holds a sound for good, and never piles up.
    pub fn play_at(&mut self, sound: Sound, now: Instant) -> Played {
        if !self.enabled {
            return Played::Disabled;
        }
        let Some(program) = self.program.clone() else {
            return Played::NoPlayer;
        };
        if self.is_playing(sound) {
            let i = sound.index();
            let hung =
                self.started[i].is_some_and(|t| now.saturating_duration_since(t) >= MAX_PLAY);
            if !hung {
                return Played::Busy;
            }
            if let Some(mut child) = self.running[i].take() {
                if !std::mem::replace(&mut self.warned_hung, true) {
                    tracing::warn!(
                        "the sound player (pid {}) still ran {MAX_PLAY:?} after it started; stopped it",
                        child.id().unwrap_or(0)
                    );
                }
                let _ = child.start_kill();
                // Reaped off the caller: the kill is delivered at once, the wait is short.
                tokio::spawn(async move {
                    let _ = child.wait().await;
                });
            }
        }
        let Some(file) = self.file(sound) else {
            return Played::Failed;
        };
        let argv = player_argv(&program, &file);
        let spawned = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        match spawned {
            Ok(child) => {
                let pid = child.id().unwrap_or(0);
                self.running[sound.index()] = Some(child);
                self.started[sound.index()] = Some(now);
                Played::Started(pid)
            }
            Err(e) => {
                if !std::mem::replace(&mut self.warned, true) {
                    tracing::warn!("cannot start {}: {e}", program.display());
                }
                Played::Failed
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exe(dir: &Path, name: &str) {
        let p = dir.join(name);
        std::fs::write(&p, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    #[test]
    fn paplay_first_then_pw_play_then_nothing() {
        let a = tempfile::tempdir().expect("tempdir");
        let b = tempfile::tempdir().expect("tempdir");
        let path = std::env::join_paths([a.path(), b.path()]).expect("path");
        assert_eq!(find_player(Some(&path)), None);
        exe(a.path(), "pw-play");
        assert_eq!(find_player(Some(&path)), Some(a.path().join("pw-play")));
        exe(b.path(), "paplay");
        assert_eq!(find_player(Some(&path)), Some(b.path().join("paplay")));
        // Not executable: not a player.
        let c = tempfile::tempdir().expect("tempdir");
        std::fs::write(c.path().join("paplay"), "").expect("write");
        assert_eq!(find_player(Some(c.path().as_os_str())), None);
        assert_eq!(find_player(None), None);
    }

    #[test]
    fn argv_is_program_and_file_only() {
        let argv = player_argv(
            Path::new("/usr/bin/paplay"),
            Path::new("/s/done wav;rm -rf"),
        );
        assert_eq!(
            argv,
            [
                OsString::from("/usr/bin/paplay"),
                OsString::from("/s/done wav;rm -rf")
            ]
        );
    }
}
