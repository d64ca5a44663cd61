//! `skill setup` on temporary home folders: merging into the person's files, running twice,
//! `--uninstall` giving back the exact bytes, and the cases where it must not.

use std::path::{Path, PathBuf};

use super::apply::{apply, describe, read_file};
use super::content::{hook_command, skill_text, SKILL_DESCRIPTION, SKILL_NAME};
use super::plan::{self, Backup, Section};
use super::target::{backup_of, Agent, Target};

const BIN: &str = "/usr/bin/thinkterm-sidecar";

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let h = Home {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(h.path(".claude")).unwrap();
        std::fs::create_dir_all(h.path(".codex")).unwrap();
        h
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn write(&self, p: &str, text: &str) {
        std::fs::write(self.path(p), text).unwrap();
    }

    fn read(&self, p: &str) -> String {
        std::fs::read_to_string(self.path(p)).unwrap()
    }

    fn targets(&self) -> Vec<Target> {
        Agent::ALL
            .iter()
            .map(|a| Target::find(*a, |_| None, self.dir.path()))
            .collect()
    }

    fn plan(&self, uninstall: bool, bin: &str) -> Vec<Section> {
        self.targets()
            .iter()
            .map(|t| {
                if uninstall {
                    plan::uninstall(t, Path::new(bin), &read_file).unwrap()
                } else {
                    plan::install(t, Path::new(bin), &read_file).unwrap()
                }
            })
            .collect()
    }

    fn run(&self, uninstall: bool, bin: &str) -> Vec<Section> {
        let plan = self.plan(uninstall, bin);
        for s in &plan {
            apply(s).unwrap();
        }
        plan
    }

    /// Every file under the home folder with its bytes.
    fn snapshot(&self) -> Vec<(PathBuf, Vec<u8>)> {
        fn walk(d: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
            let mut es: Vec<_> = std::fs::read_dir(d).unwrap().flatten().collect();
            es.sort_by_key(|e| e.path());
            for e in es {
                let p = e.path();
                if p.is_dir() {
                    out.push((p.clone(), Vec::new()));
                    walk(&p, out);
                } else {
                    out.push((p.clone(), std::fs::read(&p).unwrap()));
                }
            }
        }
        let mut out = Vec::new();
        walk(self.dir.path(), &mut out);
        out
    }
}

fn changes(plan: &[Section]) -> usize {
    plan.iter().map(|s| s.changes.len()).sum()
}

/// A person's settings, formatted their way, with hooks of their own.
const CLAUDE_SETTINGS: &str = r#"{
    "model": "opus",
    "hooks": {
        "SessionStart": [
            { "matcher": "startup", "hooks": [ { "type": "command", "command": "echo mine" } ] }
        ],
        "Stop": [ { "hooks": [ { "type": "command", "command": "notify-send done" } ] } ]
    },
    "permissions": { "allow": ["Bash(ls:*)"] }
}"#;

const CODEX_CONFIG: &str =
    "# my settings\nmodel = \"gpt-5\"  # fast\n\n[projects.\"/src\"]\ntrust_level = \"trusted\"\n";

#[test]
fn a_fresh_home_gets_the_skill_the_hook_and_the_trust() {
    let h = Home::new();
    let plan = h.run(false, BIN);
    assert_eq!(changes(&plan), 5, "{}", describe(&plan, true));
    for dir in [".claude", ".codex"] {
        let skill = h.read(&format!("{dir}/skills/{SKILL_NAME}/SKILL.md"));
        assert_eq!(skill, skill_text(Path::new(BIN)));
        assert!(skill.contains(SKILL_DESCRIPTION));
    }
    let settings: serde_json::Value =
        serde_json::from_str(&h.read(".claude/settings.json")).unwrap();
    assert_eq!(
        settings,
        serde_json::json!({"hooks": {"SessionStart": [{"hooks": [
            {"type": "command", "command": hook_command(Path::new(BIN)), "timeout": 10}]}]}})
    );
    assert_eq!(h.read(".codex/hooks.json"), h.read(".claude/settings.json"));
    let config = h.read(".codex/config.toml");
    let key = format!(
        "{}:session_start:0:0",
        h.path(".codex/hooks.json").display()
    );
    assert!(
        config.starts_with(&format!(
            "[hooks.state.\"{key}\"]\ntrusted_hash = \"sha256:"
        )),
        "{config}"
    );
    // Nothing existed before: no copies were kept.
    assert!(plan
        .iter()
        .flat_map(|s| &s.changes)
        .all(|c| c.backup == Backup::Keep));
    assert!(!backup_of(&h.path(".claude/settings.json")).exists());
}

#[test]
fn running_twice_changes_nothing() {
    let h = Home::new();
    h.write(".claude/settings.json", CLAUDE_SETTINGS);
    h.write(".codex/config.toml", CODEX_CONFIG);
    h.run(false, BIN);
    let after_first = h.snapshot();
    let second = h.plan(false, BIN);
    assert_eq!(changes(&second), 0, "{}", describe(&second, true));
    assert!(describe(&second, true).contains("nothing to change"));
    for s in &second {
        apply(s).unwrap();
    }
    assert_eq!(h.snapshot(), after_first);
}

#[test]
fn the_persons_keys_and_hooks_stay_and_a_copy_is_kept() {
    let h = Home::new();
    h.write(".claude/settings.json", CLAUDE_SETTINGS);
    h.write(".codex/config.toml", CODEX_CONFIG);
    h.run(false, BIN);
    let settings = h.read(".claude/settings.json");
    let v: serde_json::Value = serde_json::from_str(&settings).unwrap();
    assert_eq!(v["model"], "opus");
    assert_eq!(v["permissions"]["allow"][0], "Bash(ls:*)");
    assert_eq!(
        v["hooks"]["Stop"][0]["hooks"][0]["command"],
        "notify-send done"
    );
    assert_eq!(
        v["hooks"]["SessionStart"][0]["hooks"][0]["command"],
        "echo mine"
    );
    assert_eq!(
        v["hooks"]["SessionStart"][1]["hooks"][0]["command"],
        hook_command(Path::new(BIN))
    );
    // Key order as the person had it.
    let order: Vec<usize> = ["\"model\"", "\"hooks\"", "\"permissions\""]
        .iter()
        .map(|k| settings.find(k).unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{settings}");
    assert_eq!(
        h.read(".claude/settings.json.thinkterm-sidecar.bak"),
        CLAUDE_SETTINGS
    );
    let config = h.read(".codex/config.toml");
    assert!(config.starts_with(CODEX_CONFIG), "{config}");
    assert_eq!(
        h.read(".codex/config.toml.thinkterm-sidecar.bak"),
        CODEX_CONFIG
    );
}

#[test]
fn uninstall_gives_back_the_exact_bytes() {
    let h = Home::new();
    h.write(".claude/settings.json", CLAUDE_SETTINGS);
    h.write(".codex/config.toml", CODEX_CONFIG);
    let before = h.snapshot();
    h.run(false, BIN);
    assert_ne!(h.snapshot(), before);
    let plan = h.run(true, BIN);
    let text = describe(&plan, false);
    assert!(text.contains("byte for byte"), "{text}");
    assert_eq!(h.snapshot(), before, "{text}");
    // And again: nothing left to do.
    assert_eq!(changes(&h.plan(true, BIN)), 0);
}

#[test]
fn uninstall_after_a_fresh_install_leaves_the_folders_as_they_were() {
    let h = Home::new();
    let before = h.snapshot();
    h.run(false, BIN);
    let plan = h.run(true, BIN);
    assert!(describe(&plan, false).contains("remove the file setup created"));
    assert_eq!(h.snapshot(), before);
}

#[test]
fn uninstall_after_other_changes_removes_only_ours() {
    let h = Home::new();
    h.write(".claude/settings.json", CLAUDE_SETTINGS);
    h.write(".codex/config.toml", CODEX_CONFIG);
    h.run(false, BIN);
    // Claude Code saves a setting; Codex records something of its own.
    let mut v: serde_json::Value = serde_json::from_str(&h.read(".claude/settings.json")).unwrap();
    v["theme"] = "dark".into();
    h.write(
        ".claude/settings.json",
        &serde_json::to_string_pretty(&v).unwrap(),
    );
    let config = h.read(".codex/config.toml") + "\n[tui]\nscreen_reader_detection_done = true\n";
    h.write(".codex/config.toml", &config);

    let plan = h.run(true, BIN);
    let text = describe(&plan, false);
    assert!(
        text.contains("changed since setup: only the hook is removed"),
        "{text}"
    );
    assert!(text.contains("only the trust record is removed"), "{text}");
    let v: serde_json::Value = serde_json::from_str(&h.read(".claude/settings.json")).unwrap();
    assert_eq!(v["theme"], "dark");
    assert_eq!(v["hooks"]["SessionStart"].as_array().unwrap().len(), 1);
    assert_eq!(
        v["hooks"]["SessionStart"][0]["hooks"][0]["command"],
        "echo mine"
    );
    assert!(!h.read(".claude/settings.json").contains("skill hook"));
    assert_eq!(
        h.read(".codex/config.toml"),
        format!("{CODEX_CONFIG}\n[tui]\nscreen_reader_detection_done = true\n")
    );
    // The copies from before setup stay.
    assert!(backup_of(&h.path(".claude/settings.json")).exists());
    assert!(backup_of(&h.path(".codex/config.toml")).exists());
    assert!(!h.path(".claude/skills").exists());
}

#[test]
fn a_moved_binary_updates_the_hook_in_place_and_uninstall_still_restores() {
    let h = Home::new();
    h.write(".claude/settings.json", CLAUDE_SETTINGS);
    h.write(".codex/config.toml", CODEX_CONFIG);
    let before = h.snapshot();
    h.run(false, "/old/place/thinkterm-sidecar");
    let plan = h.run(false, BIN);
    let text = describe(&plan, false);
    assert!(text.contains("update the SessionStart hook"), "{text}");
    let settings = h.read(".claude/settings.json");
    assert_eq!(settings.matches("skill hook").count(), 1, "{settings}");
    assert!(!settings.contains("/old/place"));
    let config = h.read(".codex/config.toml");
    assert_eq!(config.matches("trusted_hash").count(), 1, "{config}");
    // The copy is still the one from before setup.
    assert_eq!(
        h.read(".claude/settings.json.thinkterm-sidecar.bak"),
        CLAUDE_SETTINGS
    );
    h.run(true, BIN);
    assert_eq!(h.snapshot(), before);
}

#[test]
fn a_broken_settings_file_is_refused_and_nothing_is_written() {
    let h = Home::new();
    h.write(".claude/settings.json", "{ \"model\": \"opus\", ");
    let before = h.snapshot();
    let t = Target::find(Agent::Claude, |_| None, h.dir.path());
    let err = plan::install(&t, Path::new(BIN), &read_file).unwrap_err();
    let msg = format!("{err:#}");
    assert!(msg.contains("settings.json: not valid JSON"), "{msg}");
    h.write(".claude/settings.json", "{\"hooks\": [1]}");
    let err = plan::install(&t, Path::new(BIN), &read_file).unwrap_err();
    assert!(
        format!("{err:#}").contains("\"hooks\" is an array, not an object"),
        "{err:#}"
    );
    h.write(".claude/settings.json", "{ \"model\": \"opus\", ");
    assert_eq!(h.snapshot(), before);
}

#[test]
fn a_file_changed_between_plan_and_write_is_not_overwritten() {
    let h = Home::new();
    h.write(".claude/settings.json", CLAUDE_SETTINGS);
    let t = Target::find(Agent::Claude, |_| None, h.dir.path());
    let plan = plan::install(&t, Path::new(BIN), &read_file).unwrap();
    h.write(".claude/settings.json", "{\"theme\": \"light\"}");
    let err = apply(&plan).unwrap_err();
    assert!(
        format!("{err}").contains("changed while setting up"),
        "{err}"
    );
    assert_eq!(h.read(".claude/settings.json"), "{\"theme\": \"light\"}");
}

#[test]
fn a_linked_settings_file_is_written_through_its_link() {
    let h = Home::new();
    std::fs::create_dir_all(h.path("dotfiles")).unwrap();
    h.write("dotfiles/settings.json", CLAUDE_SETTINGS);
    std::os::unix::fs::symlink(
        h.path("dotfiles/settings.json"),
        h.path(".claude/settings.json"),
    )
    .unwrap();
    let t = Target::find(Agent::Claude, |_| None, h.dir.path());
    apply(&plan::install(&t, Path::new(BIN), &read_file).unwrap()).unwrap();
    let meta = std::fs::symlink_metadata(h.path(".claude/settings.json")).unwrap();
    assert!(meta.file_type().is_symlink());
    assert!(h.read("dotfiles/settings.json").contains("skill hook"));
    apply(&plan::uninstall(&t, Path::new(BIN), &read_file).unwrap()).unwrap();
    assert_eq!(h.read("dotfiles/settings.json"), CLAUDE_SETTINGS);
    assert!(std::fs::symlink_metadata(h.path(".claude/settings.json"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn a_skill_file_someone_else_wrote_is_left() {
    let h = Home::new();
    std::fs::create_dir_all(h.path(&format!(".claude/skills/{SKILL_NAME}"))).unwrap();
    h.write(&format!(".claude/skills/{SKILL_NAME}/SKILL.md"), "mine\n");
    let t = Target::find(Agent::Claude, |_| None, h.dir.path());
    let s = plan::uninstall(&t, Path::new(BIN), &read_file).unwrap();
    assert!(s.changes.is_empty());
    assert!(
        s.notes[0].contains("it was not written by skill setup"),
        "{:?}",
        s.notes
    );
}

#[test]
fn the_dry_run_shows_the_lines() {
    let h = Home::new();
    h.write(".claude/settings.json", CLAUDE_SETTINGS);
    let plan = h.plan(false, BIN);
    let text = describe(&plan, true);
    assert!(
        text.contains(&format!(
            "would update {}: add the SessionStart hook",
            h.path(".claude/settings.json").display()
        )),
        "{text}"
    );
    assert!(
        text.contains("keeping the copy from before setup"),
        "{text}"
    );
    assert!(text.contains("    + "), "{text}");
    assert!(
        text.contains(&format!(
            "would create {}",
            h.path(".codex/config.toml").display()
        )),
        "{text}"
    );
    assert!(text.contains("record that you trust the hook"), "{text}");
    // A plan writes nothing.
    assert!(!h.path(".codex/hooks.json").exists());
}

#[test]
fn only_agents_whose_folder_exists_unless_named() {
    let h = Home::new();
    std::fs::remove_dir(h.path(".codex")).unwrap();
    let all = h.targets();
    let (t, skipped) = super::choose(None, &all, |p| p.is_dir()).unwrap();
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].agent, Agent::Claude);
    assert!(skipped[0].contains("--agent codex"), "{skipped:?}");
    let (t, _) = super::choose(Some(Agent::Codex), &all, |p| p.is_dir()).unwrap();
    assert_eq!(t[0].agent, Agent::Codex);
    std::fs::remove_dir(h.path(".claude")).unwrap();
    assert!(super::choose(None, &all, |p| p.is_dir()).is_err());
}
