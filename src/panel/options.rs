//! The panel's view options (S5.7, S5.8): grouping, sort, which states are shown and the four
//! display switches. They are saved to a small JSON state file so every panel opens the same
//! way, and the notifications can read the same display switches.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// How cards are grouped (S5.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Grouping {
    /// Needs attention, running, done, idle, unknown; each heading with its count.
    #[default]
    State,
    /// Session and window headings; agents without a window under `Other`.
    Session,
    /// One flat list.
    None,
}

impl Grouping {
    /// The next choice, for the menu.
    pub fn next(self) -> Self {
        match self {
            Grouping::State => Grouping::Session,
            Grouping::Session => Grouping::None,
            Grouping::None => Grouping::State,
        }
    }

    /// The menu's word.
    pub fn label(self) -> &'static str {
        match self {
            Grouping::State => "State",
            Grouping::Session => "Session",
            Grouping::None => "None",
        }
    }
}

/// Order of cards inside a group (S5.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SortOrder {
    /// Session, window, agent, pane: rows never jump when states change.
    #[default]
    Fixed,
    /// Last state change first.
    Recent,
}

impl SortOrder {
    /// The other choice, for the menu.
    pub fn next(self) -> Self {
        match self {
            SortOrder::Fixed => SortOrder::Recent,
            SortOrder::Recent => SortOrder::Fixed,
        }
    }

    /// The menu's word.
    pub fn label(self) -> &'static str {
        match self {
            SortOrder::Fixed => "Fixed",
            SortOrder::Recent => "Recent activity",
        }
    }
}

/// The four kinds of card the show checkboxes filter (unknown cards are always shown).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShowKind {
    /// Needs attention (blocked or error).
    Attention,
    /// Working.
    Running,
    /// Finished, result unseen.
    Done,
    /// Idle.
    Idle,
}

/// Which kinds of card are shown (S5.8); at least one is always on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ShowStates {
    /// Show working agents.
    pub running: bool,
    /// Show blocked and failed agents.
    pub attention: bool,
    /// Show agents with an unseen result.
    pub done: bool,
    /// Show idle agents.
    pub idle: bool,
}

impl Default for ShowStates {
    fn default() -> Self {
        ShowStates {
            running: true,
            attention: true,
            done: true,
            idle: true,
        }
    }
}

impl ShowStates {
    /// Whether this kind is shown.
    pub fn get(&self, kind: ShowKind) -> bool {
        match kind {
            ShowKind::Attention => self.attention,
            ShowKind::Running => self.running,
            ShowKind::Done => self.done,
            ShowKind::Idle => self.idle,
        }
    }

    fn slot(&mut self, kind: ShowKind) -> &mut bool {
        match kind {
            ShowKind::Attention => &mut self.attention,
            ShowKind::Running => &mut self.running,
            ShowKind::Done => &mut self.done,
            ShowKind::Idle => &mut self.idle,
        }
    }

    /// Flips one checkbox; refuses (returns false) to hide the last one shown.
    pub fn toggle(&mut self, kind: ShowKind) -> bool {
        let shown = [self.running, self.attention, self.done, self.idle]
            .iter()
            .filter(|b| **b)
            .count();
        if self.get(kind) && shown <= 1 {
            return false;
        }
        let slot = self.slot(kind);
        *slot = !*slot;
        true
    }
}

/// The four display switches (S5.3), shared with the notifications.
pub use crate::effects::notification::DisplaySwitches;

/// Everything the view menu chooses; saved as JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ViewOptions {
    /// Grouping.
    pub grouping: Grouping,
    /// Sort order inside a group.
    pub sort: SortOrder,
    /// Which kinds of card are shown.
    pub show: ShowStates,
    /// The four display switches.
    pub display: DisplaySwitches,
    /// Machines whose agents are hidden (S5.8's machines section).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hidden_machines: Vec<String>,
}

/// `$XDG_STATE_HOME/thinkterm/panel.json`, where the view options live by default.
pub fn default_options_path() -> PathBuf {
    crate::paths::state_dir().join("panel.json")
}

impl ViewOptions {
    /// Loads the options; a missing file gives the defaults, a broken one an error naming it.
    pub fn load(path: &Path) -> anyhow::Result<ViewOptions> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ViewOptions::default()),
            Err(e) => return Err(e).with_context(|| format!("{}: cannot read", path.display())),
        };
        serde_json::from_str(&text)
            .with_context(|| format!("{}: not valid view options", path.display()))
    }

    /// Saves the options atomically (write beside, then rename), creating the folder.
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("{}: cannot create", dir.display()))?;
        }
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(self).context("encoding view options")?;
        std::fs::write(&tmp, text).with_context(|| format!("{}: cannot write", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("{}: cannot replace", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_shown_kind_cannot_be_hidden() {
        let mut s = ShowStates::default();
        assert!(s.toggle(ShowKind::Running));
        assert!(s.toggle(ShowKind::Done));
        assert!(s.toggle(ShowKind::Idle));
        assert!(
            !s.toggle(ShowKind::Attention),
            "hiding the last shown kind must be refused"
        );
        assert!(s.attention);
        assert!(s.toggle(ShowKind::Idle));
        assert!(s.toggle(ShowKind::Attention));
    }

    #[test]
    fn options_round_trip_through_the_file_and_missing_means_defaults() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("sub/panel.json");
        assert_eq!(
            ViewOptions::load(&path).expect("missing is fine"),
            ViewOptions::default()
        );
        let mut o = ViewOptions {
            grouping: Grouping::Session,
            sort: SortOrder::Recent,
            ..Default::default()
        };
        o.display.progress = false;
        o.save(&path).expect("save");
        assert_eq!(ViewOptions::load(&path).expect("load"), o);
        std::fs::write(&path, "{ not json").expect("write");
        let err = ViewOptions::load(&path).expect_err("broken file");
        assert!(format!("{err:#}").contains("panel.json"), "{err:#}");
    }

    #[test]
    fn partial_files_fill_in_defaults() {
        let o: ViewOptions =
            serde_json::from_str(r#"{"grouping":"none","display":{"progress":false}}"#)
                .expect("parse");
        assert_eq!(o.grouping, Grouping::None);
        assert!(!o.display.progress && o.display.description && o.display.subtasks);
        assert!(o.show.idle);
    }
}
