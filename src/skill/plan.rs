//! Planning, with no writing: from the files as they are (read through a [`Reader`]), what
//! `skill setup` or `skill setup --uninstall` changes, file by file, with the bytes before and
//! after. [`super::apply`] does a plan, or prints it for `--dry-run`.
//!
//! The rules that make it safe to run:
//! - A settings file is parsed and merged, never replaced; a file of the wrong shape is refused
//!   with the reason, and nothing at all is written.
//! - A file that exists and holds nothing of ours is saved as `FILE.thinkterm-sidecar.bak` before
//!   its first change (the copy from before setup).
//! - Running it again plans nothing: a file whose content already is what setup wants is left
//!   alone (compared as parsed JSON, or as the text `toml_edit` leaves unchanged).
//! - `--uninstall` takes out exactly what setup put in. When the file, without our entries, equals
//!   its saved copy (nothing else changed it), the saved bytes are written back, byte for byte,
//!   and the copy removed; when setup created the file, it is removed; otherwise only our entries
//!   are removed and the copy stays, and the plan says so.

use std::io;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::codex_trust::{self, Trust};
use super::content::{self, MARKER};
use super::hooks_json::{self, EVENT};
use super::json::Json;
use super::target::{backup_of, Agent, Target};

/// Reads a file: its bytes, or None when it does not exist.
pub type Reader<'a> = &'a dyn Fn(&Path) -> io::Result<Option<Vec<u8>>>;

/// What happens to a file's backup copy along with a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backup {
    /// Nothing.
    Keep,
    /// Save the bytes before the change as the copy (`FILE.thinkterm-sidecar.bak`).
    Save,
    /// Remove the copy (it was written back).
    Drop,
}

/// One file's change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// The file.
    pub path: PathBuf,
    /// Its bytes now (None: missing).
    pub before: Option<Vec<u8>>,
    /// Its bytes after (None: removed).
    pub after: Option<Vec<u8>>,
    /// What happens to its copy.
    pub backup: Backup,
    /// What the change is, in words.
    pub what: String,
}

/// The plan for one agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// The agent and its folder.
    pub target: Target,
    /// Changes, in the order they are made.
    pub changes: Vec<FileChange>,
    /// Folders removed afterwards when empty (the skill's, then `skills`).
    pub remove_dirs: Vec<PathBuf>,
    /// Things the person should know.
    pub notes: Vec<String>,
}

impl Section {
    fn new(target: &Target) -> Section {
        Section {
            target: target.clone(),
            changes: Vec::new(),
            remove_dirs: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn change(
        &mut self,
        path: PathBuf,
        before: Option<Vec<u8>>,
        after: Option<Vec<u8>>,
        backup: Backup,
        what: impl Into<String>,
    ) {
        self.changes.push(FileChange {
            path,
            before,
            after,
            backup,
            what: what.into(),
        });
    }
}

/// Plans `skill setup` for one agent, with the binary at `bin` as the hook's program.
pub fn install(target: &Target, bin: &Path, read: Reader) -> anyhow::Result<Section> {
    let mut s = Section::new(target);
    let skill_path = target.skill_file();
    let want = content::skill_text(bin);
    let cur = read_at(read, &skill_path)?;
    if cur.as_deref() != Some(want.as_bytes()) {
        let what = if cur.is_some() {
            "the skill, brought up to date"
        } else {
            "the skill"
        };
        s.change(skill_path, cur, Some(want.into_bytes()), Backup::Keep, what);
    }

    let hooks_path = target.hooks_file();
    let cur = read_at(read, &hooks_path)?;
    let before = parse_json(&hooks_path, cur.as_deref())?;
    let mut doc = before.clone();
    let command = content::hook_command(bin);
    let at = hooks_json::install(&mut doc, &command)
        .with_context(|| format!("{}: cannot add the hook", hooks_path.display()))?;
    if target.agent == Agent::Claude && matches!(doc.get("disableAllHooks"), Some(Json::Bool(true)))
    {
        s.notes.push(format!(
            "{} has \"disableAllHooks\": true: Claude Code runs no hooks until that goes",
            hooks_path.display()
        ));
    }
    if doc != before {
        let fresh = hooks_json::find_ours(&before).is_empty();
        let backup = if cur.is_some() && fresh {
            Backup::Save
        } else {
            Backup::Keep
        };
        let what = if fresh {
            format!("add the {EVENT} hook `{command}`")
        } else {
            format!("update the {EVENT} hook to `{command}`")
        };
        s.change(
            hooks_path.clone(),
            cur,
            Some(doc.to_pretty().into_bytes()),
            backup,
            what,
        );
    }

    if let Some(cfg) = target.config_toml() {
        let cur = read_at(read, &cfg)?;
        let mut tdoc = codex_trust::parse(utf8(&cfg, cur.as_deref())?)
            .with_context(|| format!("{}: not TOML", cfg.display()))?;
        s.notes.extend(
            codex_trust::notes(&tdoc)
                .into_iter()
                .map(|n| format!("{}: {n}", cfg.display())),
        );
        let trust = Trust {
            key: codex_trust::trust_key(&hooks_path, at),
            hash: codex_trust::hash_at(&doc, at)
                .ok_or_else(|| anyhow::anyhow!("our hook is not where it was put"))?,
        };
        let old = our_hashes(&before, &command);
        let mut known = old.clone();
        known.push(trust.hash.clone());
        let had = codex_trust::holds_any(&tdoc, &hooks_path, &known);
        codex_trust::set(&mut tdoc, &hooks_path, &old, &trust)
            .with_context(|| format!("{}: cannot record the trust", cfg.display()))?;
        let after = tdoc.to_string();
        if Some(after.as_bytes()) != cur.as_deref() {
            let backup = if cur.is_some() && !had {
                Backup::Save
            } else {
                Backup::Keep
            };
            s.change(
                cfg,
                cur,
                Some(after.into_bytes()),
                backup,
                "record that you trust the hook (what Codex's /hooks \"Trust\" records)",
            );
        }
    }
    Ok(s)
}

/// Plans `skill setup --uninstall` for one agent (`bin`: this binary, for a hook whose record
/// is all that is left).
pub fn uninstall(target: &Target, bin: &Path, read: Reader) -> anyhow::Result<Section> {
    let mut s = Section::new(target);
    let skill_path = target.skill_file();
    if let Some(cur) = read_at(read, &skill_path)? {
        if String::from_utf8_lossy(&cur).contains(MARKER) {
            s.change(skill_path, Some(cur), None, Backup::Keep, "the skill");
        } else {
            s.notes.push(format!(
                "left {}: it was not written by skill setup",
                skill_path.display()
            ));
        }
    }
    s.remove_dirs.push(target.skill_dir());
    s.remove_dirs.push(target.dir.join("skills"));

    let hooks_path = target.hooks_file();
    let command = content::hook_command(bin);
    let mut hashes = Vec::new();
    if let Some(cur) = read_at(read, &hooks_path)? {
        let doc = parse_json(&hooks_path, Some(&cur))?;
        hashes = our_hashes(&doc, &command);
        let mut stripped = doc.clone();
        if hooks_json::strip(&mut stripped) {
            let copy_path = backup_of(&hooks_path);
            let copy = read_at(read, &copy_path)?;
            let copy_doc = copy
                .as_deref()
                .and_then(|b| parse_json(&copy_path, Some(b)).ok());
            let plain = normalized(stripped.clone());
            let same = copy_doc.is_some_and(|c| normalized(c) == plain);
            match copy {
                Some(bytes) if same => {
                    s.change(
                        hooks_path.clone(),
                        Some(cur),
                        Some(bytes),
                        Backup::Drop,
                        "remove the hook: write back the copy from before setup, byte for byte",
                    );
                }
                None if plain == Json::Object(Vec::new()) => {
                    s.change(
                        hooks_path.clone(),
                        Some(cur),
                        None,
                        Backup::Keep,
                        "remove the file setup created",
                    );
                }
                copy => {
                    if copy.is_some() {
                        s.notes.push(format!(
                            "{} changed since setup: only the hook is removed; the copy from before setup stays at {}",
                            hooks_path.display(),
                            copy_path.display()
                        ));
                    }
                    s.change(
                        hooks_path.clone(),
                        Some(cur),
                        Some(stripped.to_pretty().into_bytes()),
                        Backup::Keep,
                        format!("remove the {EVENT} hook"),
                    );
                }
            }
        }
    }

    if let Some(cfg) = target.config_toml() {
        if hashes.is_empty() {
            // The hook is gone from hooks.json already: its record may still be there.
            hashes = our_hashes(&Json::Object(Vec::new()), &command);
        }
        if let Some(cur) = read_at(read, &cfg)? {
            let mut tdoc = codex_trust::parse(utf8(&cfg, Some(&cur))?)
                .with_context(|| format!("{}: not TOML", cfg.display()))?;
            if codex_trust::remove(&mut tdoc, &hooks_path, &hashes) {
                let after = tdoc.to_string();
                let copy_path = backup_of(&cfg);
                let copy = read_at(read, &copy_path)?;
                let same = copy
                    .as_deref()
                    .is_some_and(|c| same_toml(c, after.as_bytes()));
                if same {
                    s.change(
                        cfg,
                        Some(cur),
                        copy,
                        Backup::Drop,
                        "remove the trust record: write back the copy from before setup, byte for byte",
                    );
                } else if copy.is_none() && same_toml(b"", after.as_bytes()) {
                    s.change(
                        cfg,
                        Some(cur),
                        None,
                        Backup::Keep,
                        "remove the file setup created",
                    );
                } else {
                    if copy.is_some() {
                        s.notes.push(format!(
                            "{} changed since setup: only the trust record is removed; the copy from before setup stays at {}",
                            cfg.display(),
                            copy_path.display()
                        ));
                    }
                    s.change(
                        cfg,
                        Some(cur),
                        Some(after.into_bytes()),
                        Backup::Keep,
                        "remove the trust record",
                    );
                }
            }
        }
    }
    Ok(s)
}

/// The hashes our hook has or had: each handler of ours in `doc`, and ours for `command`.
fn our_hashes(doc: &Json, command: &str) -> Vec<String> {
    let mut out: Vec<String> = hooks_json::find_ours(doc)
        .into_iter()
        .filter_map(|at| codex_trust::hash_at(doc, at))
        .collect();
    if let Some(h) = codex_trust::hash_of(None, &hooks_json::our_handler(command)) {
        out.push(h);
    }
    out.sort();
    out.dedup();
    out
}

/// A hooks document with an empty `SessionStart` list and an empty `hooks` object taken out:
/// for telling "nothing else changed" apart from "someone changed it".
fn normalized(mut doc: Json) -> Json {
    if let Some(h) = doc.get_mut("hooks") {
        if matches!(h.get(EVENT), Some(Json::Array(a)) if a.is_empty()) {
            h.remove(EVENT);
        }
        if matches!(h, Json::Object(m) if m.is_empty()) {
            doc.remove("hooks");
        }
    }
    doc
}

/// Whether two TOML texts hold the same values (whatever their formatting).
fn same_toml(a: &[u8], b: &[u8]) -> bool {
    let parse = |x: &[u8]| {
        std::str::from_utf8(x)
            .ok()
            .and_then(|t| t.parse::<toml::Table>().ok())
    };
    matches!((parse(a), parse(b)), (Some(x), Some(y)) if x == y)
}

fn read_at(read: Reader, path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    read(path).with_context(|| format!("cannot read {}", path.display()))
}

fn utf8<'a>(path: &Path, bytes: Option<&'a [u8]>) -> anyhow::Result<&'a str> {
    std::str::from_utf8(bytes.unwrap_or_default())
        .map_err(|_| anyhow::anyhow!("{}: not UTF-8 text", path.display()))
}

fn parse_json(path: &Path, bytes: Option<&[u8]>) -> anyhow::Result<Json> {
    let Some(b) = bytes else {
        return Ok(Json::Object(Vec::new()));
    };
    let text = utf8(path, Some(b))?;
    if text.trim().is_empty() {
        return Ok(Json::Object(Vec::new()));
    }
    Json::parse(text).map_err(|e| {
        anyhow::anyhow!(
            "{}: not valid JSON ({e}); fix it, then run this again",
            path.display()
        )
    })
}
