//! The per-pane state machine: keeps the latest fact of every source and re-decides the pane's
//! identity and state from all of them after each input (S3.1–S3.6), debouncing screen-inferred
//! transitions that would otherwise replay notifications on half-drawn frames.

use std::time::{Duration, Instant};

use super::input::{
    ForegroundInput, NativeProgress, PaneInput, ProgressState, ReportState, ReportSummary,
    ScreenVerdict, UserVarReport,
};
use super::status::{PaneChange, PaneEffect, PaneStatus};
use crate::state::AgentState;
use crate::state::StateSource;

/// How long a screen-inferred transition leaving `blocked`, or going `working`→`idle`, must hold
/// before it is published (S3.6): long enough to outlast a half-drawn frame.
pub const SCREEN_DEBOUNCE: Duration = Duration::from_millis(450);

/// Which program a `THINKTERM_AGENT` value speaks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Binding {
    /// It arrived while no program was known in the foreground (the probe lags the output): it
    /// belongs to the next program the probe sees.
    Next,
    /// It arrived while this program ran; it is forgotten when that program leaves.
    Pid(u32),
}

#[derive(Clone, Debug)]
struct HeldVar {
    report: UserVarReport,
    binding: Binding,
}

#[derive(Clone, Debug)]
struct HeldVerdict {
    verdict: ScreenVerdict,
    /// The agent the verdict was computed for: a verdict for another agent's manifest is stale.
    agent: Option<String>,
}

/// A screen-inferred state waiting out [`SCREEN_DEBOUNCE`].
#[derive(Clone, Debug)]
struct Pending {
    state: Option<AgentState>,
    agent: Option<String>,
    since: Instant,
}

/// One pane's state machine. Feed it with [`Tracker::on_input`]; read [`Tracker::status`].
#[derive(Clone, Debug)]
pub struct Tracker {
    fg: ForegroundInput,
    verdict: Option<HeldVerdict>,
    report: Option<ReportSummary>,
    /// The current report's `done` was seen; reset when the report changes.
    result_seen: bool,
    var: Option<HeldVar>,
    progress: Option<NativeProgress>,
    spinner: bool,
    published: PaneStatus,
    pending: Option<Pending>,
}

impl Tracker {
    /// A pane with nothing known yet.
    pub fn new(now: Instant) -> Self {
        Tracker {
            fg: ForegroundInput::default(),
            verdict: None,
            report: None,
            result_seen: false,
            var: None,
            progress: None,
            spinner: false,
            published: PaneStatus::unknown(now),
            pending: None,
        }
    }

    /// The status published now.
    pub fn status(&self) -> &PaneStatus {
        &self.published
    }

    /// When a debounced transition would be published if nothing changes: send
    /// [`PaneInput::Tick`] at (or after) that instant.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.pending.as_ref().map(|p| p.since + SCREEN_DEBOUNCE)
    }

    /// Takes one input at `now` and returns what changed, in order.
    pub fn on_input(&mut self, now: Instant, input: PaneInput) -> Vec<PaneEffect> {
        let mut fx = Vec::new();
        match input {
            PaneInput::Foreground(f) => self.set_foreground(f, &mut fx),
            PaneInput::Screen(Some(v)) if v.skip_state_update => {}
            PaneInput::Screen(v) => {
                let agent = self.identity();
                self.verdict = v.map(|verdict| HeldVerdict { verdict, agent });
            }
            PaneInput::Report(r) => {
                if r != self.report {
                    self.result_seen = false;
                }
                self.report = r;
            }
            PaneInput::UserVar(v) => {
                let binding = self.binding_now();
                self.var = v.map(|report| HeldVar { report, binding });
            }
            PaneInput::Progress(p) => self.progress = p,
            PaneInput::TitleSpinner(on) => self.spinner = on,
            PaneInput::Seen => self.result_seen = true,
            PaneInput::Tick => {}
        }
        self.decide(now, &mut fx);
        fx
    }

    fn binding_now(&self) -> Binding {
        match self.fg.pid {
            Some(pid) if !self.fg.at_shell => Binding::Pid(pid),
            _ => Binding::Next,
        }
    }

    fn set_foreground(&mut self, f: ForegroundInput, fx: &mut Vec<PaneEffect>) {
        let program = |g: &ForegroundInput| g.pid.filter(|_| !g.at_shell);
        if let Some(old) = program(&self.fg) {
            if program(&f) != Some(old) {
                fx.push(PaneEffect::ProgramExited { pid: old });
            }
        }
        if let Some(var) = &mut self.var {
            match var.binding {
                // S3.4: a value reported while program A ran never labels what runs after A.
                Binding::Pid(p) if program(&f) != Some(p) => self.var = None,
                Binding::Next => {
                    if let Some(p) = program(&f) {
                        var.binding = Binding::Pid(p);
                    }
                }
                Binding::Pid(_) => {}
            }
        }
        self.fg = f;
    }

    /// The user variable, when it may speak for the pane's identity.
    fn var_identity(&self) -> Option<&str> {
        let var = self.var.as_ref()?;
        // S8.2: on a pane whose process cannot be seen, a stale report loses its identity too.
        if !var.report.authoritative && !self.fg.observable {
            return None;
        }
        Some(var.report.agent.as_str())
    }

    /// S3.4: the live process, else the reported variable, else the status report's `app`.
    fn identity(&self) -> Option<String> {
        self.fg
            .agent
            .clone()
            .or_else(|| self.var_identity().map(str::to_owned))
            .or_else(|| self.report.as_ref().and_then(|r| r.app.clone()))
    }

    /// The status the sources call for now, before debouncing (`since` is a placeholder).
    fn candidate(&self, now: Instant) -> PaneStatus {
        let mut st = PaneStatus::unknown(now);
        st.agent = self.identity();
        if let Some(r) = &self.report {
            st.source = StateSource::StatusReport;
            st.state = Some(match r.state {
                ReportState::Working => AgentState::Working,
                ReportState::Blocked => AgentState::Blocked,
                ReportState::Idle | ReportState::Done => AgentState::Idle,
                ReportState::Error => AgentState::Error,
            });
            st.unseen_result = r.state == ReportState::Done && !self.result_seen;
            st.report = r.report.clone();
            return st;
        }
        st.report.progress = self.progress.and_then(|p| p.percent);
        let verdict = self
            .verdict
            .as_ref()
            .filter(|h| st.agent.is_some() && h.agent == st.agent)
            .map(|h| &h.verdict);
        let var_state = self
            .var
            .as_ref()
            .filter(|v| v.report.authoritative)
            .and_then(|v| v.report.state);
        if let Some(v) = verdict.filter(|v| !v.fallback && v.state.is_some()) {
            st.state = v.state;
            st.source = StateSource::ScreenRule;
            st.rule = v.rule.clone();
        } else if let Some(s) = var_state {
            st.state = Some(s);
            st.source = StateSource::UserVar;
        } else if let Some(v) = verdict.filter(|v| v.fallback && v.state.is_some()) {
            st.state = v.state;
            st.source = StateSource::ScreenFallback;
        } else if let Some(s) = self.native_state() {
            st.state = Some(s);
            st.source = StateSource::Native;
        }
        st
    }

    fn native_state(&self) -> Option<AgentState> {
        match self.progress.map(|p| p.state) {
            Some(ProgressState::Error) => Some(AgentState::Error),
            Some(_) => Some(AgentState::Working),
            None if self.spinner => Some(AgentState::Working),
            None => None,
        }
    }

    fn decide(&mut self, now: Instant, fx: &mut Vec<PaneEffect>) {
        let cand = self.candidate(now);
        let old_state = self.published.state;
        let agent_left = self.published.agent.is_some() && cand.agent != self.published.agent;
        if agent_left && matches!(old_state, Some(AgentState::Working | AgentState::Blocked)) {
            // The program exited mid-work: publish idle for it first so "finished" fires.
            let mut idle = PaneStatus::unknown(now);
            idle.agent = self.published.agent.clone();
            idle.state = Some(AgentState::Idle);
            idle.source = self.published.source;
            self.publish(idle, now, fx);
        }
        if agent_left {
            self.pending = None;
        }
        let from_screen = matches!(
            cand.source,
            StateSource::ScreenRule | StateSource::ScreenFallback
        );
        let old_state = self.published.state;
        let leaves_blocked = old_state == Some(AgentState::Blocked) && cand.state != old_state;
        let stops_working =
            old_state == Some(AgentState::Working) && cand.state == Some(AgentState::Idle);
        if from_screen && (leaves_blocked || stops_working) {
            match &self.pending {
                Some(p) if p.state == cand.state && p.agent == cand.agent => {
                    if now < p.since + SCREEN_DEBOUNCE {
                        return;
                    }
                    let since = p.since;
                    self.pending = None;
                    self.publish(cand, since, fx);
                }
                _ => {
                    self.pending = Some(Pending {
                        state: cand.state,
                        agent: cand.agent,
                        since: now,
                    });
                }
            }
            return;
        }
        self.pending = None;
        self.publish(cand, now, fx);
    }

    /// Publishes `new` if it differs; `at` becomes `since` when the state or agent changed.
    fn publish(&mut self, mut new: PaneStatus, at: Instant, fx: &mut Vec<PaneEffect>) {
        if new.same_content(&self.published) {
            return;
        }
        let old = self.published.clone();
        new.since = if new.state != old.state || new.agent != old.agent {
            at
        } else {
            old.since
        };
        self.published = new.clone();
        fx.push(PaneEffect::Changed(Box::new(PaneChange { old, new })));
    }
}
