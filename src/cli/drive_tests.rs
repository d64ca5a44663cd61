//! Pane names and the decision of `wait`, on made-up rows and events.

use super::*;
use crate::ids::{SessionId, WindowId};
use crate::ipc::schema::{MachineRow, StateSource, WindowMark};

fn row(id: u32, state: Option<AgentState>) -> PaneRow {
    PaneRow {
        pane: PaneId(id),
        window: WindowId(id),
        session: SessionId(1),
        session_name: "work".into(),
        window_index: id,
        window_name: format!("w{id}"),
        pane_index: 0,
        title: String::new(),
        active: true,
        window_active: true,
        current_path: String::new(),
        current_command: "claude".into(),
        fg_pid: None,
        fg_process: None,
        fg_argv: vec![],
        process_less: false,
        agent: Some("claude".into()),
        agent_name: None,
        agent_mark: None,
        agent_version: None,
        unrecognised: false,
        state,
        unseen_result: false,
        source: StateSource::ScreenRule,
        rule: None,
        message: None,
        report_title: None,
        kind: None,
        progress: None,
        subtasks: vec![],
        since_ms: 0,
        window_mark: WindowMark::Idle,
        machine: Some("laptop".into()),
        shows: None,
    }
}

fn event(id: u32, old: Option<AgentState>, new: Option<AgentState>) -> StateEvent {
    StateEvent {
        time_ms: 0,
        pane: PaneId(id),
        window: WindowId(id),
        session: SessionId(1),
        session_name: "work".into(),
        window_name: format!("w{id}"),
        agent: Some("claude".into()),
        old,
        new,
        source: StateSource::ScreenRule,
        rule: None,
        message: None,
        kind: None,
        progress: None,
        window_mark: WindowMark::Idle,
        machine: Some("laptop".into()),
    }
}

fn waiter(goal: Goal, id: u32) -> Waiter {
    let target = format!("%{id}").parse().expect("a pane");
    Waiter::new(goal, target, Some("laptop".into()))
}

use AgentState::{Blocked, Error, Idle, Working};

#[test]
fn names_are_ids_machine_ids_or_session_window_pane_paths() {
    assert_eq!(
        "%3".parse::<PaneName>(),
        Ok(PaneName::Id("%3".parse().expect("pane")))
    );
    assert_eq!(
        "devbox:%3".parse::<PaneName>(),
        Ok(PaneName::Id("devbox:%3".parse().expect("pane")))
    );
    assert_eq!(
        "work:2.1".parse::<PaneName>(),
        Ok(PaneName::Path {
            session: "work".into(),
            window: "2".into(),
            pane: Some(1)
        })
    );
    assert_eq!(
        "work:v1.2-build".parse::<PaneName>(),
        Ok(PaneName::Path {
            session: "work".into(),
            window: "v1.2-build".into(),
            pane: None
        })
    );
    for bad in ["3", "work:", ":1.0", "devbox:%x", ""] {
        assert!(bad.parse::<PaneName>().is_err(), "{bad:?}");
    }
}

#[test]
fn paths_resolve_by_window_index_or_name_and_pane_index_or_the_active_one() {
    let mut a = row(5, None);
    a.window_index = 2;
    a.window_name = "build".into();
    a.pane_index = 0;
    a.active = false;
    let mut b = a.clone();
    b.pane = PaneId(6);
    b.pane_index = 1;
    b.active = true;
    let mut remote = b.clone();
    remote.pane = PaneId(9);
    remote.machine = Some("devbox".into());
    let rows = [remote, a, b];
    let get = |s: &str| {
        s.parse::<PaneName>()
            .expect("name")
            .resolve(&rows, Some("laptop"))
            .map(|t| t.pane)
    };
    assert_eq!(get("work:2.0"), Ok(PaneId(5)));
    assert_eq!(get("work:build"), Ok(PaneId(6)), "the active pane");
    assert_eq!(get("work:build.1"), Ok(PaneId(6)));
    assert!(get("work:3").is_err());
    assert!(get("other:2.0").is_err());
}

#[test]
fn idle_blocked_and_working_hold_at_once_when_they_already_do() {
    let mut w = waiter(Goal::Idle, 3);
    assert!(matches!(
        w.on_snapshot(&[row(3, Some(Idle))]),
        Some(Outcome::Reached(_))
    ));
    let mut w = waiter(Goal::Blocked, 3);
    assert_eq!(w.on_snapshot(&[row(3, Some(Working))]), None);
    assert_eq!(w.on_event(&event(4, Some(Working), Some(Blocked))), None);
    let Some(Outcome::Reached(r)) = w.on_event(&event(3, Some(Working), Some(Blocked))) else {
        panic!("blocked not reached");
    };
    assert_eq!(r.state, Some(Blocked));
}

#[test]
fn done_needs_a_turn_to_end_during_the_wait_or_an_unseen_result() {
    // An idle pane is not done: a prompt sent to it has not started yet.
    let mut w = waiter(Goal::Done, 3);
    assert_eq!(w.on_snapshot(&[row(3, Some(Idle))]), None);
    assert_eq!(w.on_snapshot(&[row(3, Some(Idle))]), None);
    assert_eq!(w.on_event(&event(3, Some(Idle), Some(Working))), None);
    assert_eq!(w.on_event(&event(3, Some(Working), Some(Blocked))), None);
    assert!(matches!(
        w.on_event(&event(3, Some(Blocked), Some(Idle))),
        Some(Outcome::Reached(_))
    ));
    // Seen working in a fresh snapshot (an event missed), then idle.
    let mut w = waiter(Goal::Done, 3);
    assert_eq!(w.on_snapshot(&[row(3, Some(Idle))]), None);
    assert_eq!(w.on_snapshot(&[row(3, Some(Working))]), None);
    assert!(w.on_snapshot(&[row(3, Some(Idle))]).is_some());
    // A stop on an error ends the turn too.
    let mut w = waiter(Goal::Done, 3);
    assert_eq!(w.on_snapshot(&[row(3, Some(Working))]), None);
    assert!(w.on_event(&event(3, Some(Working), Some(Error))).is_some());
    // A result nobody has seen is done at once.
    let mut w = waiter(Goal::Done, 3);
    let mut r = row(3, Some(Idle));
    r.unseen_result = true;
    assert!(w.on_snapshot(&[r]).is_some());
}

#[test]
fn any_change_is_against_the_state_seen_last() {
    let mut w = waiter(Goal::AnyChange, 3);
    assert_eq!(w.on_snapshot(&[row(3, Some(Idle))]), None);
    assert_eq!(w.on_snapshot(&[row(3, Some(Idle))]), None);
    assert!(w.on_event(&event(3, Some(Idle), Some(Working))).is_some());
}

#[test]
fn a_pane_gone_from_a_snapshot_is_closed_and_other_machines_panes_do_not_count() {
    let mut w = waiter(Goal::Idle, 3);
    assert_eq!(w.on_snapshot(&[row(3, Some(Working))]), None);
    let mut elsewhere = row(3, Some(Idle));
    elsewhere.machine = Some("devbox".into());
    assert_eq!(w.on_snapshot(&[elsewhere]), Some(Outcome::Closed));
    // A pane on devbox, named devbox:%3.
    let mut w = Waiter::new(
        Goal::Idle,
        "devbox:%3".parse().expect("pane"),
        Some("laptop".into()),
    );
    let mut there = row(3, Some(Working));
    there.machine = Some("devbox".into());
    assert_eq!(w.on_snapshot(&[row(3, Some(Idle)), there]), None);
    let mut ev = event(3, Some(Working), Some(Idle));
    assert_eq!(w.on_event(&ev), None, "this computer's %3");
    ev.machine = Some("devbox".into());
    assert!(w.on_event(&ev).is_some());
}

#[test]
fn the_state_line_names_the_machine_only_when_it_is_not_this_one() {
    assert_eq!(
        state_line(&row(3, Some(Idle)), Some("laptop")),
        "%3 claude idle"
    );
    let mut r = row(3, None);
    r.machine = Some("devbox".into());
    assert_eq!(state_line(&r, Some("laptop")), "devbox:%3 claude unknown");
}

#[test]
fn a_pane_on_a_machine_that_does_not_answer_is_out_of_sight_not_closed() {
    let m = |name: &str, local: bool, reachable: bool| MachineRow {
        name: name.into(),
        local,
        reachable,
        reason: None,
        since_ms: 0,
    };
    let there: PaneTarget = "devbox:%3".parse().expect("pane");
    let here: PaneTarget = "%3".parse().expect("pane");
    let down = [m("laptop", true, true), m("devbox", false, false)];
    let up = [m("laptop", true, true), m("devbox", false, true)];
    assert!(machine_down(&there, &down));
    assert!(!machine_down(&there, &up));
    assert!(!machine_down(&here, &down));
}
