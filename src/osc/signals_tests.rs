use super::*;
use crate::osc::encode::{self, ReportArgs};
use crate::osc::records::RecordState;
use crate::state::{AgentState, BlockedKind};

#[test]
fn prompt_marks() {
    assert_eq!(prompt_mark(b"133;A"), Some(PromptMark::A));
    assert_eq!(prompt_mark(b"133;A;cl=m"), Some(PromptMark::A));
    assert_eq!(prompt_mark(b"133;B"), Some(PromptMark::B));
    assert_eq!(prompt_mark(b"133;C"), Some(PromptMark::C));
    assert_eq!(prompt_mark(b"133;D;1"), Some(PromptMark::D(Some(1))));
    assert_eq!(prompt_mark(b"133;D"), Some(PromptMark::D(None)));
    assert_eq!(prompt_mark(b"133;E"), None);
    assert_eq!(prompt_mark(b"133;AB"), None);
}

#[test]
fn notifications() {
    let n = |t: Option<&str>, b: &str| {
        Some(ProgramNotification {
            title: t.map(str::to_owned),
            body: b.into(),
            occasion: Occasion::Unfocused,
            urgency: None,
        })
    };
    assert_eq!(notification(b"9;Build finished"), n(None, "Build finished"));
    assert_eq!(
        notification(b"777;notify;Title;Body;x"),
        n(Some("Title"), "Body;x")
    );
    assert_eq!(notification(b"9;4;1;50"), None);
    assert_eq!(notification(b"9;1;100"), None);
    assert_eq!(notification(b"9;"), None);
    assert_eq!(notification(b"9;2024 was good"), n(None, "2024 was good"));
}

#[test]
fn codex_recording_drives_the_records_like_the_real_run() {
    let raw = crate::test_fixtures::read("codex/0.169.0/raw-main-120x40.bin");
    let mut p = PaneSignals::new();
    let mut states = Vec::new();
    for chunk in raw.chunks(333) {
        p.feed(chunk, 5, &mut |s, _| {
            if let Signal::StatusReport(r) = s {
                states.push(r.state.as_str());
            }
        });
        assert!(p.records().effective().is_none_or_app("codex"));
    }
    assert_eq!(
        states,
        [
            "idle", "working", "idle", "working", "done", "idle", "working", "blocked", "working",
            "done", "idle", "working", "blocked", "working", "idle", "working", "idle"
        ]
    );
    let e = p.records().effective().map(|e| (e.agent_state(), e.app));
    assert_eq!(e, Some((AgentState::Idle, Some("codex"))));
    assert!(p.title().is_some());
    assert_eq!(p.progress(), None, "codex sends no OSC 9;4");
}

trait AppCheck {
    fn is_none_or_app(&self, app: &str) -> bool;
}

impl AppCheck for Option<crate::osc::records::Effective<'_>> {
    fn is_none_or_app(&self, app: &str) -> bool {
        self.as_ref().is_none_or(|e| e.app == Some(app))
    }
}

#[test]
fn facade_round_trip_of_encoded_sequences_split_anywhere() {
    let working = encode::status_report(&ReportArgs {
        state: "working".into(),
        msg: Some("Running tests".into()),
        app: Some("my-tool".into()),
        progress: Some(40),
        ..Default::default()
    });
    let blocked = encode::status_report(&ReportArgs {
        state: "blocked".into(),
        kind: Some("permission".into()),
        app: Some("my-tool".into()),
        ..Default::default()
    });
    let var = encode::user_var("soul", AgentState::Working, Some(100));
    let (Ok(working), Ok(blocked), Ok(var)) = (working, blocked, var) else {
        panic!("encoding failed");
    };
    let mut stream = b"hello ".to_vec();
    stream.extend(&working);
    stream.extend(encode::tmux_passthrough(&var));
    stream.extend(b"\x1b]0;\xe2\xa0\x8b build\x07\x1b]9;4;1;60\x07\x07");
    stream.extend(&blocked);
    for k in 0..stream.len() {
        let mut p = PaneSignals::new();
        let mut sigs = p.feed_collect(&stream[..k], 1);
        sigs.extend(p.feed_collect(&stream[k..], 1));
        assert_eq!(sigs.len(), 6, "split at {k}: {sigs:?}");
        assert!(matches!(&sigs[0], Signal::StatusReport(r) if r.progress == Some(40)));
        assert!(
            matches!(&sigs[1], Signal::UserVar(UserVarOutcome::Report(r)) if r.agent == "soul")
        );
        assert_eq!(sigs[2], Signal::Title("⠋ build".into()));
        assert_eq!(sigs[3], Signal::Progress(Progress::Normal(60)));
        assert_eq!(sigs[4], Signal::Bell);
        let e = p
            .records()
            .effective()
            .map(|e| (e.state(), e.kind(), e.app, e.msg()));
        assert_eq!(
            e,
            Some((
                RecordState::Blocked,
                Some(BlockedKind::Permission),
                Some("my-tool"),
                None
            ))
        );
        assert!(p.title_spinner());
        assert_eq!(p.user_var().map(|r| r.agent.as_str()), Some("soul"));
        let auth = p.user_var_authority(100, true, true);
        assert_eq!(auth.and_then(|a| a.state), Some(AgentState::Working));
    }
}

#[test]
fn query_rejection_and_oversized_user_var() {
    let mut p = PaneSignals::new();
    let s = p.feed_collect(b"\x1b]7501;?\x1b\\\x1b[c\x1b]7501;state=nope\x07", 0);
    assert_eq!(
        s,
        [
            Signal::ReportQuery { passthrough: false },
            Signal::ReportRejected(ReportError::BadState("nope".into()))
        ]
    );
    assert!(p.records().is_empty());
    let ok = encode::user_var("soul", AgentState::Idle, None).unwrap_or_default();
    p.feed_collect(&ok, 0);
    assert!(p.user_var().is_some());
    let huge = format!(
        "\x1b]1337;SetUserVar=THINKTERM_AGENT={}\x07",
        "QUFB".repeat(2000)
    );
    let s = p.feed_collect(huge.as_bytes(), 0);
    assert!(matches!(
        s.as_slice(),
        [Signal::UserVar(UserVarOutcome::Clear(_))]
    ));
    assert!(
        p.user_var().is_none(),
        "a report over the limit clears the old value"
    );
    let other = b"\x1b]1337;SetUserVar=OTHER=eA==\x07";
    p.feed_collect(&ok, 0);
    assert!(p.feed_collect(other, 0).is_empty());
    assert!(p.user_var().is_some(), "other names change nothing");
}

#[test]
fn title_and_progress_are_none_until_sent_and_reset_forgets_them() {
    let mut p = PaneSignals::new();
    assert_eq!((p.title(), p.progress()), (None, None));
    p.feed_collect(b"\x1b]2;vim\x1b\\\x1b]9;4;3\x07", 0);
    assert_eq!(p.title(), Some("vim"));
    assert_eq!(p.progress(), Some(Progress::Indeterminate));
    assert!(!p.title_spinner());
    p.reset();
    assert_eq!((p.title(), p.progress()), (None, None));
}

#[test]
fn kitty_notifications_join_across_sequences_and_split_reads() {
    let mut s = PaneSignals::new();
    let first = s.feed_collect(b"\x1b]99;i=1:d=0;Hello\x1b\\ some text ", 0);
    assert!(!first.iter().any(|x| matches!(x, Signal::Notification(_))));
    assert!(s.feed_collect(b"\x1b]99;i=1:p=body;Wor", 0).is_empty());
    let last = s.feed_collect(b"ld\x1b\\", 0);
    assert_eq!(
        last,
        [Signal::Notification(ProgramNotification {
            title: Some("Hello".into()),
            body: "World".into(),
            occasion: Occasion::Unfocused,
            urgency: None,
        })]
    );
}
