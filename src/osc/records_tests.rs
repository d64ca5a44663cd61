use super::*;
use crate::osc::scanner::Terminator;
use crate::osc::status_report::{parse, Message};

fn rep(body: &str) -> StatusReport {
    match parse(format!("7501;{body}").as_bytes(), Terminator::St) {
        Ok(Message::Report(r)) => r,
        other => panic!("{body:?}: {other:?}"),
    }
}

fn apply(t: &mut Records, body: &str) -> bool {
    t.apply(&rep(body), 1000)
}

fn eff_state(t: &Records) -> Option<RecordState> {
    t.effective().map(|e| e.state())
}

#[test]
fn a_report_replaces_its_record_whole() {
    let mut t = Records::new();
    apply(&mut t, "state=working:app=x:progress=40:msg=aGk=");
    apply(&mut t, "state=blocked:kind=auth");
    let own = t.own().cloned();
    let own = own.unwrap_or_else(|| panic!("own record"));
    assert_eq!(own.state, RecordState::Blocked);
    assert_eq!(own.kind, Some(BlockedKind::Auth));
    assert_eq!(own.progress, None, "omitted keys are cleared, not kept");
    assert_eq!(own.app, None);
    assert_eq!(own.msg, None);
    assert_eq!(t.len(), 1);
}

#[test]
fn apply_says_whether_anything_changed() {
    let mut t = Records::new();
    assert!(apply(&mut t, "state=working:app=x"));
    assert!(!apply(&mut t, "state=working:app=x"));
    assert!(apply(&mut t, "state=working:app=x:progress=1"));
    assert!(!apply(&mut t, "state=clear:id=nothing"));
}

#[test]
fn clear_removes_the_record_and_everything_under_it() {
    let mut t = Records::new();
    for id in ["build", "build/test", "build/test/unit", "builder", "lint"] {
        apply(&mut t, &format!("state=working:id={id}"));
    }
    apply(&mut t, "state=clear:id=build/test");
    let ids: Vec<_> = t
        .subtasks()
        .filter_map(|r| r.id.as_ref())
        .map(|i| i.as_str())
        .collect();
    assert_eq!(ids, ["build", "builder", "lint"]);
    apply(&mut t, "state=working");
    apply(&mut t, "state=clear");
    assert!(
        t.is_empty(),
        "clearing the own record clears everything under the program"
    );
}

#[test]
fn at_most_256_records_least_recently_updated_dropped_first() {
    let mut t = Records::new();
    for i in 0..MAX_RECORDS {
        apply(&mut t, &format!("state=working:id=t{i}"));
    }
    apply(&mut t, "state=working:id=t0"); // t0 refreshed: t1 is now the oldest
    apply(&mut t, "state=working:id=new");
    assert_eq!(t.len(), MAX_RECORDS);
    assert!(t.get("t0").is_some());
    assert!(t.get("t1").is_none());
    assert!(t.get("new").is_some());
}

#[test]
fn own_record_stands_for_the_program() {
    let mut t = Records::new();
    apply(&mut t, "state=error:id=a");
    apply(&mut t, "state=idle:app=me");
    assert_eq!(eff_state(&t), Some(RecordState::Idle));
    assert_eq!(t.effective().and_then(|e| e.app), Some("me"));
}

#[test]
fn most_urgent_subtask_stands_when_only_subtasks_remain() {
    // (states present, which stands): error > blocked > working > done.
    let cases: &[(&[&str], RecordState)] = &[
        (&["done", "working", "error", "blocked"], RecordState::Error),
        (&["done", "blocked", "working"], RecordState::Blocked),
        (&["done", "working", "idle"], RecordState::Working),
        (&["idle", "done"], RecordState::Done),
        (&["idle"], RecordState::Idle),
    ];
    for (states, want) in cases {
        let mut t = Records::new();
        for (i, s) in states.iter().enumerate() {
            let extra = if *s == "blocked" {
                ":kind=question"
            } else {
                ""
            };
            apply(&mut t, &format!("state={s}:id=t{i}:app=tool{extra}"));
        }
        assert_eq!(eff_state(&t), Some(*want), "{states:?}");
        assert_eq!(t.effective().and_then(|e| e.app), Some("tool"));
    }
}

#[test]
fn end_ongoing_keeps_only_results() {
    let mut t = Records::new();
    apply(&mut t, "state=working");
    apply(&mut t, "state=blocked:id=a");
    apply(&mut t, "state=done:id=b");
    apply(&mut t, "state=error:id=c");
    apply(&mut t, "state=idle:id=d");
    assert!(t.end_ongoing());
    let left: Vec<_> = t.subtasks().map(|r| r.state).collect();
    assert_eq!(left, [RecordState::Done, RecordState::Error]);
    assert!(t.own().is_none());
    assert_eq!(eff_state(&t), Some(RecordState::Error));
    assert!(!t.end_ongoing());
}

#[test]
fn mark_seen_removes_results_only() {
    let mut t = Records::new();
    apply(&mut t, "state=done");
    apply(&mut t, "state=working:id=a");
    assert_eq!(
        t.effective().map(|e| e.agent_state()),
        Some(AgentState::Idle)
    );
    assert!(t.effective().is_some_and(|e| e.state().unseen_result()));
    assert!(t.mark_seen());
    assert_eq!(eff_state(&t), Some(RecordState::Working));
    assert!(!t.mark_seen());
}

#[test]
fn effective_exposes_every_field() {
    let mut t = Records::new();
    apply(
        &mut t,
        "state=blocked:kind=permission:progress=7:app=codex:title=VGl0bGU=:msg=TXNn",
    );
    let e = t.effective().unwrap_or_else(|| panic!("effective"));
    assert_eq!(e.agent_state(), AgentState::Blocked);
    assert_eq!(e.kind(), Some(BlockedKind::Permission));
    assert_eq!(e.progress(), Some(7));
    assert_eq!(e.app, Some("codex"));
    assert_eq!(e.title(), Some("Title"));
    assert_eq!(e.msg(), Some("Msg"));
    assert_eq!(e.record.updated_unix, 1000);
}

#[test]
fn done_maps_to_idle_with_unseen_result() {
    assert_eq!(RecordState::Done.agent_state(), AgentState::Idle);
    assert!(RecordState::Done.unseen_result());
    assert_eq!(RecordState::Error.agent_state(), AgentState::Error);
    assert!(!RecordState::Idle.unseen_result());
    assert!(RecordState::Blocked.ongoing());
}
