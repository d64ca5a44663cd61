//! Fake-clock tests of the pane arbitration (S3.1–S3.6), each rule with its counter-case.

use std::time::{Duration, Instant};

use super::input::ReportState;
use super::*;
use crate::state::AgentState::{self, Blocked, Error, Idle, Working};
use crate::state::StateSource;

/// A tracker with a fake clock: `at(ms, input)` feeds the input at t0 + ms.
struct Pane {
    t0: Instant,
    tr: Tracker,
}

impl Pane {
    fn new() -> Self {
        let t0 = Instant::now();
        Pane {
            t0,
            tr: Tracker::new(t0),
        }
    }
    fn at(&mut self, ms: u64, input: PaneInput) -> Vec<PaneEffect> {
        self.tr.on_input(self.t0 + Duration::from_millis(ms), input)
    }
    fn state(&self) -> Option<AgentState> {
        self.tr.status().state
    }
    fn source(&self) -> StateSource {
        self.tr.status().source
    }
    fn agent(&self) -> Option<&str> {
        self.tr.status().agent.as_deref()
    }
}

fn transitions(fx: &[PaneEffect]) -> Vec<(Option<AgentState>, Option<AgentState>)> {
    fx.iter()
        .filter_map(|e| match e {
            PaneEffect::Changed(c) if c.is_transition() => Some((c.old.state, c.new.state)),
            _ => None,
        })
        .collect()
}

fn fg(agent: Option<&str>, pid: u32) -> PaneInput {
    PaneInput::Foreground(ForegroundInput {
        agent: agent.map(str::to_owned),
        pid: Some(pid),
        observable: true,
        at_shell: false,
    })
}

fn shell(pid: u32) -> PaneInput {
    PaneInput::Foreground(ForegroundInput {
        agent: None,
        pid: Some(pid),
        observable: true,
        at_shell: true,
    })
}

fn rule(state: AgentState, id: &str) -> PaneInput {
    PaneInput::Screen(Some(ScreenVerdict {
        state: Some(state),
        rule: Some(id.into()),
        fallback: false,
        skip_state_update: false,
    }))
}

fn fallback() -> PaneInput {
    PaneInput::Screen(Some(ScreenVerdict {
        state: Some(Idle),
        rule: None,
        fallback: true,
        skip_state_update: false,
    }))
}

fn var(agent: &str, state: Option<AgentState>, authoritative: bool) -> PaneInput {
    PaneInput::UserVar(Some(UserVarReport {
        agent: agent.into(),
        state,
        authoritative,
    }))
}

fn report(state: ReportState, app: Option<&str>) -> PaneInput {
    let mut r = ReportSummary::new(state);
    r.app = app.map(str::to_owned);
    r.report.msg = Some("doing it".into());
    PaneInput::Report(Some(r))
}

fn progress(state: ProgressState) -> PaneInput {
    PaneInput::Progress(Some(NativeProgress {
        state,
        percent: Some(40),
    }))
}

// --- identity (S3.4) ---

#[test]
fn live_process_names_the_agent_over_the_variable() {
    let mut p = Pane::new();
    p.at(0, fg(Some("claude"), 10));
    p.at(1, var("soul", Some(Working), true));
    assert_eq!(p.agent(), Some("claude"));
}

#[test]
fn variable_names_the_agent_when_no_process_matches() {
    let mut p = Pane::new();
    p.at(0, fg(None, 10));
    p.at(1, var("soul", Some(Working), true));
    assert_eq!(p.agent(), Some("soul"));
    assert_eq!(p.state(), Some(Working));
    assert_eq!(p.source(), StateSource::UserVar);
}

#[test]
fn variable_of_an_exited_program_never_labels_the_next_one() {
    let mut p = Pane::new();
    p.at(0, fg(None, 10));
    p.at(1, var("soul", Some(Idle), true));
    assert_eq!(p.agent(), Some("soul"));
    // program A (pid 10) exits, program B (pid 11, e.g. vim) starts
    let fx = p.at(2, fg(None, 11));
    assert!(fx.contains(&PaneEffect::ProgramExited { pid: 10 }));
    assert_eq!(p.agent(), None);
    assert_eq!(p.state(), None);
}

#[test]
fn variable_arriving_before_the_probe_sees_the_program_binds_to_it() {
    let mut p = Pane::new();
    p.at(0, shell(5));
    p.at(1, var("soul", Some(Working), true)); // output beat the probe
    p.at(2, fg(None, 10));
    assert_eq!(p.agent(), Some("soul"));
    // counter-case: once that program leaves, the variable is gone too
    p.at(3, shell(5));
    assert_eq!(p.agent(), None);
}

#[test]
fn stale_variable_keeps_identity_on_observable_panes_only() {
    let mut p = Pane::new();
    p.at(0, fg(None, 10));
    p.at(1, var("soul", Some(Working), false));
    assert_eq!(p.agent(), Some("soul"));
    assert_eq!(p.state(), None, "a stale state drives nothing");

    let mut q = Pane::new();
    q.at(
        0,
        PaneInput::Foreground(ForegroundInput {
            agent: None,
            pid: Some(20),
            observable: false,
            at_shell: false,
        }),
    );
    q.at(1, var("soul", Some(Working), false));
    assert_eq!(q.agent(), None, "process-less pane: stale identity expires");
}

#[test]
fn report_app_names_the_agent_only_when_nothing_else_does() {
    let mut p = Pane::new();
    p.at(0, fg(None, 10));
    p.at(1, report(ReportState::Working, Some("mytool")));
    assert_eq!(p.agent(), Some("mytool"));
    p.at(2, fg(Some("codex"), 10));
    assert_eq!(p.agent(), Some("codex"));
}

// --- state (S3.1, S3.5) ---

#[test]
fn active_report_decides_and_screen_is_ignored() {
    let mut p = Pane::new();
    p.at(0, fg(Some("codex"), 10));
    p.at(1, report(ReportState::Working, Some("codex")));
    p.at(2, rule(Blocked, "approval"));
    assert_eq!(p.state(), Some(Working));
    assert_eq!(p.source(), StateSource::StatusReport);
    assert_eq!(p.tr.status().report.msg.as_deref(), Some("doing it"));
    // counter-case: once the report is no longer in force the screen rule is read
    p.at(3, PaneInput::Report(None));
    assert_eq!(p.state(), Some(Blocked));
    assert_eq!(p.source(), StateSource::ScreenRule);
    assert_eq!(p.tr.status().rule.as_deref(), Some("approval"));
}

#[test]
fn report_states_pass_at_once_and_map_done_and_error() {
    let mut p = Pane::new();
    p.at(0, fg(Some("codex"), 10));
    p.at(1, report(ReportState::Working, None));
    let fx = p.at(2, report(ReportState::Idle, None));
    assert_eq!(transitions(&fx), vec![(Some(Working), Some(Idle))]);
    p.at(3, report(ReportState::Done, None));
    assert_eq!(p.state(), Some(Idle));
    assert!(p.tr.status().unseen_result);
    p.at(4, PaneInput::Seen);
    assert!(!p.tr.status().unseen_result);
    p.at(5, report(ReportState::Error, None));
    assert_eq!(p.state(), Some(Error));
    assert!(p.tr.status().has_result());
}

#[test]
fn matching_screen_rule_beats_the_variable_state() {
    let mut p = Pane::new();
    p.at(0, fg(Some("claude"), 10));
    p.at(1, var("claude", Some(Blocked), true));
    p.at(2, rule(Idle, "prompt-box"));
    // leaving blocked from the screen is debounced, then the screen wins
    p.at(500, PaneInput::Tick);
    assert_eq!(p.state(), Some(Idle));
    assert_eq!(p.source(), StateSource::ScreenRule);
}

#[test]
fn variable_state_beats_the_screen_fallback() {
    let mut p = Pane::new();
    p.at(0, fg(Some("claude"), 10));
    p.at(1, fallback());
    assert_eq!(p.source(), StateSource::ScreenFallback);
    p.at(2, var("claude", Some(Working), true));
    assert_eq!(p.state(), Some(Working));
    assert_eq!(p.source(), StateSource::UserVar);
}

#[test]
fn skip_state_update_and_unknown_rules_do_not_decide() {
    let mut p = Pane::new();
    p.at(0, fg(Some("claude"), 10));
    p.at(1, rule(Working, "spinner"));
    p.at(
        2,
        PaneInput::Screen(Some(ScreenVerdict {
            state: Some(Idle),
            rule: Some("transient".into()),
            fallback: false,
            skip_state_update: true,
        })),
    );
    p.at(900, PaneInput::Tick);
    assert_eq!(p.state(), Some(Working));
    p.at(
        901,
        PaneInput::Screen(Some(ScreenVerdict {
            state: None,
            rule: Some("unk".into()),
            fallback: false,
            skip_state_update: false,
        })),
    );
    assert_eq!(p.state(), None);
}

#[test]
fn native_signals_decide_only_when_nothing_else_does() {
    let mut p = Pane::new();
    p.at(0, fg(None, 10)); // e.g. cargo, no agent
    p.at(1, progress(ProgressState::Normal));
    assert_eq!(p.state(), Some(Working));
    assert_eq!(p.source(), StateSource::Native);
    assert_eq!(p.tr.status().report.progress, Some(40));
    p.at(2, progress(ProgressState::Error));
    assert_eq!(p.state(), Some(Error));
    p.at(3, PaneInput::Progress(None));
    assert_eq!(p.state(), None);
    p.at(4, PaneInput::TitleSpinner(true));
    assert_eq!(p.state(), Some(Working));
    // counter-case: an agent's screen rule outranks them
    p.at(5, fg(Some("claude"), 10));
    p.at(6, rule(Blocked, "approval"));
    assert_eq!(p.state(), Some(Blocked));
    assert_eq!(p.source(), StateSource::ScreenRule);
}

#[test]
fn verdict_for_another_agent_is_stale() {
    let mut p = Pane::new();
    p.at(0, fg(Some("claude"), 10));
    p.at(1, rule(Blocked, "approval"));
    p.at(2, fg(Some("codex"), 11));
    assert_ne!(p.source(), StateSource::ScreenRule);
}

// --- debounce (S3.6) ---

#[test]
fn idle_blip_while_working_produces_no_transition() {
    let mut p = Pane::new();
    p.at(0, fg(Some("claude"), 10));
    p.at(1, rule(Working, "esc"));
    assert!(transitions(&p.at(100, rule(Idle, "prompt"))).is_empty());
    assert!(transitions(&p.at(300, rule(Working, "esc"))).is_empty());
    assert!(transitions(&p.at(1000, PaneInput::Tick)).is_empty());
    assert_eq!(p.state(), Some(Working));
}

#[test]
fn idle_that_holds_is_published_after_450ms() {
    let mut p = Pane::new();
    p.at(0, fg(Some("claude"), 10));
    p.at(1, rule(Working, "esc"));
    p.at(100, rule(Idle, "prompt"));
    assert_eq!(
        p.tr.next_deadline(),
        Some(p.t0 + Duration::from_millis(550))
    );
    assert!(transitions(&p.at(549, PaneInput::Tick)).is_empty());
    let fx = p.at(550, PaneInput::Tick);
    assert_eq!(transitions(&fx), vec![(Some(Working), Some(Idle))]);
    assert_eq!(p.tr.status().since, p.t0 + Duration::from_millis(100));
    assert_eq!(p.tr.next_deadline(), None);
}

#[test]
fn leaving_blocked_is_debounced_entering_is_not() {
    let mut p = Pane::new();
    p.at(0, fg(Some("claude"), 10));
    p.at(1, rule(Working, "esc"));
    let fx = p.at(2, rule(Blocked, "approval"));
    assert_eq!(transitions(&fx), vec![(Some(Working), Some(Blocked))]);
    assert!(transitions(&p.at(10, rule(Working, "esc"))).is_empty());
    let fx = p.at(460, PaneInput::Tick);
    assert_eq!(transitions(&fx), vec![(Some(Blocked), Some(Working))]);
}

#[test]
fn idle_to_working_from_screen_is_immediate() {
    let mut p = Pane::new();
    p.at(0, fg(Some("claude"), 10));
    p.at(1, fallback());
    let fx = p.at(2, rule(Working, "esc"));
    assert_eq!(transitions(&fx), vec![(Some(Idle), Some(Working))]);
}

#[test]
fn protocol_states_are_not_debounced() {
    let mut p = Pane::new();
    p.at(0, fg(None, 10));
    p.at(1, var("soul", Some(Blocked), true));
    let fx = p.at(2, var("soul", Some(Idle), true));
    assert_eq!(transitions(&fx), vec![(Some(Blocked), Some(Idle))]);
}

// --- exit (issue 5 item 1) ---

#[test]
fn agent_exit_publishes_idle_then_clears_the_agent() {
    let mut p = Pane::new();
    p.at(0, fg(Some("claude"), 10));
    p.at(1, rule(Working, "esc"));
    let fx = p.at(2, shell(5));
    let steps: Vec<_> = fx
        .iter()
        .filter_map(|e| match e {
            PaneEffect::Changed(c) => Some((c.new.agent.clone(), c.new.state)),
            _ => None,
        })
        .collect();
    assert_eq!(
        steps,
        vec![(Some("claude".into()), Some(Idle)), (None, None)]
    );
    assert!(fx.contains(&PaneEffect::ProgramExited { pid: 10 }));
}

#[test]
fn idle_agent_exit_only_clears() {
    let mut p = Pane::new();
    p.at(0, fg(Some("claude"), 10));
    p.at(1, fallback());
    let fx = p.at(2, shell(5));
    assert_eq!(transitions(&fx), vec![(Some(Idle), None)]);
}

#[test]
fn message_change_is_not_a_transition() {
    let mut p = Pane::new();
    p.at(0, report(ReportState::Working, Some("x")));
    let mut r = ReportSummary::new(ReportState::Working);
    r.app = Some("x".into());
    r.report.msg = Some("other".into());
    let fx = p.at(1, PaneInput::Report(Some(r)));
    assert_eq!(fx.len(), 1);
    assert!(transitions(&fx).is_empty());
    assert!(p.at(2, PaneInput::Tick).is_empty(), "no change, no effect");
}

#[test]
fn since_converts_to_unix_ms() {
    let t = Instant::now();
    let later = t + Duration::from_millis(250);
    assert_eq!(crate::clock::unix_ms_at(t, later, 10_000), 9_750);
    assert_eq!(crate::clock::unix_ms_at(later, t, 10_000), 10_250);
}
