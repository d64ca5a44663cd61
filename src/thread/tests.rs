//! Fake-clock tests of the window rollup (S4, S6.1).

use std::time::{Duration, Instant};

use super::*;
use crate::ids::{PaneId, WindowId};
use crate::pane::PaneStatus;
use crate::state::AgentState::{self, Blocked, Error, Idle, Working};
use crate::state::Sound;
use crate::state::{StateSource, WindowMark};

const W: WindowId = WindowId(1);

struct Win {
    t0: Instant,
    r: Rollup,
}

impl Win {
    fn new() -> Self {
        Win {
            t0: Instant::now(),
            r: Rollup::new(),
        }
    }
    fn at(&mut self, ms: u64, input: RollupInput) -> Vec<RollupEffect> {
        self.r.on_input(self.t0 + Duration::from_millis(ms), input)
    }
    fn pane(&mut self, ms: u64, pane: u32, state: Option<AgentState>) -> Vec<RollupEffect> {
        let mut status = PaneStatus::unknown(self.t0);
        status.agent = Some("claude".into());
        status.state = state;
        status.source = StateSource::ScreenRule;
        self.at(
            ms,
            RollupInput::Pane {
                window: W,
                pane: PaneId(pane),
                status,
            },
        )
    }
    fn look(&mut self, ms: u64, looked: bool) -> Vec<RollupEffect> {
        self.at(
            ms,
            RollupInput::Looked {
                window: W,
                looked,
                active_pane: Some(PaneId(0)),
            },
        )
    }
    fn mark(&self) -> WindowMark {
        self.r.mark(W)
    }
}

fn sounds(fx: &[RollupEffect]) -> Vec<Sound> {
    fx.iter()
        .filter_map(|e| match e {
            RollupEffect::Sound { sound, .. } => Some(*sound),
            _ => None,
        })
        .collect()
}

#[test]
fn marks_running_attention_running_done_then_seen() {
    let mut w = Win::new();
    w.pane(0, 0, Some(Working));
    assert_eq!(w.mark(), WindowMark::Running);
    w.pane(1000, 0, Some(Blocked));
    assert_eq!(w.mark(), WindowMark::Attention);
    w.pane(2000, 0, Some(Working));
    assert_eq!(w.mark(), WindowMark::Running);
    let fx = w.pane(6000, 0, Some(Idle));
    assert_eq!(w.mark(), WindowMark::Done);
    assert!(fx.iter().any(|e| matches!(
        e,
        RollupEffect::Notify {
            reason: NotifyReason::Finished,
            ..
        }
    )));
    assert!(fx.contains(&RollupEffect::DoneSetChanged));
    assert_eq!(w.r.done_windows().len(), 1);
    // done lasts while nobody looks
    w.pane(7000, 1, Some(Idle));
    assert_eq!(w.mark(), WindowMark::Done);
    let fx = w.look(8000, true);
    assert_eq!(w.mark(), WindowMark::Idle);
    assert!(fx.contains(&RollupEffect::MarkChanged {
        window: W,
        old: WindowMark::Done,
        new: WindowMark::Idle
    }));
    assert!(w.r.done_windows().is_empty());
}

#[test]
fn no_done_when_it_stopped_while_looked_at() {
    let mut w = Win::new();
    w.look(0, true);
    w.pane(0, 0, Some(Working));
    w.pane(6000, 0, Some(Idle));
    assert_eq!(w.mark(), WindowMark::Idle);
}

#[test]
fn typing_clears_done() {
    let mut w = Win::new();
    w.pane(0, 0, Some(Working));
    w.pane(100, 0, Some(Idle));
    assert_eq!(w.mark(), WindowMark::Done);
    w.at(200, RollupInput::TypedIn(W));
    assert_eq!(w.mark(), WindowMark::Idle);
}

#[test]
fn error_is_distinguished_from_waiting_and_wins() {
    let mut w = Win::new();
    w.pane(0, 0, Some(Blocked));
    assert_eq!(w.mark(), WindowMark::Attention);
    let fx = w.pane(1, 1, Some(Error));
    assert_eq!(w.mark(), WindowMark::Error);
    assert!(fx.iter().any(|e| matches!(
        e,
        RollupEffect::Notify {
            reason: NotifyReason::Error,
            ..
        }
    )));
    w.pane(2, 1, Some(Idle));
    assert_eq!(w.mark(), WindowMark::Attention);
}

#[test]
fn idle_window_has_no_mark() {
    let mut w = Win::new();
    w.pane(0, 0, Some(Idle));
    w.pane(0, 1, None);
    assert_eq!(w.mark(), WindowMark::Idle);
}

#[test]
fn done_sound_needs_five_seconds_of_work() {
    let mut w = Win::new();
    w.pane(0, 0, Some(Working));
    assert_eq!(sounds(&w.pane(5000, 0, Some(Idle))), vec![Sound::Done]);
    w.look(5001, true); // rings even when looked at
    w.pane(6000, 0, Some(Working));
    assert_eq!(sounds(&w.pane(11000, 0, Some(Idle))), vec![Sound::Done]);
    // counter-case: 4.9 s of work is silent
    w.pane(12000, 0, Some(Working));
    assert!(sounds(&w.pane(16900, 0, Some(Idle))).is_empty());
}

#[test]
fn waiting_rings_per_pane_and_answering_does_not() {
    let mut w = Win::new();
    w.pane(0, 0, Some(Working));
    assert_eq!(sounds(&w.pane(1, 0, Some(Blocked))), vec![Sound::Waiting]);
    assert!(
        sounds(&w.pane(2, 0, Some(Blocked))).is_empty(),
        "still waiting"
    );
    assert_eq!(
        sounds(&w.pane(3, 1, Some(Blocked))),
        vec![Sound::Waiting],
        "second pane"
    );
    assert!(sounds(&w.pane(4, 0, Some(Working))).is_empty(), "answering");
}

#[test]
fn result_of_active_pane_in_looked_window_is_seen() {
    let mut w = Win::new();
    let mut status = PaneStatus::unknown(w.t0);
    status.state = Some(Idle);
    status.source = StateSource::StatusReport;
    status.unseen_result = true;
    w.at(
        0,
        RollupInput::Pane {
            window: W,
            pane: PaneId(0),
            status,
        },
    );
    assert_eq!(w.mark(), WindowMark::Done);
    // looked at, but the result is in another pane: not seen
    let fx = w.at(
        1,
        RollupInput::Looked {
            window: W,
            looked: true,
            active_pane: Some(PaneId(9)),
        },
    );
    assert!(!fx.contains(&RollupEffect::MarkSeen(PaneId(0))));
    let fx = w.look(2, true);
    assert_eq!(
        fx.iter()
            .filter(|e| **e == RollupEffect::MarkSeen(PaneId(0)))
            .count(),
        1
    );
    assert_eq!(w.mark(), WindowMark::Idle);
    assert!(
        !w.look(3, true).contains(&RollupEffect::MarkSeen(PaneId(0))),
        "once"
    );
}

#[test]
fn restored_done_shows_and_clears_on_look() {
    let mut w = Win::new();
    w.r.restore_done(w.t0, [W]);
    assert_eq!(w.mark(), WindowMark::Done);
    w.look(1, true);
    assert_eq!(w.mark(), WindowMark::Idle);
}
