//! What a pane's state machine publishes: the status the daemon shows, and the effects it returns.

use std::time::Instant;

use crate::state::{AgentState, Report, StateSource};

/// The published, arbitrated status of one pane.
#[derive(Clone, Debug, PartialEq)]
pub struct PaneStatus {
    /// The agent running in the pane, if any is known.
    pub agent: Option<String>,
    /// Its state; `None` = unknown (no state).
    pub state: Option<AgentState>,
    /// Which source decided `state`.
    pub source: StateSource,
    /// The screen rule that decided, when one did.
    pub rule: Option<String>,
    /// What the program reports about its work; `progress` also from OSC 9;4.
    pub report: Report,
    /// A status report said `done` and nobody has seen it yet.
    pub unseen_result: bool,
    /// The state or the agent last changed at this instant (time in state).
    pub since: Instant,
}

impl PaneStatus {
    /// A pane with nothing known, since `now`.
    pub fn unknown(now: Instant) -> Self {
        PaneStatus {
            agent: None,
            state: None,
            source: StateSource::None,
            rule: None,
            report: Report::default(),
            unseen_result: false,
            since: now,
        }
    }

    /// A result the person has not seen: a report's `done`, or a report's `error` (both stay until
    /// someone looks, S3.2).
    pub fn has_result(&self) -> bool {
        self.unseen_result
            || (self.state == Some(AgentState::Error) && self.source == StateSource::StatusReport)
    }

    /// Everything but `since` is equal.
    pub(crate) fn same_content(&self, other: &PaneStatus) -> bool {
        self.agent == other.agent
            && self.state == other.state
            && self.source == other.source
            && self.rule == other.rule
            && self.report == other.report
            && self.unseen_result == other.unseen_result
    }
}

/// One change of the published status.
#[derive(Clone, Debug, PartialEq)]
pub struct PaneChange {
    /// Before.
    pub old: PaneStatus,
    /// After.
    pub new: PaneStatus,
}

impl PaneChange {
    /// The state or the agent changed: a transition, worth exactly one `StateEvent`. Other changes
    /// (message, progress, rule) only refresh what is shown.
    pub fn is_transition(&self) -> bool {
        self.old.state != self.new.state || self.old.agent != self.new.agent
    }
}

/// What the daemon must do after an input.
#[derive(Clone, Debug, PartialEq)]
pub enum PaneEffect {
    /// The published status changed; feed `new` to the window rollup, refresh the pane's tmux
    /// option, and emit a `StateEvent` when [`PaneChange::is_transition`].
    Changed(Box<PaneChange>),
    /// The foreground program left the pane (exited, or another took its place): reports of
    /// ongoing work (`working`, `blocked`) end now (S7.4); the daemon tells the records table and
    /// feeds the new summary back.
    ProgramExited {
        /// The leader pid of the program that left.
        pid: u32,
    },
}
