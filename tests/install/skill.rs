//! `skill setup` and `skill hook` from the command line: setup on a temporary home (dry run
//! writes nothing, a second run changes nothing, `--uninstall` gives back every byte, a broken
//! settings file stops it before anything is written), and the hook against a real daemon on a
//! private tmux server (its pane and the agent beside it; plainly, no daemon). The real Claude
//! Code and Codex reading the skill and the hook: `scripts/skill-real-agents.sh`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{fixtures, Daemon, Env, Tmux};

const BIN: &str = env!("CARGO_BIN_EXE_thinkterm-sidecar");

const SETTINGS: &str = "{\n    \"model\": \"opus\",\n    \"hooks\": { \"Stop\": [ { \"hooks\": [ { \"type\": \"command\", \"command\": \"true\" } ] } ] }\n}";

fn setup(home: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(["skill", "setup"])
        .args(args)
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Every file and folder under `dir`, with the files' bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p.clone());
                out.push((p, None));
            } else {
                out.push((p.clone(), Some(std::fs::read(&p).unwrap())));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn skill_setup_dry_run_twice_and_uninstall_from_the_command_line() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    std::fs::create_dir_all(h.join(".claude")).unwrap();
    std::fs::create_dir_all(h.join(".codex")).unwrap();
    std::fs::write(h.join(".claude/settings.json"), SETTINGS).unwrap();
    let before = snapshot(h);

    let out = setup(h, &["--dry-run"]);
    let said = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        said.contains(&format!(
            "would update {}: add the SessionStart hook",
            h.join(".claude/settings.json").display()
        )),
        "{said}"
    );
    assert!(said.ends_with("Dry run: nothing was written.\n"), "{said}");
    assert_eq!(snapshot(h), before);

    let out = setup(h, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(h.join(".claude/settings.json")).unwrap())
            .unwrap();
    let cmd = settings["hooks"]["SessionStart"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(cmd.ends_with("thinkterm-sidecar skill hook"), "{cmd}");
    assert_eq!(settings["hooks"]["Stop"][0]["hooks"][0]["command"], "true");
    assert!(h.join(".claude/skills/thinkterm-agents/SKILL.md").is_file());
    assert!(h.join(".codex/skills/thinkterm-agents/SKILL.md").is_file());
    assert!(std::fs::read_to_string(h.join(".codex/config.toml"))
        .unwrap()
        .contains("trusted_hash = \"sha256:"));
    // The hook's command runs (through a shell, as the agents run it).
    let hook = Command::new("sh")
        .args(["-c", &cmd])
        .env_remove("TMUX_PANE")
        .output()
        .unwrap();
    assert!(hook.status.success());
    assert!(
        text(&hook.stdout).contains("does not run inside tmux"),
        "{}",
        text(&hook.stdout)
    );

    let installed = snapshot(h);
    let out = setup(h, &[]);
    assert_eq!(
        text(&out.stdout).matches("nothing to change").count(),
        2,
        "{}",
        text(&out.stdout)
    );
    assert_eq!(snapshot(h), installed);

    let out = setup(h, &["--uninstall"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(snapshot(h), before, "{}", text(&out.stdout));
}

#[test]
fn skill_setup_stops_on_a_broken_settings_file_before_writing_anything() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    std::fs::create_dir_all(h.join(".claude")).unwrap();
    std::fs::create_dir_all(h.join(".codex")).unwrap();
    std::fs::write(h.join(".codex/hooks.json"), "{\"hooks\": ").unwrap();
    let before = snapshot(h);
    let out = setup(h, &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("hooks.json: not valid JSON"), "{err}");
    // Claude Code's part was fine, and is not written either.
    assert_eq!(snapshot(h), before);
    // Only Codex named, on a home without its folder: it is set up all the same.
    std::fs::remove_file(h.join(".codex/hooks.json")).unwrap();
    std::fs::remove_dir(h.join(".codex")).unwrap();
    let out = setup(h, &["--agent", "codex"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(h.join(".codex/hooks.json").is_file());
    assert!(!h.join(".claude/settings.json").exists());
}

#[test]
fn skill_hook_names_its_pane_and_the_agents_beside_it() {
    let mut tmux = Tmux::new();
    let env = Env::new();
    let me = tmux.new_session("main", None);
    let agent = crate::support::drawing_agent(&env, "claude");
    let other = tmux.new_window("main", Some(&agent.display().to_string()));
    let mut d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    tmux.type_line(
        &other,
        &fixtures::path("claude-code/2.1.328/001-idle.txt")
            .display()
            .to_string(),
    );
    env.wait_row(&tmux, &other, "state", "idle", 10);

    let hook = |pane: &str| {
        let out = env
            .sidecar(&tmux, &["skill", "hook"])
            .env("TMUX_PANE", pane)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let said = hook(&me);
    assert!(
        said.starts_with(&format!(
            "thinkterm-sidecar: you are in tmux pane {me} (session \"main\", window 0 "
        )),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "- {other}: claude idle, session \"main\" window 1 "
        )),
        "{said}"
    );
    // From the agent's own pane: it is not listed as another.
    let said = hook(&other);
    assert!(
        said.contains("No other agent runs in this tmux server's panes now."),
        "{said}"
    );

    d.stop();
    let said = hook(&me);
    assert!(
        said.contains("No thinkterm-sidecar daemon runs for this tmux server"),
        "{said}"
    );
}
