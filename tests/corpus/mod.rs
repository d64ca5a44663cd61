//! The recorded frames as the rules' test corpus: every `<agent>/<version>/NNN-state.txt` with
//! its `.json` ground truth ([`frames`]), the variants real agent updates make of a frame
//! ([`mutate`], laid out again by [`layout`]) and the tables that say how the bundled rules do
//! on both ([`score`]).
#![allow(dead_code)] // the report test uses parts the strict tests do not

mod checks;
pub mod layout;
pub mod mutate;
pub mod score;

use super::support::fixtures;
use std::path::{Path, PathBuf};

/// One recorded frame with its ground truth.
#[derive(Clone, Debug)]
pub struct Frame {
    /// The `.txt` file.
    pub path: PathBuf,
    /// The fixture folder's agent name (`claude-code`), or the `.json`'s `agent`.
    pub agent: String,
    /// The agent's version (the version folder's name).
    pub version: String,
    /// The labelled state: `working`, `blocked` or `idle`.
    pub state: String,
    /// The moment of the capture script (`permission-prompt`).
    pub label: String,
    /// Pane size when captured.
    pub width: usize,
    /// Pane rows when captured.
    pub height: usize,
    /// The screen as `capture-pane -p -J` printed it.
    pub screen: String,
    /// The title the agent itself sent (None when the pane's title then was not one the agent
    /// sent, e.g. tmux's host name before the first title).
    pub title: Option<String>,
}

impl Frame {
    /// `agent/version/NNN-state.txt`, for messages.
    pub fn name(&self) -> String {
        let mut parts: Vec<String> = self
            .path
            .iter()
            .rev()
            .take(3)
            .map(|p| p.to_string_lossy().to_string())
            .collect();
        parts.reverse();
        parts.join("/")
    }

    /// `WxH`.
    pub fn size(&self) -> String {
        format!("{}x{}", self.width, self.height)
    }
}

/// The titles an agent really sent, from its folder's escapes.md ("Titles (unique…): [...]");
/// None when the folder has none (saved panes: their `title` is what the program sent).
pub fn sent_titles(version_dir: &Path) -> Option<Vec<String>> {
    let md = version_dir.join("escapes.md");
    if !md.exists() {
        return None;
    }
    let text =
        std::fs::read_to_string(&md).unwrap_or_else(|e| panic!("fixture {}: {e}", md.display()));
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Titles (unique") {
            if let Some(i) = rest.find('[') {
                if let Ok(v) = serde_json::from_str::<Vec<String>>(&rest[i..]) {
                    out.extend(v);
                }
            }
        }
    }
    Some(out)
}

/// Every frame of every agent and version, in path order; fails when there is none.
pub fn frames() -> Vec<Frame> {
    frames_under(&fixtures::root())
}

/// The frames of the paced recordings (`tests/fixtures/paced`: the load bench's captures, each
/// with its own frames and labels), in path order; fails when there is none.
pub fn paced_frames() -> Vec<Frame> {
    let root = Path::new(fixtures::AGENTS).with_file_name("paced");
    assert!(
        root.is_dir(),
        "fixture directory missing: {}",
        root.display()
    );
    frames_under(&root)
}

fn frames_under(root: &Path) -> Vec<Frame> {
    let mut out = Vec::new();
    for a in fixtures::sorted_dirs(root) {
        for v in fixtures::sorted_dirs(&a) {
            out.extend(version_frames(&a, &v));
        }
    }
    assert!(
        !out.is_empty(),
        "no fixture frames under {}",
        root.display()
    );
    out
}

fn version_frames(agent_dir: &Path, v: &Path) -> Vec<Frame> {
    let titles = sent_titles(v);
    let mut txts: Vec<PathBuf> = std::fs::read_dir(v)
        .unwrap_or_else(|e| panic!("fixture {}: {e}", v.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            n.ends_with(".txt") && n.as_bytes().first().is_some_and(|b| b.is_ascii_digit())
        })
        .collect();
    txts.sort();
    let name = |p: &Path| {
        p.file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string()
    };
    txts.into_iter()
        .map(|t| {
            let json = t.with_extension("json");
            let text = std::fs::read_to_string(&json)
                .unwrap_or_else(|e| panic!("fixture {}: {e}", json.display()));
            let meta: serde_json::Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("fixture {}: {e}", json.display()));
            let num = |k: &str| meta[k].as_u64().unwrap_or(0) as usize;
            Frame {
                agent: meta["agent"]
                    .as_str()
                    .map_or_else(|| name(agent_dir), str::to_string),
                version: name(v),
                state: meta["state"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{}: no state", json.display()))
                    .to_string(),
                label: meta["label"].as_str().unwrap_or("").to_string(),
                width: num("width"),
                height: num("height"),
                screen: std::fs::read_to_string(&t)
                    .unwrap_or_else(|e| panic!("fixture {}: {e}", t.display())),
                title: meta["title"]
                    .as_str()
                    .map(str::to_string)
                    .filter(|t| titles.as_ref().is_none_or(|ts| ts.contains(t))),
                path: t,
            }
        })
        .collect()
}

/// The states a frame may be given: its label, and the labels of frames of the same agent with
/// the same screen and title (a frame taken after the moment it names: both cannot be right).
pub fn accepted<'a>(frames: &'a [Frame], f: &'a Frame) -> Vec<&'a str> {
    let mut v: Vec<&str> = frames
        .iter()
        .filter(|o| o.agent == f.agent && o.screen == f.screen && o.title == f.title)
        .map(|o| o.state.as_str())
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}
