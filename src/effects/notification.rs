//! The text and hints of one desktop notification (S6.6, S6.8, S5.3). Pure.
//!
//! Summary: the window's name and the state in words (plain text, as the freedesktop spec wants
//! it). Body: what the most urgent program reported, as far as the four display switches allow,
//! on one line, cut to [`BODY_MAX_CHARS`] characters, then markup-escaped.

use std::path::{Path, PathBuf};

use crate::ids::{PaneId, WindowId};
use crate::state::Subtask;
use crate::state::{AgentState, BlockedKind};

/// Longest body, in characters, before escaping (longer text ends with `…`).
pub const BODY_MAX_CHARS: usize = 200;
/// Longest summary, in characters.
pub const SUMMARY_MAX_CHARS: usize = 80;
/// The `app_name` sent with every notification.
pub const APP_NAME: &str = "thinkterm";
/// The desktop file looked for (`applications/thinkterm-sidecar.desktop`).
pub const DESKTOP_ENTRY: &str = "thinkterm-sidecar";

/// S5.3's four display switches: a config table, declared with the other keys.
pub use crate::config::DisplaySwitches;

/// Why a notification is sent (S6.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NoteKind {
    /// The window finished its work.
    Done,
    /// A pane waits for the person.
    Blocked,
    /// A pane stopped on an error.
    Error,
    /// A message someone sent about a pane (`thinkterm-sidecar notify`).
    Message,
}

impl NoteKind {
    /// The state in words, as the summary shows it.
    pub fn words(self) -> &'static str {
        match self {
            NoteKind::Done => "finished",
            NoteKind::Blocked => "waiting for you",
            NoteKind::Error => "stopped on an error",
            NoteKind::Message => "message",
        }
    }

    /// The wire word (`done`, `blocked`, `error`), for a note relayed between sidecars.
    pub fn as_str(self) -> &'static str {
        match self {
            NoteKind::Done => "done",
            NoteKind::Blocked => "blocked",
            NoteKind::Error => "error",
            NoteKind::Message => "message",
        }
    }

    /// Parses the wire word.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "done" => Some(NoteKind::Done),
            "blocked" => Some(NoteKind::Blocked),
            "error" => Some(NoteKind::Error),
            "message" => Some(NoteKind::Message),
            _ => None,
        }
    }

    /// The notification's category hint (freedesktop `x-vendor.class` form).
    pub fn category(self) -> &'static str {
        match self {
            NoteKind::Done => "x-thinkterm.done",
            NoteKind::Blocked => "x-thinkterm.blocked",
            NoteKind::Error => "x-thinkterm.error",
            NoteKind::Message => "x-thinkterm.message",
        }
    }

    /// The kind for a window whose most urgent pane moved to `state`, if that is notified.
    pub fn for_state(state: AgentState) -> Option<Self> {
        match state {
            AgentState::Blocked => Some(NoteKind::Blocked),
            AgentState::Error => Some(NoteKind::Error),
            AgentState::Idle | AgentState::Working => None,
        }
    }
}

/// freedesktop urgency levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Urgency {
    /// 0.
    Low,
    /// 1.
    Normal,
    /// 2.
    Critical,
}

impl Urgency {
    /// The byte sent in the `urgency` hint.
    pub fn byte(self) -> u8 {
        match self {
            Urgency::Low => 0,
            Urgency::Normal => 1,
            Urgency::Critical => 2,
        }
    }
}

/// What is known about the window and its most urgent program when a notification is due.
#[derive(Clone, Debug, PartialEq)]
pub struct NoteInput {
    /// The window's name.
    pub window_name: String,
    /// The window.
    pub window: WindowId,
    /// Its most urgent pane (the one a click goes to).
    pub pane: PaneId,
    /// Why.
    pub kind: NoteKind,
    /// The title a message came with (its summary after the window's name).
    pub title: Option<String>,
    /// The program's report (`msg`), if any.
    pub message: Option<String>,
    /// What a blocked program waits for.
    pub waiting: Option<BlockedKind>,
    /// Progress 0..=100.
    pub progress: Option<u8>,
    /// Subtasks.
    pub subtasks: Vec<Subtask>,
}

/// One notification, ready to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// The window (one notification per window is shown at a time).
    pub window: WindowId,
    /// The pane, also sent in the `x-thinkterm-pane` hint.
    pub pane: PaneId,
    /// Plain-text summary.
    pub summary: String,
    /// One-line, escaped body (may be empty).
    pub body: String,
    /// `urgency` hint.
    pub urgency: Urgency,
    /// `category` hint.
    pub category: &'static str,
    /// `desktop-entry` hint, only when that desktop file is installed.
    pub desktop_entry: Option<String>,
    /// The connected machine the window is on (None: this computer); with `window`, what a
    /// later notification replaces and what a click goes to.
    pub machine: Option<String>,
}

/// The summary and the plain, one-line body (cut, not escaped) of a notification about
/// `input`: what [`build`] escapes for a desktop, and what a terminal notification says.
pub fn text(input: &NoteInput, switches: &DisplaySwitches) -> (String, String) {
    let name = one_line(&input.window_name);
    let name = if name.is_empty() {
        input.window.to_string()
    } else {
        name
    };
    let what = match (&input.kind, input.title.as_deref().map(one_line)) {
        (NoteKind::Message, Some(t)) if !t.is_empty() => t,
        (kind, _) => kind.words().to_string(),
    };
    let summary = cut(&format!("{name}: {what}"), SUMMARY_MAX_CHARS);

    let mut parts: Vec<String> = Vec::new();
    if switches.waiting_reason && input.kind == NoteKind::Blocked {
        if let Some(k) = input.waiting {
            parts.push(waiting_words(k).to_string());
        }
    }
    if switches.description || input.kind == NoteKind::Message {
        if let Some(m) = input
            .message
            .as_deref()
            .map(one_line)
            .filter(|m| !m.is_empty())
        {
            parts.push(m);
        }
    }
    if switches.progress {
        if let Some(p) = input.progress {
            parts.push(format!("{}%", p.min(100)));
        }
    }
    if switches.subtasks && !input.subtasks.is_empty() {
        parts.push(subtask_line(&input.subtasks));
    }
    (summary, cut(&parts.join(" · "), BODY_MAX_CHARS))
}

/// Builds the notification. `desktop_entry` is [`installed_desktop_entry`]'s answer.
pub fn build(input: &NoteInput, switches: &DisplaySwitches, desktop_entry: Option<&str>) -> Note {
    let (summary, body) = text(input, switches);
    let body = escape_markup(&body);

    Note {
        window: input.window,
        pane: input.pane,
        summary,
        body,
        urgency: if input.kind == NoteKind::Error {
            Urgency::Critical
        } else {
            Urgency::Normal
        },
        category: input.kind.category(),
        desktop_entry: desktop_entry.map(str::to_string),
        machine: None,
    }
}

fn waiting_words(kind: BlockedKind) -> &'static str {
    match kind {
        BlockedKind::Permission => "Permission",
        BlockedKind::Question => "Question",
        BlockedKind::Auth => "Sign-in",
    }
}

fn subtask_line(subtasks: &[Subtask]) -> String {
    let count = |s: AgentState| subtasks.iter().filter(|t| t.state == s).count();
    let mut line = format!("{} subtasks", subtasks.len());
    for (n, word) in [
        (count(AgentState::Blocked), "waiting"),
        (count(AgentState::Error), "failed"),
        (count(AgentState::Working), "working"),
    ] {
        if n > 0 {
            line.push_str(&format!(", {n} {word}"));
        }
    }
    line
}

/// Folds text onto one line: control characters and line breaks become spaces, runs of
/// whitespace one space, ends trimmed.
pub fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let c = if c.is_control() || c.is_whitespace() {
            ' '
        } else {
            c
        };
        if c == ' ' && (out.is_empty() || out.ends_with(' ')) {
            continue;
        }
        out.push(c);
    }
    out.truncate(out.trim_end().len());
    out
}

/// Cuts to at most `max` characters, ending with `…` when something was cut.
pub fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.truncate(out.trim_end().len());
    out.push('…');
    out
}

/// Escapes the body markup the freedesktop spec allows: `&`, `<`, `>`.
pub fn escape_markup(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// The XDG data dirs in search order: `$XDG_DATA_HOME` (or `~/.local/share`), then
/// `$XDG_DATA_DIRS` (or `/usr/local/share:/usr/share`).
pub fn xdg_data_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    match std::env::var_os("XDG_DATA_HOME").map(PathBuf::from) {
        Some(p) if p.is_absolute() => dirs.push(p),
        _ => {
            if let Some(home) = std::env::var_os("HOME") {
                dirs.push(PathBuf::from(home).join(".local/share"));
            }
        }
    }
    let list = std::env::var("XDG_DATA_DIRS")
        .ok()
        .filter(|s| !s.is_empty());
    let list = list.unwrap_or_else(|| "/usr/local/share:/usr/share".to_string());
    dirs.extend(
        list.split(':')
            .map(PathBuf::from)
            .filter(|p| p.is_absolute()),
    );
    dirs
}

/// `Some(name)` when `applications/NAME.desktop` exists in one of `dirs`.
pub fn desktop_entry_in(dirs: &[PathBuf], name: &str) -> Option<String> {
    let file = format!("{name}.desktop");
    let found = dirs
        .iter()
        .any(|d| Path::new(d).join("applications").join(&file).is_file());
    found.then(|| name.to_string())
}

/// [`DESKTOP_ENTRY`] if its desktop file is installed in the usual XDG data dirs.
pub fn installed_desktop_entry() -> Option<String> {
    desktop_entry_in(&xdg_data_dirs(), DESKTOP_ENTRY)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(kind: NoteKind) -> NoteInput {
        NoteInput {
            window_name: "build".into(),
            window: WindowId(2),
            pane: PaneId(5),
            kind,
            title: None,
            message: Some("Run cargo test?".into()),
            waiting: Some(BlockedKind::Permission),
            progress: Some(40),
            subtasks: vec![
                Subtask {
                    id: "a".into(),
                    state: AgentState::Blocked,
                    done: false,
                    msg: None,
                },
                Subtask {
                    id: "b".into(),
                    state: AgentState::Idle,
                    done: true,
                    msg: None,
                },
            ],
        }
    }

    #[test]
    fn summary_body_and_hints_of_a_blocked_window() {
        let n = build(&input(NoteKind::Blocked), &DisplaySwitches::default(), None);
        assert_eq!(n.summary, "build: waiting for you");
        assert_eq!(
            n.body,
            "Permission · Run cargo test? · 40% · 2 subtasks, 1 waiting"
        );
        assert_eq!(n.urgency, Urgency::Normal);
        assert_eq!(n.category, "x-thinkterm.blocked");
        assert_eq!(
            (n.pane, n.window, n.desktop_entry),
            (PaneId(5), WindowId(2), None)
        );
    }

    #[test]
    fn each_switch_removes_its_part_and_errors_are_critical() {
        let all_off = DisplaySwitches {
            description: false,
            waiting_reason: false,
            progress: false,
            subtasks: false,
        };
        assert_eq!(build(&input(NoteKind::Blocked), &all_off, None).body, "");
        let only_desc = DisplaySwitches {
            description: true,
            ..all_off
        };
        assert_eq!(
            build(&input(NoteKind::Blocked), &only_desc, None).body,
            "Run cargo test?"
        );
        let only_wait = DisplaySwitches {
            waiting_reason: true,
            ..all_off
        };
        assert_eq!(
            build(&input(NoteKind::Blocked), &only_wait, None).body,
            "Permission"
        );
        // The waiting reason belongs to blocked notes only.
        assert_eq!(build(&input(NoteKind::Done), &only_wait, None).body, "");
        let e = build(
            &input(NoteKind::Error),
            &DisplaySwitches::default(),
            Some("thinkterm-sidecar"),
        );
        assert_eq!(e.urgency, Urgency::Critical);
        assert_eq!(e.summary, "build: stopped on an error");
        assert_eq!(e.desktop_entry.as_deref(), Some("thinkterm-sidecar"));
    }

    #[test]
    fn body_is_one_line_cut_then_escaped() {
        let mut i = input(NoteKind::Done);
        i.message = Some("<b>fix &\n\tthe\r\nbuild</b>\u{1b}[31m".into());
        let only_desc = DisplaySwitches {
            description: true,
            waiting_reason: false,
            progress: false,
            subtasks: false,
        };
        assert_eq!(
            build(&i, &only_desc, None).body,
            "&lt;b&gt;fix &amp; the build&lt;/b&gt; [31m"
        );
        i.message = Some("&".repeat(500));
        let body = build(&i, &only_desc, None).body;
        assert_eq!(body, format!("{}…", "&amp;".repeat(BODY_MAX_CHARS - 1)));
        i.window_name = "x".repeat(300);
        assert_eq!(
            build(&i, &only_desc, None).summary.chars().count(),
            SUMMARY_MAX_CHARS
        );
    }

    #[test]
    fn switches_deserialise_with_defaults() {
        let s: DisplaySwitches = toml::from_str("progress = false").expect("valid toml");
        assert_eq!(
            s,
            DisplaySwitches {
                progress: false,
                ..DisplaySwitches::default()
            }
        );
    }

    #[test]
    fn desktop_entry_only_when_the_file_exists() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dirs = vec![dir.path().to_path_buf()];
        assert_eq!(desktop_entry_in(&dirs, DESKTOP_ENTRY), None);
        std::fs::create_dir_all(dir.path().join("applications")).expect("mkdir");
        std::fs::write(
            dir.path().join("applications/thinkterm-sidecar.desktop"),
            "[Desktop Entry]\n",
        )
        .expect("write");
        assert_eq!(
            desktop_entry_in(&dirs, DESKTOP_ENTRY).as_deref(),
            Some(DESKTOP_ENTRY)
        );
    }
}
