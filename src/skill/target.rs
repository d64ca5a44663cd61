//! Where each agent keeps its user files, found the way the agent itself finds them (checked
//! against Claude Code 2.1.332 and Codex 0.171.0):
//! - Claude Code: `$CLAUDE_CONFIG_DIR`, else `~/.claude`; skills in `skills/<name>/SKILL.md`,
//!   hooks in `settings.json`.
//! - Codex: `$CODEX_HOME` (which Codex resolves to its real path, symbolic links followed), else
//!   `~/.codex` (as it is); skills in `skills/<name>/SKILL.md` (where Codex's own skill-creator
//!   puts them; it also reads `~/.agents/skills`), hooks in `hooks.json`, the record that the
//!   person trusts a hook in `config.toml`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::content::SKILL_NAME;

/// An agent `skill setup` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code.
    Claude,
    /// OpenAI Codex CLI.
    Codex,
}

impl Agent {
    /// Both, in the order they are set up.
    pub const ALL: [Agent; 2] = [Agent::Claude, Agent::Codex];

    /// The product's name.
    pub fn name(self) -> &'static str {
        match self {
            Agent::Claude => "Claude Code",
            Agent::Codex => "Codex",
        }
    }

    /// The variable that moves its folder.
    pub fn home_var(self) -> &'static str {
        match self {
            Agent::Claude => "CLAUDE_CONFIG_DIR",
            Agent::Codex => "CODEX_HOME",
        }
    }
}

/// One agent's folder and the files `skill setup` touches in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Which agent.
    pub agent: Agent,
    /// Its user folder (`~/.claude`, `~/.codex`, or the variable's value).
    pub dir: PathBuf,
    /// The folder came from the agent's variable (not the default under the home folder).
    pub from_var: bool,
}

impl Target {
    /// Finds the agent's folder from the environment (`var`) and the home folder.
    pub fn find(agent: Agent, var: impl Fn(&str) -> Option<OsString>, home: &Path) -> Target {
        let set = var(agent.home_var()).filter(|v| !v.is_empty());
        match (agent, set) {
            (Agent::Claude, Some(v)) => Target {
                agent,
                dir: PathBuf::from(v),
                from_var: true,
            },
            (Agent::Codex, Some(v)) => {
                // Codex keys a hook's trust by the path of its file under the real CODEX_HOME.
                let p = PathBuf::from(v);
                let dir = std::fs::canonicalize(&p).unwrap_or(p);
                Target {
                    agent,
                    dir,
                    from_var: true,
                }
            }
            (Agent::Claude, None) => Target {
                agent,
                dir: home.join(".claude"),
                from_var: false,
            },
            (Agent::Codex, None) => Target {
                agent,
                dir: home.join(".codex"),
                from_var: false,
            },
        }
    }

    /// The skill's folder.
    pub fn skill_dir(&self) -> PathBuf {
        self.dir.join("skills").join(SKILL_NAME)
    }

    /// The skill's `SKILL.md`.
    pub fn skill_file(&self) -> PathBuf {
        self.skill_dir().join("SKILL.md")
    }

    /// The JSON file the hook goes into: Claude Code's `settings.json`, Codex's `hooks.json`.
    pub fn hooks_file(&self) -> PathBuf {
        match self.agent {
            Agent::Claude => self.dir.join("settings.json"),
            Agent::Codex => self.dir.join("hooks.json"),
        }
    }

    /// Codex's `config.toml` (where trust is recorded); None for Claude Code.
    pub fn config_toml(&self) -> Option<PathBuf> {
        (self.agent == Agent::Codex).then(|| self.dir.join("config.toml"))
    }
}

/// The backup of `file` that `skill setup` keeps: `FILE.thinkterm-sidecar.bak` beside it.
pub fn backup_of(file: &Path) -> PathBuf {
    let mut name = file.file_name().map(OsString::from).unwrap_or_default();
    name.push(".thinkterm-sidecar.bak");
    file.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> Option<OsString> {
        None
    }

    #[test]
    fn defaults_are_under_the_home_folder() {
        let home = Path::new("/home/u");
        let c = Target::find(Agent::Claude, none, home);
        assert_eq!(c.dir, Path::new("/home/u/.claude"));
        assert_eq!(
            c.skill_file(),
            Path::new("/home/u/.claude/skills/thinkterm-agents/SKILL.md")
        );
        assert_eq!(c.hooks_file(), Path::new("/home/u/.claude/settings.json"));
        assert_eq!(c.config_toml(), None);
        let x = Target::find(Agent::Codex, none, home);
        assert_eq!(x.hooks_file(), Path::new("/home/u/.codex/hooks.json"));
        assert_eq!(
            x.config_toml().unwrap(),
            Path::new("/home/u/.codex/config.toml")
        );
        assert!(!x.from_var);
    }

    #[test]
    fn the_variables_move_the_folders_and_codex_home_is_resolved() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let var = |k: &str| match k {
            "CLAUDE_CONFIG_DIR" => Some(OsString::from(link.as_os_str())),
            "CODEX_HOME" => Some(OsString::from(link.as_os_str())),
            _ => None,
        };
        let c = Target::find(Agent::Claude, var, Path::new("/home/u"));
        assert_eq!(c.dir, link);
        let x = Target::find(Agent::Codex, var, Path::new("/home/u"));
        assert_eq!(x.dir, real.canonicalize().unwrap());
        assert!(x.from_var);
    }

    #[test]
    fn backups_sit_beside_their_file() {
        assert_eq!(
            backup_of(Path::new("/h/.claude/settings.json")),
            Path::new("/h/.claude/settings.json.thinkterm-sidecar.bak")
        );
    }
}
