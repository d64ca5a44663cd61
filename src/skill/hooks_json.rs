//! Our `SessionStart` hook in a hooks document: Claude Code's `settings.json` and Codex's
//! `hooks.json` share the shape
//! `{"hooks": {"SessionStart": [{"matcher": "...", "hooks": [{"type": "command", ...}]}]}}`.
//! Pure edits of a parsed document: add ours (once, updated in place when its command or timeout
//! changed), and take ours out again, leaving every other key, group and hook as it was.

use super::content::{is_our_command, HOOK_TIMEOUT_S};
use super::json::Json;

/// The event our hook runs on.
pub const EVENT: &str = "SessionStart";

/// Where our handler sits: its group's index in the `SessionStart` list and its own index in
/// that group's `hooks` (Codex keys a hook's trust by these).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    /// Index of the matcher group.
    pub group: usize,
    /// Index of the handler in the group.
    pub handler: usize,
}

/// Our handler for `command`.
pub fn our_handler(command: &str) -> Json {
    Json::Object(vec![
        ("type".into(), Json::String("command".into())),
        ("command".into(), Json::String(command.into())),
        ("timeout".into(), Json::Number(HOOK_TIMEOUT_S.into())),
    ])
}

/// Whether a handler is one of ours.
fn is_ours(handler: &Json) -> bool {
    handler.get("type").and_then(Json::as_str) == Some("command")
        && handler
            .get("command")
            .and_then(Json::as_str)
            .is_some_and(is_our_command)
}

/// Every handler of ours, in document order.
pub fn find_ours(doc: &Json) -> Vec<Position> {
    let Some(Json::Array(groups)) = doc.get("hooks").and_then(|h| h.get(EVENT)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (g, group) in groups.iter().enumerate() {
        if let Some(Json::Array(hs)) = group.get("hooks") {
            for (h, handler) in hs.iter().enumerate() {
                if is_ours(handler) {
                    out.push(Position {
                        group: g,
                        handler: h,
                    });
                }
            }
        }
    }
    out
}

/// The group's matcher and the handler at `at`.
pub fn handler_at(doc: &Json, at: Position) -> Option<(Option<&str>, &Json)> {
    let Some(Json::Array(groups)) = doc.get("hooks").and_then(|h| h.get(EVENT)) else {
        return None;
    };
    let group = groups.get(at.group)?;
    let Some(Json::Array(hs)) = group.get("hooks") else {
        return None;
    };
    Some((
        group.get("matcher").and_then(Json::as_str),
        hs.get(at.handler)?,
    ))
}

/// Adds our hook running `command` (or brings an existing one up to date, where it is) and
/// removes any second copy; returns where it sits. Fails, changing nothing, when the document
/// does not have the expected shape.
pub fn install(doc: &mut Json, command: &str) -> anyhow::Result<Position> {
    check_shape(doc)?;
    let want = our_handler(command);
    let found = find_ours(doc);
    let groups = event_list(doc)?;
    let Some((first, extra)) = found.split_first() else {
        groups.push(Json::Object(vec![(
            "hooks".into(),
            Json::Array(vec![want]),
        )]));
        return Ok(Position {
            group: groups.len() - 1,
            handler: 0,
        });
    };
    if let Some(Json::Array(hs)) = groups[first.group].get_mut("hooks") {
        hs[first.handler] = want;
    }
    // Copies after the first, last first so that the earlier positions stay valid.
    for at in extra.iter().rev() {
        remove_at(groups, *at);
    }
    Ok(*first)
}

/// Removes every handler of ours (and a group, list or `hooks` object left empty by that);
/// whether anything was removed.
pub fn strip(doc: &mut Json) -> bool {
    let found = find_ours(doc);
    if found.is_empty() {
        return false;
    }
    let Ok(groups) = event_list(doc) else {
        return false;
    };
    for at in found.iter().rev() {
        remove_at(groups, *at);
    }
    let empty_list = groups.is_empty();
    if empty_list {
        if let Some(h) = doc.get_mut("hooks") {
            h.remove(EVENT);
            if matches!(h, Json::Object(m) if m.is_empty()) {
                doc.remove("hooks");
            }
        }
    }
    true
}

/// Removes the handler at `at`, and its group when that leaves it without handlers.
fn remove_at(groups: &mut Vec<Json>, at: Position) {
    let now_empty = match groups[at.group].get_mut("hooks") {
        Some(Json::Array(hs)) => {
            hs.remove(at.handler);
            hs.is_empty()
        }
        _ => false,
    };
    if now_empty {
        groups.remove(at.group);
    }
}

/// Checks that the document is an object whose `hooks` (if any) is an object whose
/// `SessionStart` (if any) is a list of objects.
fn check_shape(doc: &Json) -> anyhow::Result<()> {
    let Json::Object(_) = doc else {
        anyhow::bail!("the file holds {}, not a JSON object", doc.kind());
    };
    let Some(hooks) = doc.get("hooks") else {
        return Ok(());
    };
    let Json::Object(_) = hooks else {
        anyhow::bail!("its \"hooks\" is {}, not an object", hooks.kind());
    };
    let Some(list) = hooks.get(EVENT) else {
        return Ok(());
    };
    let Json::Array(groups) = list else {
        anyhow::bail!("its \"hooks\".\"{EVENT}\" is {}, not a list", list.kind());
    };
    for g in groups {
        if !matches!(g, Json::Object(_)) {
            anyhow::bail!(
                "an entry of \"hooks\".\"{EVENT}\" is {}, not an object",
                g.kind()
            );
        }
        if let Some(h) = g.get("hooks") {
            if !matches!(h, Json::Array(_)) {
                anyhow::bail!(
                    "an entry of \"hooks\".\"{EVENT}\" has \"hooks\" that is {}, not a list",
                    h.kind()
                );
            }
        }
    }
    Ok(())
}

/// The `SessionStart` list, created when missing (the shape is checked first).
fn event_list(doc: &mut Json) -> anyhow::Result<&mut Vec<Json>> {
    let hooks = doc
        .entry("hooks", Json::Object(Vec::new()))
        .ok_or_else(|| anyhow::anyhow!("not a JSON object"))?;
    match hooks.entry(EVENT, Json::Array(Vec::new())) {
        Some(Json::Array(groups)) => Ok(groups),
        _ => anyhow::bail!("\"hooks\" is not an object"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CMD: &str = "/usr/bin/thinkterm-sidecar skill hook";

    fn parse(s: &str) -> Json {
        Json::parse(s).unwrap()
    }

    #[test]
    fn into_an_empty_document() {
        let mut d = parse("{}");
        let at = install(&mut d, CMD).unwrap();
        assert_eq!(
            at,
            Position {
                group: 0,
                handler: 0
            }
        );
        assert_eq!(
            d,
            parse(&format!(
                r#"{{"hooks":{{"SessionStart":[{{"hooks":[{{"type":"command","command":"{CMD}","timeout":10}}]}}]}}}}"#
            ))
        );
        assert!(strip(&mut d));
        assert_eq!(d, parse("{}"));
    }

    #[test]
    fn beside_the_persons_own_hooks_and_keys() {
        let theirs = r#"{"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
            "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}]},
            "env": {"A": "1"}}"#;
        let mut d = parse(theirs);
        let at = install(&mut d, CMD).unwrap();
        assert_eq!(
            at,
            Position {
                group: 1,
                handler: 0
            }
        );
        let groups = d.get("hooks").unwrap().get(EVENT).unwrap();
        let Json::Array(gs) = groups else { panic!() };
        assert_eq!(
            gs[0],
            parse(
                r#"{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}"#
            )
        );
        // Installing again changes nothing.
        let once = d.clone();
        assert_eq!(install(&mut d, CMD).unwrap(), at);
        assert_eq!(d, once);
        assert!(strip(&mut d));
        assert_eq!(d, parse(theirs));
        assert!(!strip(&mut d));
    }

    #[test]
    fn an_old_copy_is_updated_where_it_is_and_a_second_copy_removed() {
        let mut d = parse(
            r#"{"hooks": {"SessionStart": [
                {"hooks": [{"type": "command", "command": "echo a"}, {"type": "command", "command": "/old/thinkterm-sidecar skill hook"}]},
                {"hooks": [{"type": "command", "command": "thinkterm-sidecar skill hook", "timeout": 3}]}]}}"#,
        );
        let at = install(&mut d, CMD).unwrap();
        assert_eq!(
            at,
            Position {
                group: 0,
                handler: 1
            }
        );
        assert_eq!(find_ours(&d), vec![at]);
        let (matcher, h) = handler_at(&d, at).unwrap();
        assert_eq!(matcher, None);
        assert_eq!(h, &our_handler(CMD));
    }

    #[test]
    fn a_document_of_the_wrong_shape_is_refused_unchanged() {
        for bad in [
            "[]",
            r#"{"hooks": []}"#,
            r#"{"hooks": {"SessionStart": {}}}"#,
            r#"{"hooks": {"SessionStart": [1]}}"#,
            r#"{"hooks": {"SessionStart": [{"hooks": "x"}]}}"#,
        ] {
            let mut d = parse(bad);
            assert!(install(&mut d, CMD).is_err(), "{bad}");
            assert_eq!(d, parse(bad));
        }
    }
}
