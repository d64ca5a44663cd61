//! A pane saved as a fixture, in the format of the repository's recorded frames
//! (`tests/fixtures/agents/<agent>/<version>/NNN-<state>.txt` + `.json`, see
//! `tests/fixtures/README.md`): the screen as `capture-pane -p -J` gives it, and beside it the
//! title, the foreground process, the size and the verdict. Ready to attach to a bug report, or
//! to move under `tests/fixtures/agents/` where every test classifies it (set its `state` to
//! what the agent really showed first: the saved one is our verdict, not the truth).
//!
//! Pure formatting: the caller reads the pane and writes the files.

use crate::process::identify::ProcInfo;
use serde_json::json;

/// What is known about a pane at the moment it is saved.
#[derive(Clone, Debug, Default)]
pub struct PaneFacts<'a> {
    /// The agent (manifest id), if one was recognised.
    pub agent: Option<&'a str>,
    /// The agent's version, if it was found.
    pub version: Option<&'a str>,
    /// The screen as `capture-pane -p -J` printed it.
    pub screen: &'a str,
    /// The title the program sent (None: it sent none).
    pub title: Option<&'a str>,
    /// tmux's `pane_current_command`.
    pub current_command: &'a str,
    /// The foreground job's processes, leader first.
    pub foreground: &'a [ProcInfo],
    /// Pane columns, when known.
    pub width: Option<u32>,
    /// Pane rows, when known.
    pub height: Option<u32>,
    /// The state we decided (`working`, `blocked`, `idle`, `unknown`).
    pub state: &'a str,
    /// The screen rule that decided, if one did.
    pub rule: Option<&'a str>,
    /// No rule matched: the idle fallback decided.
    pub fallback: bool,
    /// Why the pane is unrecognised (the drift alarm), if it is.
    pub unrecognised: Option<&'a str>,
    /// Where it came from (`saved from pane %3`).
    pub label: &'a str,
}

/// The two files of a fixture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixtureFiles {
    /// `NNN-<state>` (the file names without `.txt` / `.json`).
    pub stem: String,
    /// The screen.
    pub txt: String,
    /// The metadata, pretty JSON with a final newline.
    pub json: String,
}

/// The fixture of a pane, numbered `n`.
pub fn fixture(facts: &PaneFacts<'_>, n: u32) -> FixtureFiles {
    let leader = facts.foreground.first();
    let height = facts
        .height
        .unwrap_or_else(|| u32::try_from(facts.screen.lines().count()).unwrap_or(u32::MAX));
    let width = facts.width.unwrap_or_else(|| {
        let w = facts.screen.lines().map(|l| l.chars().count()).max();
        u32::try_from(w.unwrap_or(0)).unwrap_or(u32::MAX)
    });
    let value = json!({
        "agent": facts.agent,
        "version": facts.version,
        "state": facts.state,
        "label": facts.label,
        "title": facts.title,
        "current_command": facts.current_command,
        "fg_comm": leader.map(|p| p.comm.as_str()),
        "fg_argv": leader.map(|p| p.argv.clone()),
        "proc_tree": facts.foreground,
        "width": width,
        "height": height,
        "verified": serde_json::Value::Null,
        "notes": "saved by thinkterm-sidecar: `state` is the sidecar's verdict; set it to what \
                  the agent really showed before using this as a test",
        "verdict": {
            "state": facts.state,
            "rule": facts.rule,
            "fallback": facts.fallback,
            "unrecognised": facts.unrecognised,
        },
    });
    let mut json = serde_json::to_string_pretty(&value).unwrap_or_default();
    json.push('\n');
    FixtureFiles {
        stem: format!("{n:03}-{}", file_word(facts.state)),
        txt: facts.screen.to_string(),
        json,
    }
}

/// A state word safe in a file name (anything odd becomes `unknown`).
fn file_word(state: &str) -> &str {
    match state {
        "working" | "blocked" | "idle" | "error" => state,
        _ => "unknown",
    }
}

/// The number after the highest `NNN-` among `names` (1 when there is none).
pub fn next_number<'a>(names: impl IntoIterator<Item = &'a str>) -> u32 {
    names
        .into_iter()
        .filter_map(|n| {
            let digits: String = n.chars().take_while(char::is_ascii_digit).collect();
            (!digits.is_empty() && n[digits.len()..].starts_with('-'))
                .then(|| digits.parse::<u32>().ok())
                .flatten()
        })
        .max()
        .map_or(1, |m| m.saturating_add(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pane_becomes_the_fixture_format() {
        let procs = [ProcInfo {
            pid: 42,
            comm: "claude".into(),
            argv: vec!["claude".into(), "--resume".into()],
        }];
        let facts = PaneFacts {
            agent: Some("claude"),
            version: Some("2.1.332"),
            screen: "❯ hi\n\n",
            title: Some("✳ Claude Code"),
            current_command: "claude",
            foreground: &procs,
            width: Some(120),
            height: Some(40),
            state: "idle",
            rule: None,
            fallback: true,
            unrecognised: Some("no rule matched for 31 s while the screen changed 9 times"),
            label: "saved from pane %3",
        };
        let f = fixture(&facts, 7);
        assert_eq!(f.stem, "007-idle");
        assert_eq!(f.txt, "❯ hi\n\n");
        let v: serde_json::Value = serde_json::from_str(&f.json).unwrap_or_default();
        assert_eq!(v["agent"], "claude");
        assert_eq!(v["version"], "2.1.332");
        assert_eq!(v["state"], "idle");
        assert_eq!(v["title"], "✳ Claude Code");
        assert_eq!(v["fg_comm"], "claude");
        assert_eq!(v["fg_argv"][1], "--resume");
        assert_eq!(v["proc_tree"][0]["pid"], 42);
        assert_eq!(
            (v["width"].as_u64(), v["height"].as_u64()),
            (Some(120), Some(40))
        );
        assert_eq!(v["verdict"]["fallback"], true);
        assert!(v["verdict"]["unrecognised"]
            .as_str()
            .is_some_and(|r| r.starts_with("no rule matched")));
        assert!(f.json.ends_with("}\n"));
    }

    #[test]
    fn unknown_sizes_come_from_the_screen_and_odd_states_are_unknown() {
        let facts = PaneFacts {
            screen: "abc\nabcdef\n",
            state: "weird/../state",
            ..PaneFacts::default()
        };
        let f = fixture(&facts, 1);
        assert_eq!(f.stem, "001-unknown");
        let v: serde_json::Value = serde_json::from_str(&f.json).unwrap_or_default();
        assert_eq!(
            (v["width"].as_u64(), v["height"].as_u64()),
            (Some(6), Some(2))
        );
        assert!(v["title"].is_null() && v["agent"].is_null());
    }

    #[test]
    fn numbers_follow_the_highest_in_the_folder() {
        assert_eq!(next_number([]), 1);
        assert_eq!(
            next_number(["001-idle.txt", "012-blocked.json", "notes.md", "7x-a"]),
            13
        );
        assert_eq!(next_number(["escapes.md", "raw-main-120x40.bin"]), 1);
    }
}
