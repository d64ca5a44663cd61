//! The vocabulary of states shared by every layer (S1): what an agent in a pane is doing, and why
//! it waits. Parsing from the wire happens at the edges; past them only these enums travel.

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
