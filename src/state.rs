//! The vocabulary shared by every layer (S1, S4, S6): what an agent in a pane is doing and why it
//! waits, where that came from, a window's mark, a program's subtasks, the two sounds. Parsing
//! from the wire happens at the edges; past them only these types travel. The wire format
//! (`ipc::schema`) uses them too, but the core never imports the wire format.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The state of an agent in a pane (S1.1). "No state" (`unknown`) is `Option::None` at the use site.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum AgentState {
    /// Ready for input.
    Idle,
    /// Busy on a turn.
    Working,
    /// Waiting for the person's decision.
    Blocked,
    /// Failed and stopped (only from programs that report it).
    Error,
}

impl AgentState {
    /// The lowercase word used on the wire, in tmux options and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentState::Idle => "idle",
            AgentState::Working => "working",
            AgentState::Blocked => "blocked",
            AgentState::Error => "error",
        }
    }
}

impl fmt::Display for AgentState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a blocked program waits for (S7 `kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlockedKind {
    /// Permission to run a tool or command.
    Permission,
    /// An answer to a question.
    Question,
    /// A sign-in.
    Auth,
}

impl BlockedKind {
    /// The wire word.
    pub fn as_str(self) -> &'static str {
        match self {
            BlockedKind::Permission => "permission",
            BlockedKind::Question => "question",
            BlockedKind::Auth => "auth",
        }
    }

    /// Parses the wire word.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "permission" => Some(BlockedKind::Permission),
            "question" => Some(BlockedKind::Question),
            "auth" => Some(BlockedKind::Auth),
            _ => None,
        }
    }
}

/// A window's mark (S4), as the status line and the panel show it.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum WindowMark {
    /// Some pane stopped on an error (a red cross, not the amber mark).
    Error,
    /// Some pane is blocked: waiting for the person.
    Attention,
    /// Some pane is working, shows progress or a title spinner.
    Running,
    /// It was running and stopped while nobody looked.
    Done,
    /// None of the above.
    #[default]
    Idle,
}

impl WindowMark {
    /// The wire word (`attention|error|running|done|idle`).
    pub fn as_str(self) -> &'static str {
        match self {
            WindowMark::Error => "error",
            WindowMark::Attention => "attention",
            WindowMark::Running => "running",
            WindowMark::Done => "done",
            WindowMark::Idle => "idle",
        }
    }
}

/// Where a pane's current state came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StateSource {
    /// An OSC 7501 status report in force.
    StatusReport,
    /// A matching screen rule.
    ScreenRule,
    /// A known agent with no matching rule: idle by fallback.
    ScreenFallback,
    /// The `THINKTERM_AGENT` user variable.
    UserVar,
    /// OSC 9;4 progress or a title spinner.
    Native,
    /// Nothing decided it.
    None,
}

/// One subtask of a reporting program (S7 `id` paths).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subtask {
    /// The record's id path (`build/test`).
    pub id: String,
    /// Its state.
    pub state: AgentState,
    /// Its `done` flag: finished, result not yet seen.
    #[serde(default)]
    pub done: bool,
    /// Its message, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg: Option<String>,
}

/// One of the two sounds (S6.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sound {
    /// A window went working → idle after at least 5 s of work.
    Done,
    /// A pane began waiting for a decision.
    Waiting,
}

/// What a program reported about its work (S7: the status report's `msg`, `title`, `kind`,
/// `progress` and subtasks), kept as one piece from the records table to the pane's published
/// status; the wire rows, events and notifications are cut from it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// The one-line message.
    pub msg: Option<String>,
    /// The heading.
    pub title: Option<String>,
    /// What a blocked program waits for.
    pub kind: Option<BlockedKind>,
    /// Progress 0..=100.
    pub progress: Option<u8>,
    /// Every subtask record.
    pub subtasks: Vec<Subtask>,
}
