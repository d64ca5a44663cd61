//! The plain facts a [`Tracker`](super::Tracker) is fed. The daemon converts what the process
//! probe, the rule engine and the escape-sequence parsers found into these; nothing here depends
//! on those modules, so the core stays testable on its own.

use crate::state::{AgentState, Report};

/// One input to a pane's state machine. Each carries the whole current value of its source
/// (not a delta): the tracker keeps the latest of each and re-decides from all of them.
#[derive(Clone, Debug, PartialEq)]
pub enum PaneInput {
    /// What the foreground probe found (S3.4).
    Foreground(ForegroundInput),
    /// The screen rules' verdict for the pane's agent (S3.5); `None` forgets the last one.
    Screen(Option<ScreenVerdict>),
    /// The status report in force (S3.1, S7.5 already applied); `None` when no report is in force.
    Report(Option<ReportSummary>),
    /// The `THINKTERM_AGENT` value (S8); `None` when the pane has none (or it was cleared, S8.1).
    UserVar(Option<UserVarReport>),
    /// OSC 9;4 progress as last reported; `None` after state 0 (removed) or a program change.
    Progress(Option<NativeProgress>),
    /// Whether the pane's title starts with a spinner glyph.
    TitleSpinner(bool),
    /// The pane was looked at (active pane of a looked-at window): its unseen result is seen.
    Seen,
    /// Time passed: lets a debounce deadline ([`Tracker::next_deadline`](super::Tracker::next_deadline)) expire.
    Tick,
}

/// The foreground probe's result for one pane.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ForegroundInput {
    /// The agent id matched from the live foreground job (process name, argv, wrapper package);
    /// on a process-less pane the daemon may put a screen-fingerprint match here.
    pub agent: Option<String>,
    /// Pid of the foreground job's leader (`tpgid`), when it could be read.
    pub pid: Option<u32>,
    /// False for panes whose program hides what runs behind it (ssh, mosh, nested tmux, serial).
    pub observable: bool,
    /// The foreground is the pane's own shell again (no program runs).
    pub at_shell: bool,
}

/// A screen-rule verdict (the rule engine's answer for the pane's agent).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ScreenVerdict {
    /// The state the verdict names; `None` for a rule whose state is `unknown`.
    pub state: Option<AgentState>,
    /// The id of the rule that matched (`None` for the fallback).
    pub rule: Option<String>,
    /// No rule matched: the known agent is idle by fallback.
    pub fallback: bool,
    /// The matched rule says "do not update the state": the verdict is ignored.
    pub skip_state_update: bool,
}

/// The state of the status report in force (S7): the records table's own vocabulary.
pub use crate::osc::records::RecordState as ReportState;

/// The status report that speaks for the pane now (the program's own record, or its most urgent
/// subtask when only subtasks remain).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportSummary {
    /// Its state.
    pub state: ReportState,
    /// The program's short name: names the agent when nothing else does.
    pub app: Option<String>,
    /// What it reported about its work.
    pub report: Report,
}

impl ReportSummary {
    /// A bare report of `state` with every optional key absent.
    pub fn new(state: ReportState) -> Self {
        ReportSummary {
            state,
            app: None,
            report: Report::default(),
        }
    }
}

/// A `THINKTERM_AGENT` value, already parsed and judged by the osc layer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserVarReport {
    /// The reported agent id.
    pub agent: String,
    /// The reported state; `None` for a state word the grammar does not know (drives nothing).
    pub state: Option<AgentState>,
    /// Whether the report still has authority (S8.2: not older than 6 h and not from the future,
    /// or idle, or without `ts`). Without it the state drives nothing, and on a process-less pane
    /// the identity is dropped too.
    pub authoritative: bool,
}

/// The OSC 9;4 progress state (`ESC ] 9 ; 4 ; st ; pr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressState {
    /// st=1: a normal progress bar.
    Normal,
    /// st=2: an error.
    Error,
    /// st=3: indeterminate.
    Indeterminate,
    /// st=4: paused / warning (still shown, so it counts as running).
    Paused,
}

/// An OSC 9;4 progress report in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NativeProgress {
    /// Its state.
    pub state: ProgressState,
    /// Percent 0..=100 when given.
    pub percent: Option<u8>,
}
