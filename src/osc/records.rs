//! The per-pane table of OSC 7501 records (S7.2, S7.4, S7.5, S3.2): the program's own record
//! and its subtasks, what the program as a whole currently says, and the lifecycle hooks the
//! pane tracker calls. Pure: no clock but the `now_unix` stamps it is handed.
//!
//! `done` is a record state of its own ([`RecordState::Done`]); it maps to
//! [`AgentState::Idle`] with an unseen result ([`RecordState::unseen_result`]), which the thread
//! rollup shows as its `done` mark until the pane is looked at.
//!
//! Choices where the spec is silent: [`Records::end_ongoing`] removes `idle` records as well as
//! `working`/`blocked` ones (the program that said "idle" has gone; only results wait to be
//! seen); when no own record exists, an `idle` subtask ranks below `done`; ties between equally
//! urgent subtasks go to the most recently updated.

use std::collections::BTreeMap;

use crate::osc::status_report::{RecordId, ReportState, StatusReport};
use crate::state::{AgentState, BlockedKind};

/// Most records per pane (S7.2).
pub const MAX_RECORDS: usize = 256;

/// The state a record holds (a report's state without `clear`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordState {
    /// Busy.
    Working,
    /// Waiting for the person.
    Blocked,
    /// Ready for input.
    Idle,
    /// Finished, result not yet seen.
    Done,
    /// Failed and stopped.
    Error,
}

impl RecordState {
    /// The pane state it means (`done` is idle with an unseen result).
    pub fn agent_state(self) -> AgentState {
        match self {
            RecordState::Working => AgentState::Working,
            RecordState::Blocked => AgentState::Blocked,
            RecordState::Idle | RecordState::Done => AgentState::Idle,
            RecordState::Error => AgentState::Error,
        }
    }

    /// Whether it is a result nobody has seen yet (`done`, `error`).
    pub fn unseen_result(self) -> bool {
        matches!(self, RecordState::Done | RecordState::Error)
    }

    /// Whether it is ongoing work that ends with the program (`working`, `blocked`).
    pub fn ongoing(self) -> bool {
        matches!(self, RecordState::Working | RecordState::Blocked)
    }

    /// Urgency for S7.5 (higher stands for the program first).
    fn urgency(self) -> u8 {
        match self {
            RecordState::Error => 4,
            RecordState::Blocked => 3,
            RecordState::Working => 2,
            RecordState::Done => 1,
            RecordState::Idle => 0,
        }
    }

    /// The wire word.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordState::Working => "working",
            RecordState::Blocked => "blocked",
            RecordState::Idle => "idle",
            RecordState::Done => "done",
            RecordState::Error => "error",
        }
    }

    fn from_report(s: ReportState) -> Option<Self> {
        Some(match s {
            ReportState::Working => RecordState::Working,
            ReportState::Blocked => RecordState::Blocked,
            ReportState::Idle => RecordState::Idle,
            ReportState::Done => RecordState::Done,
            ReportState::Error => RecordState::Error,
            ReportState::Clear => return None,
        })
    }
}

/// One record: the last report for its id, whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// `None` for the program's own record.
    pub id: Option<RecordId>,
    /// Its state.
    pub state: RecordState,
    /// What a blocked record waits for.
    pub kind: Option<BlockedKind>,
    /// 0–100, `None` indeterminate.
    pub progress: Option<u8>,
    /// The program's short name.
    pub app: Option<String>,
    /// Heading.
    pub title: Option<String>,
    /// What it does or did.
    pub msg: Option<String>,
    /// When the report arrived (unix seconds, as the caller passed it).
    pub updated_unix: u64,
    /// Arrival order, for "least recently updated" (unix seconds are too coarse).
    seq: u64,
}

/// What the program as a whole says (S7.5): its own record, or the most urgent subtask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Effective<'a> {
    /// The record that stands for the program.
    pub record: &'a Record,
    /// The app name: the standing record's, else the newest record that names one.
    pub app: Option<&'a str>,
}

impl<'a> Effective<'a> {
    /// The record state.
    pub fn state(&self) -> RecordState {
        self.record.state
    }
    /// The pane state.
    pub fn agent_state(&self) -> AgentState {
        self.record.state.agent_state()
    }
    /// What a blocked program waits for.
    pub fn kind(&self) -> Option<BlockedKind> {
        self.record.kind
    }
    /// Progress 0–100.
    pub fn progress(&self) -> Option<u8> {
        self.record.progress
    }
    /// The message.
    pub fn msg(&self) -> Option<&'a str> {
        self.record.msg.as_deref()
    }
    /// The title.
    pub fn title(&self) -> Option<&'a str> {
        self.record.title.as_deref()
    }
}

/// The records of one pane, keyed by id path (`""` is the program's own).
#[derive(Clone, Debug, Default)]
pub struct Records {
    map: BTreeMap<String, Record>,
    next_seq: u64,
}

impl Records {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies a report: replaces its record whole, or for `clear` removes it and everything
    /// under it. Returns whether the table changed.
    pub fn apply(&mut self, report: &StatusReport, now_unix: u64) -> bool {
        let Some(state) = RecordState::from_report(report.state) else {
            return self.clear(report.id.as_ref());
        };
        let key = report
            .id
            .as_ref()
            .map(|i| i.as_str().to_owned())
            .unwrap_or_default();
        let seq = self.next_seq;
        self.next_seq += 1;
        let record = Record {
            id: report.id.clone(),
            state,
            kind: report.kind,
            progress: report.progress,
            app: report.app.clone(),
            title: report.title.clone(),
            msg: report.msg.clone(),
            updated_unix: now_unix,
            seq,
        };
        let changed = !matches!(self.map.get(&key), Some(old) if same(old, &record));
        self.map.insert(key, record);
        while self.map.len() > MAX_RECORDS {
            self.drop_oldest();
        }
        changed
    }

    fn drop_oldest(&mut self) {
        let oldest = self
            .map
            .iter()
            .min_by_key(|(_, r)| r.seq)
            .map(|(k, _)| k.clone());
        if let Some(k) = oldest {
            self.map.remove(&k);
        }
    }

    /// `clear`: the program's own id clears everything; a path clears itself and its subtree.
    fn clear(&mut self, id: Option<&RecordId>) -> bool {
        let before = self.map.len();
        match id {
            None => self.map.clear(),
            Some(id) => self
                .map
                .retain(|_, r| !r.id.as_ref().is_some_and(|rid| rid.is_within(id))),
        }
        self.map.len() != before
    }

    /// The program exited or the shell's next prompt started (S3.2, S7.4): ongoing records
    /// (`working`, `blocked`) and `idle` ones end; `done`/`error` stay. Returns whether any went.
    pub fn end_ongoing(&mut self) -> bool {
        let before = self.map.len();
        self.map.retain(|_, r| r.state.unseen_result());
        self.map.len() != before
    }

    /// The pane was looked at: `done` and `error` records go. Returns whether any went.
    pub fn mark_seen(&mut self) -> bool {
        let before = self.map.len();
        self.map.retain(|_, r| !r.state.unseen_result());
        self.map.len() != before
    }

    /// Forgets everything (the pane's program changed or the pane closed).
    pub fn reset(&mut self) {
        self.map.clear();
    }

    /// Whether no record is in force.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// How many records there are.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// The program's own record.
    pub fn own(&self) -> Option<&Record> {
        self.map.get("")
    }

    /// Looks a record up by id path (`""` for the own record).
    pub fn get(&self, id: &str) -> Option<&Record> {
        self.map.get(id)
    }

    /// The subtasks, in path order (parents before their children).
    pub fn subtasks(&self) -> impl Iterator<Item = &Record> {
        self.map.values().filter(|r| r.id.is_some())
    }

    /// What the program says as a whole, or `None` when no record is in force.
    pub fn effective(&self) -> Option<Effective<'_>> {
        let record = self
            .own()
            .or_else(|| self.subtasks().max_by_key(|r| (r.state.urgency(), r.seq)))?;
        let app = record.app.as_deref().or_else(|| {
            self.map
                .values()
                .filter(|r| r.app.is_some())
                .max_by_key(|r| r.seq)
                .and_then(|r| r.app.as_deref())
        });
        Some(Effective { record, app })
    }
}

fn same(a: &Record, b: &Record) -> bool {
    a.state == b.state
        && a.kind == b.kind
        && a.progress == b.progress
        && a.app == b.app
        && a.title == b.title
        && a.msg == b.msg
}

#[cfg(test)]
#[path = "records_tests.rs"]
mod tests;
