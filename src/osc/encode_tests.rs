use super::*;
use crate::osc::scanner::{Event, Scanner};
use crate::osc::status_report::RecordId;

fn args(state: &str) -> ReportArgs {
    ReportArgs {
        state: state.into(),
        ..Default::default()
    }
}

/// Scans `seq` and returns the one OSC payload it holds.
fn scan_one(seq: &[u8]) -> (Vec<u8>, Terminator, bool) {
    let mut got = Vec::new();
    Scanner::new().feed(seq, &mut |ev| {
        if let Event::Osc {
            payload,
            terminator,
            passthrough,
        } = ev
        {
            got.push((payload.to_vec(), terminator, passthrough));
        }
    });
    assert_eq!(got.len(), 1, "{got:?}");
    got.remove(0)
}

#[test]
fn status_report_round_trips_through_scanner_and_parser() {
    let a = ReportArgs {
        state: "blocked".into(),
        msg: Some("Allow `rm -rf build`? ✓".into()),
        app: Some("my-tool".into()),
        id: Some("build/test".into()),
        progress: Some(40),
        title: Some("Build".into()),
        kind: Some("permission".into()),
    };
    let seq = status_report(&a).unwrap_or_default();
    for wrapped in [seq.clone(), tmux_passthrough(&seq)] {
        let (payload, t, pt) = scan_one(&wrapped);
        assert_eq!(pt, wrapped != seq);
        let Ok(Message::Report(r)) = status_report::parse(&payload, t) else {
            panic!("did not parse back");
        };
        assert_eq!(r.state, ReportState::Blocked);
        assert_eq!(r.msg.as_deref(), a.msg.as_deref());
        assert_eq!(r.title.as_deref(), Some("Build"));
        assert_eq!(r.app.as_deref(), Some("my-tool"));
        assert_eq!(r.id, RecordId::parse("build/test").ok());
        assert_eq!(r.progress, Some(40));
        assert_eq!(r.kind, Some(BlockedKind::Permission));
    }
}

#[test]
fn status_report_errors_name_the_problem() {
    let cases: Vec<(ReportArgs, &str)> = vec![
        (args("busy"), "invalid status report: state \"busy\" is not working, blocked, idle, done, error or clear"),
        (ReportArgs { kind: Some("permission".into()), ..args("working") }, "invalid status report: kind is only allowed with state blocked, not working"),
        (ReportArgs { kind: Some("coffee".into()), ..args("blocked") }, "kind \"coffee\" is not permission, question or auth"),
        (ReportArgs { progress: Some(101), ..args("working") }, "invalid status report: progress \"101\" is not an integer from 0 to 100"),
        (ReportArgs { progress: Some(5), ..args("done") }, "invalid status report: progress is only allowed with state working or blocked, not done"),
        (ReportArgs { msg: Some("a\nb".into()), ..args("idle") }, "invalid status report: msg contains a control character (U+000A)"),
        (ReportArgs { msg: Some("m".repeat(2049)), ..args("idle") }, "invalid status report: msg is 2049 bytes decoded, at most 2048"),
        (ReportArgs { title: Some("t".repeat(193)), ..args("idle") }, "invalid status report: title is 193 bytes decoded, at most 192"),
        (ReportArgs { app: Some("my:tool".into()), ..args("idle") }, "invalid status report: app \"my:tool\": character ':' is not a letter, digit or one of _ . + -"),
        (ReportArgs { id: Some("a/b:c".into()), ..args("idle") }, "invalid status report: id segment \"b:c\": character ':' is not a letter, digit or one of _ . + -"),
        (ReportArgs { id: Some("a//b".into()), ..args("idle") }, "invalid status report: id segment \"\": empty"),
    ];
    for (a, want) in cases {
        let got = status_report(&a).map_err(|e| e.to_string());
        assert_eq!(got, Err(want.to_owned()), "{a:?}");
    }
}

#[test]
fn user_var_round_trips_and_validates() {
    let seq = user_var("soul", AgentState::Blocked, Some(1_700_000_000)).unwrap_or_default();
    assert!(seq.starts_with(b"\x1b]1337;SetUserVar=THINKTERM_AGENT=") && seq.ends_with(b"\x07"));
    let (payload, _, _) = scan_one(&tmux_passthrough(&seq));
    let UserVarOutcome::Report(r) = user_var::parse(&payload) else {
        panic!("did not parse back");
    };
    assert_eq!(
        (r.agent.as_str(), r.state, r.ts),
        ("soul", Some(AgentState::Blocked), Some(1_700_000_000))
    );
    let e = |r: Result<Vec<u8>, EncodeError>| r.map_err(|e| e.to_string()).err();
    assert_eq!(
        e(user_var("soul", AgentState::Error, None)).as_deref(),
        Some("THINKTERM_AGENT state must be working, idle or blocked, not error")
    );
    assert_eq!(
        e(user_var(&"a".repeat(129), AgentState::Idle, None)).as_deref(),
        Some("invalid THINKTERM_AGENT value: agent is 129 bytes, at most 128")
    );
    assert!(e(user_var("a;state=idle", AgentState::Working, None)).is_some());
    assert!(e(user_var("", AgentState::Working, None)).is_some());
}

#[test]
fn passthrough_doubles_every_esc() {
    assert_eq!(
        tmux_passthrough(b"\x1b]0;x\x1b\\"),
        b"\x1bPtmux;\x1b\x1b]0;x\x1b\x1b\\\x1b\\".to_vec()
    );
    let (p, t, pt) = scan_one(&tmux_passthrough(STATUS_QUERY));
    assert_eq!(
        (p.as_slice(), t, pt),
        (&b"7501;?"[..], Terminator::St, true)
    );
}
