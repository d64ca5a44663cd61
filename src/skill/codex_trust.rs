//! Codex runs a hook from the person's own files only once the person has trusted it: at start
//! it asks ("Hooks need review", or `/hooks`), and `codex exec` skips an untrusted hook without a
//! word. The trust is a line in `config.toml`:
//!
//! ```toml
//! [hooks.state."/home/u/.codex/hooks.json:session_start:0:0"]
//! trusted_hash = "sha256:…"
//! ```
//!
//! keyed by the hook file's path, the event and the hook's place in the file, holding the SHA-256
//! of the hook's normalised definition (sorted-key compact JSON of `event_name`, the group's
//! `matcher` when set, and the one handler with `timeout` defaulted to 600 and `async` to false).
//! Running `skill setup` is the person's decision to trust our hook, so it records that trust as
//! Codex's "Trust" would; checked against the hash Codex 0.171.0 wrote itself. Were a later Codex
//! to hash differently, it asks again at start: nothing runs untrusted.
//!
//! Edited with `toml_edit`, so the person's comments, order and formatting stay as they were.

use std::path::Path;

use toml_edit::{DocumentMut, Item, Table};

use super::hooks_json::{handler_at, Position};
use super::json::{canonical, Json};
use super::sha256;

/// Codex's name of the event in trust keys.
const EVENT_KEY: &str = "session_start";

/// The `hooks.state` key of the handler at `at` in the hooks file `hooks_file`.
pub fn trust_key(hooks_file: &Path, at: Position) -> String {
    format!(
        "{}:{EVENT_KEY}:{}:{}",
        hooks_file.display(),
        at.group,
        at.handler
    )
}

/// The prefix every `SessionStart` trust key of `hooks_file` starts with.
fn key_prefix(hooks_file: &Path) -> String {
    format!("{}:{EVENT_KEY}:", hooks_file.display())
}

/// The hash Codex records when the handler at `at` of a hooks document is trusted; None when
/// there is no command handler there.
pub fn hash_at(doc: &Json, at: Position) -> Option<String> {
    let (matcher, handler) = handler_at(doc, at)?;
    hash_of(matcher, handler)
}

/// The hash of one command handler in a group with `matcher`.
pub fn hash_of(matcher: Option<&str>, handler: &Json) -> Option<String> {
    if handler.get("type").and_then(Json::as_str) != Some("command") {
        return None;
    }
    let command = handler.get("command").and_then(Json::as_str)?;
    let timeout = handler
        .get("timeout")
        .or_else(|| handler.get("timeoutSec"))
        .and_then(Json::as_u64)
        .unwrap_or(600)
        .max(1);
    let asynchronous = matches!(handler.get("async"), Some(Json::Bool(true)));
    let mut h = serde_json::json!({
        "type": "command",
        "command": command,
        "timeout": timeout,
        "async": asynchronous,
    });
    if let Some(m) = handler.get("statusMessage").and_then(Json::as_str) {
        h["statusMessage"] = serde_json::Value::String(m.to_string());
    }
    let mut identity = serde_json::json!({ "event_name": EVENT_KEY, "hooks": [h] });
    if let Some(m) = matcher {
        identity["matcher"] = serde_json::Value::String(m.to_string());
    }
    Some(format!(
        "sha256:{}",
        sha256::hex(canonical(&identity).as_bytes())
    ))
}

/// A trust record: its key and hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trust {
    /// The `hooks.state` key.
    pub key: String,
    /// The `trusted_hash`.
    pub hash: String,
}

/// Parses `config.toml` text (empty when the file is missing).
pub fn parse(text: &str) -> anyhow::Result<DocumentMut> {
    Ok(text.parse::<DocumentMut>()?)
}

/// Whether the document holds a `trusted_hash` for one of `ours` under `hooks_file`'s keys.
pub fn holds_any(doc: &DocumentMut, hooks_file: &Path, hashes: &[String]) -> bool {
    !matching_keys(doc, hooks_file, hashes).is_empty()
}

/// The `hooks.state` keys under `hooks_file` whose `trusted_hash` is one of `hashes`.
fn matching_keys(doc: &DocumentMut, hooks_file: &Path, hashes: &[String]) -> Vec<String> {
    let prefix = key_prefix(hooks_file);
    let Some(state) = doc
        .get("hooks")
        .and_then(Item::as_table_like)
        .and_then(|h| h.get("state"))
        .and_then(Item::as_table_like)
    else {
        return Vec::new();
    };
    state
        .iter()
        .filter(|(k, v)| {
            k.starts_with(&prefix)
                && v.as_table_like()
                    .and_then(|t| t.get("trusted_hash"))
                    .and_then(Item::as_str)
                    .is_some_and(|h| hashes.iter().any(|x| x == h))
        })
        .map(|(k, _)| k.to_string())
        .collect()
}

/// Records `trust`, first removing the records under `hooks_file` that hold one of `old`
/// (our hook's earlier place or form). Fails on a `hooks` or `hooks.state` that is not a table.
pub fn set(
    doc: &mut DocumentMut,
    hooks_file: &Path,
    old: &[String],
    trust: &Trust,
) -> anyhow::Result<()> {
    for k in matching_keys(doc, hooks_file, old) {
        if k != trust.key {
            remove_key(doc, &k);
        }
    }
    let hooks = doc.entry("hooks").or_insert_with(implicit_table);
    let Some(hooks) = hooks.as_table_like_mut() else {
        anyhow::bail!("its `hooks` is not a table");
    };
    let state = hooks.entry("state").or_insert_with(implicit_table);
    let Some(state) = state.as_table_like_mut() else {
        anyhow::bail!("its `hooks.state` is not a table");
    };
    let entry = state
        .entry(&trust.key)
        .or_insert_with(|| Item::Table(Table::new()));
    let Some(entry) = entry.as_table_like_mut() else {
        anyhow::bail!("its `hooks.state.\"{}\"` is not a table", trust.key);
    };
    // Rewritten only when it differs, so that a second run leaves the line as it is.
    if entry.get("trusted_hash").and_then(Item::as_str) != Some(trust.hash.as_str()) {
        entry.insert("trusted_hash", toml_edit::value(trust.hash.clone()));
    }
    Ok(())
}

/// Removes the records under `hooks_file` that hold one of `hashes` (and `hooks.state` or
/// `hooks` when that empties them); whether anything was removed.
pub fn remove(doc: &mut DocumentMut, hooks_file: &Path, hashes: &[String]) -> bool {
    let keys = matching_keys(doc, hooks_file, hashes);
    for k in &keys {
        remove_key(doc, k);
    }
    !keys.is_empty()
}

/// Removes one record: its `trusted_hash`, and the record when nothing else is in it (an
/// `enabled = false` the person set stays).
fn remove_key(doc: &mut DocumentMut, key: &str) {
    let Some(hooks) = doc.get_mut("hooks").and_then(Item::as_table_like_mut) else {
        return;
    };
    let Some(state) = hooks.get_mut("state").and_then(Item::as_table_like_mut) else {
        return;
    };
    if let Some(entry) = state.get_mut(key).and_then(Item::as_table_like_mut) {
        entry.remove("trusted_hash");
        if entry.is_empty() {
            state.remove(key);
        }
    }
    if state.is_empty() {
        hooks.remove("state");
    }
    if hooks.is_empty() {
        doc.remove("hooks");
    }
}

fn implicit_table() -> Item {
    let mut t = Table::new();
    t.set_implicit(true);
    Item::Table(t)
}

/// Things in `config.toml` the person should know about: hooks turned off, or hooks written
/// inline there as well (Codex then warns at every start that it loads both).
pub fn notes(doc: &DocumentMut) -> Vec<String> {
    let mut out = Vec::new();
    let features = doc.get("features").and_then(Item::as_table_like);
    for name in ["hooks", "codex_hooks"] {
        if features.and_then(|f| f.get(name)).and_then(Item::as_bool) == Some(false) {
            out.push(format!(
                "config.toml has `[features] {name} = false`: Codex runs no hooks until that goes"
            ));
        }
    }
    let inline = doc
        .get("hooks")
        .and_then(Item::as_table_like)
        .is_some_and(|h| h.iter().any(|(k, _)| k != "state"));
    if inline {
        out.push(
            "config.toml also holds hooks of its own: Codex loads both files and warns about it at start"
                .to_string(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The record Codex 0.171.0 wrote itself ("Trust all and continue") for a hooks.json
    /// holding one SessionStart group with this one handler and no matcher.
    #[test]
    fn the_hash_codex_wrote_for_a_hook() {
        let h = Json::parse(
            r#"{"type": "command", "command": "echo CODEXHOOK-plain pane=$TMUX_PANE"}"#,
        )
        .unwrap();
        assert_eq!(
            hash_of(None, &h).unwrap(),
            "sha256:c1f923bae200f0f7dc2c0605e234ee04f4b584641b21c127898bb1a2c4cec50e"
        );
        // A matcher, a timeout, a status message: each is part of what was trusted.
        let base = hash_of(None, &h).unwrap();
        assert_ne!(hash_of(Some("startup"), &h).unwrap(), base);
        let t = Json::parse(r#"{"type": "command", "command": "echo CODEXHOOK-plain pane=$TMUX_PANE", "timeout": 600}"#).unwrap();
        assert_eq!(hash_of(None, &t).unwrap(), base, "600 is the default");
        let s = Json::parse(r#"{"type": "command", "command": "echo CODEXHOOK-plain pane=$TMUX_PANE", "statusMessage": "x"}"#).unwrap();
        assert_ne!(hash_of(None, &s).unwrap(), base);
        assert_eq!(
            hash_of(None, &Json::parse(r#"{"type": "prompt"}"#).unwrap()),
            None
        );
    }

    #[test]
    fn the_key_codex_uses() {
        assert_eq!(
            trust_key(
                Path::new("/tmp/i16-skill/xhome/.codex/hooks.json"),
                Position {
                    group: 0,
                    handler: 0
                }
            ),
            "/tmp/i16-skill/xhome/.codex/hooks.json:session_start:0:0"
        );
    }

    const PERSONS: &str = "# my codex\nmodel = \"gpt-5\"   # the model\n\n[features]\nfoo = true\n";

    #[test]
    fn set_and_remove_keep_the_persons_text() {
        let file = Path::new("/h/.codex/hooks.json");
        let trust = Trust {
            key: trust_key(
                file,
                Position {
                    group: 1,
                    handler: 0,
                },
            ),
            hash: "sha256:aa".into(),
        };
        let mut doc = parse(PERSONS).unwrap();
        set(&mut doc, file, &[], &trust).unwrap();
        let text = doc.to_string();
        assert!(text.starts_with(PERSONS), "{text}");
        assert!(
            text.ends_with("\n[hooks.state.\"/h/.codex/hooks.json:session_start:1:0\"]\ntrusted_hash = \"sha256:aa\"\n"),
            "{text}"
        );
        assert!(holds_any(&doc, file, &["sha256:aa".into()]));
        assert!(!holds_any(
            &doc,
            Path::new("/other/hooks.json"),
            &["sha256:aa".into()]
        ));
        // Setting again changes nothing.
        let mut again = parse(&text).unwrap();
        set(&mut again, file, &["sha256:aa".into()], &trust).unwrap();
        assert_eq!(again.to_string(), text);
        // Removing gives back the person's text.
        let mut doc = parse(&text).unwrap();
        assert!(remove(&mut doc, file, &["sha256:aa".into()]));
        assert_eq!(doc.to_string(), PERSONS);
        assert!(!remove(&mut doc, file, &["sha256:aa".into()]));
    }

    #[test]
    fn a_moved_hook_loses_its_old_record_and_others_stay() {
        let file = Path::new("/h/.codex/hooks.json");
        let text = "[hooks.state.\"/h/.codex/hooks.json:session_start:0:0\"]\ntrusted_hash = \"sha256:old\"\n\
                    [hooks.state.\"/h/.codex/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:old\"\n\
                    [hooks.state.\"/h/.codex/hooks.json:session_start:0:1\"]\nenabled = false\ntrusted_hash = \"sha256:theirs\"\n";
        let mut doc = parse(text).unwrap();
        let trust = Trust {
            key: trust_key(
                file,
                Position {
                    group: 2,
                    handler: 0,
                },
            ),
            hash: "sha256:new".into(),
        };
        set(&mut doc, file, &["sha256:old".into()], &trust).unwrap();
        let out = doc.to_string();
        assert!(!out.contains("session_start:0:0"), "{out}");
        assert!(out.contains("stop:0:0"), "{out}");
        assert!(
            out.contains("session_start:0:1\"]\nenabled = false\ntrusted_hash = \"sha256:theirs\""),
            "{out}"
        );
        assert!(
            out.contains("session_start:2:0\"]\ntrusted_hash = \"sha256:new\""),
            "{out}"
        );
    }

    #[test]
    fn notes_on_turned_off_and_inline_hooks() {
        let doc = parse("[features]\nhooks = false\n[[hooks.SessionStart]]\nhooks = []\n").unwrap();
        let n = notes(&doc);
        assert_eq!(n.len(), 2, "{n:?}");
        assert!(notes(&parse(PERSONS).unwrap()).is_empty());
    }

    #[test]
    fn a_hooks_value_that_is_no_table_is_refused() {
        let mut doc = parse("hooks = 3\n").unwrap();
        let trust = Trust {
            key: "k".into(),
            hash: "h".into(),
        };
        assert!(set(&mut doc, Path::new("/h"), &[], &trust).is_err());
    }
}
