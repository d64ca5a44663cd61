use super::*;
use base64::engine::general_purpose::STANDARD;

fn p(body: &str) -> Result<Message, ReportError> {
    parse(format!("7501;{body}").as_bytes(), Terminator::St)
}

fn b64(s: &str) -> String {
    STANDARD.encode(s)
}

fn report(body: &str) -> StatusReport {
    match p(body) {
        Ok(Message::Report(r)) => r,
        other => panic!("{body:?}: {other:?}"),
    }
}

/// One row per S7 rule: a payload that keeps it, and one that breaks it with the error expected.
#[test]
fn every_rule_kept_and_broken() {
    let long_title = "t".repeat(MAX_TITLE_BYTES + 1);
    let ok_title = "t".repeat(MAX_TITLE_BYTES);
    let long_msg = "m".repeat(MAX_MSG_BYTES + 1);
    let ok_msg = "m".repeat(MAX_MSG_BYTES);
    let seg32 = "s".repeat(32);
    let seg33 = "s".repeat(33);
    let deep8 = ["a"; 8].join("/");
    let deep9 = ["a"; 9].join("/");
    let id128 = format!("{}/{}/{}/{}", seg32, seg32, seg32, "s".repeat(29));
    let id129 = format!("{}/{}/{}/{}", seg32, seg32, seg32, seg32);
    let unknown_pad = |total: usize| {
        // `7501;state=idle:x=` is 18 bytes, plus `ESC ]` and ST.
        format!("state=idle:x={}", "p".repeat(total - 18 - 4))
    };
    #[rustfmt::skip]
    let rows: Vec<(&str, String, String, ReportError)> = vec![
        ("state required", "state=idle".into(), "app=x".into(), ReportError::MissingState),
        ("state values", "state=done".into(), "state=busy".into(), ReportError::BadState("busy".into())),
        ("clear is a state", "state=clear:id=a".into(), "state=Clear".into(), ReportError::BadState("Clear".into())),
        ("id segments ≤ 8", format!("state=idle:id={deep8}"), format!("state=idle:id={deep9}"), ReportError::IdTooDeep(9)),
        ("id ≤ 128 bytes", format!("state=idle:id={id128}"), format!("state=idle:id={id129}"), ReportError::IdTooLong(131)),
        ("id segment ≤ 32 chars", format!("state=idle:id={seg32}"), format!("state=idle:id={seg33}"), ReportError::BadIdSegment(seg33.clone(), NameError::TooLong(33))),
        ("id segment charset", "state=idle:id=a_b.c+d-E9".into(), "state=idle:id=a b".into(), ReportError::BadIdSegment("a b".into(), NameError::BadChar(' '))),
        ("id segment not empty", "state=idle:id=a/b".into(), "state=idle:id=a//b".into(), ReportError::BadIdSegment("".into(), NameError::Empty)),
        ("id not empty", "state=idle:id=a".into(), "state=idle:id=".into(), ReportError::EmptyId),
        ("app charset", "state=idle:app=claude-code".into(), "state=idle:app=cl/aude".into(), ReportError::BadApp("cl/aude".into(), NameError::BadChar('/'))),
        ("app ≤ 32 chars", format!("state=idle:app={seg32}"), format!("state=idle:app={seg33}"), ReportError::BadApp(seg33.clone(), NameError::TooLong(33))),
        ("kind values", "state=blocked:kind=auth".into(), "state=blocked:kind=money".into(), ReportError::BadKind("money".into())),
        ("kind only with blocked", "state=blocked:kind=question".into(), "state=working:kind=question".into(), ReportError::KindWithoutBlocked("working")),
        ("progress 0–100", "state=working:progress=100".into(), "state=working:progress=101".into(), ReportError::BadProgress("101".into())),
        ("progress is digits", "state=working:progress=0".into(), "state=working:progress=-1".into(), ReportError::BadProgress("-1".into())),
        ("progress only with working/blocked", "state=blocked:progress=5".into(), "state=done:progress=5".into(), ReportError::ProgressWithoutWork("done")),
        ("title ≤ 192 bytes", format!("state=idle:title={}", b64(&ok_title)), format!("state=idle:title={}", b64(&long_title)), ReportError::TextTooLong("title", 193, 192)),
        ("msg ≤ 2048 bytes", format!("state=idle:msg={}", b64(&ok_msg)), format!("state=idle:msg={}", b64(&long_msg)), ReportError::TextTooLong("msg", 2049, 2048)),
        ("msg is base64", format!("state=idle:msg={}", b64("ok")), "state=idle:msg=@@@".into(), ReportError::BadBase64("msg")),
        ("title is UTF-8", format!("state=idle:title={}", b64("héllo ✓")), format!("state=idle:title={}", STANDARD.encode([0xff, 0xfe])), ReportError::TextNotUtf8("title")),
        ("msg has no control chars", format!("state=idle:msg={}", b64("one line")), format!("state=idle:msg={}", b64("two\nlines")), ReportError::TextControl("msg", 10)),
        ("title has no C1 controls", format!("state=idle:title={}", b64("tab-free")), format!("state=idle:title={}", b64("a\u{85}b")), ReportError::TextControl("title", 0x85)),
        ("whole ≤ 4096 bytes", unknown_pad(4096), unknown_pad(4097), ReportError::TooLong(4097)),
        ("keys once", "state=idle:app=a".into(), "state=idle:app=a:app=b".into(), ReportError::DuplicateKey("app")),
        ("no empty items", "state=idle:app=a".into(), "state=idle::app=a".into(), ReportError::EmptyItem),
    ];
    for (rule, keeps, breaks, err) in rows {
        assert!(
            matches!(p(&keeps), Ok(Message::Report(_))),
            "{rule}: {keeps:.60} should parse: {:?}",
            p(&keeps)
        );
        assert_eq!(p(&breaks), Err(err), "{rule}: {breaks:.60}");
    }
}

#[test]
fn full_report_decodes_every_key() {
    let r = report(&format!(
        "state=blocked:id=build/test:kind=permission:progress=40:app=my-tool:title={}:msg={}",
        b64("Build ✓"),
        b64("Running tests")
    ));
    assert_eq!(r.state, ReportState::Blocked);
    assert_eq!(r.id.as_ref().map(RecordId::as_str), Some("build/test"));
    assert_eq!(r.kind, Some(BlockedKind::Permission));
    assert_eq!(r.progress, Some(40));
    assert_eq!(r.app.as_deref(), Some("my-tool"));
    assert_eq!(r.title.as_deref(), Some("Build ✓"));
    assert_eq!(r.msg.as_deref(), Some("Running tests"));
}

#[test]
fn codex_reports_parse_in_its_key_order() {
    let r = report("state=blocked:app=codex:kind=permission");
    assert_eq!(r.kind, Some(BlockedKind::Permission));
    assert_eq!(r.app.as_deref(), Some("codex"));
    assert_eq!(report("state=done:app=codex").state, ReportState::Done);
}

#[test]
fn unknown_keys_and_bare_words_are_ignored() {
    let r = report("state=working:future=1:flag:app=x");
    assert_eq!(r.state, ReportState::Working);
    assert_eq!(r.app.as_deref(), Some("x"));
}

#[test]
fn unpadded_base64_is_accepted() {
    let r = report("state=idle:msg=aGk");
    assert_eq!(r.msg.as_deref(), Some("hi"));
}

#[test]
fn query_is_a_query_not_a_report() {
    assert_eq!(p("?"), Ok(Message::Query));
    assert_eq!(parse(b"7501;?", Terminator::Bel), Ok(Message::Query));
    assert!(
        matches!(p("?:state=idle"), Ok(Message::Report(_))),
        "`?` among keys is an unknown key"
    );
    assert_eq!(p("?:app=x"), Err(ReportError::MissingState));
}

#[test]
fn other_oscs_are_not_reports() {
    assert_eq!(
        parse(b"75010;state=idle", Terminator::Bel),
        Err(ReportError::NotStatusReport)
    );
    assert_eq!(
        parse(b"7501", Terminator::Bel),
        Err(ReportError::NotStatusReport)
    );
}

#[test]
fn terminator_counts_towards_the_limit() {
    let body = format!("7501;state=idle:x={}", "p".repeat(4096 - 2 - 1 - 18));
    assert!(parse(body.as_bytes(), Terminator::Bel).is_ok());
    assert_eq!(
        parse(body.as_bytes(), Terminator::St),
        Err(ReportError::TooLong(4097))
    );
}

#[test]
fn record_id_nesting() {
    let a = RecordId::parse("build").unwrap_or_else(|e| panic!("{e}"));
    let ab = RecordId::parse("build/test").unwrap_or_else(|e| panic!("{e}"));
    let ax = RecordId::parse("builder").unwrap_or_else(|e| panic!("{e}"));
    assert!(ab.is_within(&a));
    assert!(a.is_within(&a));
    assert!(!ax.is_within(&a));
    assert!(!a.is_within(&ab));
    assert_eq!(ab.segments().collect::<Vec<_>>(), ["build", "test"]);
}

#[test]
fn errors_say_what_is_wrong() {
    let e = p("state=working:kind=auth").err().map(|e| e.to_string());
    assert_eq!(
        e.as_deref(),
        Some("kind is only allowed with state blocked, not working")
    );
    let e = p("state=idle:app=a b").err().map(|e| e.to_string());
    assert_eq!(
        e.as_deref(),
        Some("app \"a b\": character ' ' is not a letter, digit or one of _ . + -")
    );
}
