//! Shell completions and man pages, generated from the clap definitions in [`crate::cli`] and
//! never written by hand: `thinkterm-sidecar completions bash|zsh|fish` and
//! `thinkterm-sidecar man [--out DIR]`. `packaging/build-deb.sh` writes them into the package.

use std::io::Write;
use std::path::Path;

use clap::CommandFactory as _;

use crate::cli::Cli;

/// The end of `--help` and the man page's last section: files, environment, exit codes.
pub const AFTER_HELP: &str = "\
Files:
  $XDG_CONFIG_HOME/thinkterm/config.toml            settings (`thinkterm-sidecar config` lists them)
  $XDG_CONFIG_HOME/thinkterm/agent-detection/*.toml rule files (docs/rules.md)
  $XDG_RUNTIME_DIR/thinkterm/NAME-HASH.sock         the daemon's socket, one per tmux server
  $XDG_STATE_HOME/thinkterm/daemon-NAME-HASH.log    the log of a daemon started with --detach

Environment:
  THINKTERM_LOG            log filter: error, warn, info, debug, trace (or a tracing filter)
  THINKTERM_<KEY>          any config key (THINKTERM_SOUND=0)
  THINKTERM_DISABLE_SOUND  no sounds and no desktop notifications
  TMUX                     the tmux server to use when neither -L nor -S is given

Exit status: 0 on success; 1 on failure (doctor: something is wrong); 2 when tmux is missing.

First run: `thinkterm-sidecar doctor` says what is missing and how to fix it.";

/// Writes the completion script for `shell` (made whole first: clap_complete panics when its
/// writer fails, e.g. a closed pipe).
pub fn completions(shell: clap_complete::Shell, out: &mut dyn Write) -> std::io::Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "thinkterm-sidecar", &mut script);
    out.write_all(&script)
}

/// Writes the main man page (`thinkterm-sidecar.1`).
pub fn man(out: &mut dyn Write) -> std::io::Result<()> {
    clap_mangen::Man::new(Cli::command()).render(out)
}

/// Writes the main page and one page per visible subcommand into `dir`.
pub fn man_pages(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    clap_mangen::generate_to(Cli::command(), dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_name_every_subcommand() {
        let mut out = Vec::new();
        completions(clap_complete::Shell::Bash, &mut out).expect("written");
        let text = String::from_utf8(out).expect("utf-8");
        for sub in [
            "run",
            "agents",
            "doctor",
            "panel",
            "rules",
            "completions",
            "man",
        ] {
            assert!(text.contains(sub), "{sub} missing from bash completions");
        }
        assert!(text.contains("complete -F _thinkterm__sidecar"), "{text}");
    }

    #[test]
    fn man_pages_cover_the_subcommands() {
        let mut out = Vec::new();
        man(&mut out).expect("render");
        let page = String::from_utf8(out).expect("utf-8");
        assert!(
            page.starts_with(".ie") || page.contains(".TH thinkterm-sidecar"),
            "{page}"
        );
        assert!(
            page.contains("THINKTERM_LOG"),
            "the files and environment section"
        );
        let dir = tempfile::tempdir().expect("tempdir");
        man_pages(dir.path()).expect("pages");
        for f in [
            "thinkterm-sidecar.1",
            "thinkterm-sidecar-doctor.1",
            "thinkterm-sidecar-run.1",
        ] {
            assert!(dir.path().join(f).exists(), "{f}");
        }
    }
}
