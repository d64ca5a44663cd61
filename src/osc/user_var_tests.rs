use super::*;
use base64::engine::general_purpose::STANDARD;
use UserVarOutcome::{Clear, Ignore, Report};

fn payload(value: &str) -> Vec<u8> {
    format!("1337;SetUserVar=THINKTERM_AGENT={}", STANDARD.encode(value)).into_bytes()
}

fn p(value: &str) -> UserVarOutcome {
    parse(&payload(value))
}

fn report(value: &str) -> AgentReport {
    match p(value) {
        Report(r) => r,
        other => panic!("{value:?}: {other:?}"),
    }
}

/// One row per S8 rule: a value that keeps it, one that breaks it, and the outcome expected.
#[test]
fn every_rule_kept_and_broken() {
    let a128 = "a".repeat(128);
    let a129 = "a".repeat(129);
    let s512 = "s".repeat(512);
    let s513 = "s".repeat(513);
    let pad = |total: usize| {
        let head = "v1;agent=x;state=idle;x=";
        format!("{head}{}", "p".repeat(total - head.len()))
    };
    #[rustfmt::skip]
    let rows: Vec<(&str, String, String, UserVarOutcome)> = vec![
        ("version v1", "v1;agent=a;state=idle".into(), "v2;agent=a;state=idle".into(), Ignore(IgnoreReason::Version("v2".into()))),
        ("minor versions read as v1", "v1.1;agent=a;state=idle".into(), "v1.x;agent=a;state=idle".into(), Ignore(IgnoreReason::Version("v1.x".into()))),
        ("version first", "v1.12;agent=a;state=idle".into(), "agent=a;v1;state=idle".into(), Ignore(IgnoreReason::Version("agent=a".into()))),
        ("agent required", "v1;agent=a;state=idle".into(), "v1;state=idle".into(), Ignore(IgnoreReason::MissingAgent)),
        ("agent not empty", "v1;agent=a;state=idle".into(), "v1;agent=;state=idle".into(), Ignore(IgnoreReason::MissingAgent)),
        ("state required", "v1;agent=a;state=working".into(), "v1;agent=a".into(), Ignore(IgnoreReason::MissingState)),
        ("agent ≤ 128 bytes", format!("v1;agent={a128};state=idle"), format!("v1;agent={a129};state=idle"), Clear(LimitError::AgentTooLong(129))),
        ("session ≤ 512 bytes", format!("v1;agent=a;state=idle;session={s512}"), format!("v1;agent=a;state=idle;session={s513}"), Clear(LimitError::SessionTooLong(513))),
        ("value ≤ 4096 bytes", pad(4096), pad(4097), Clear(LimitError::ValueTooLong(4097))),
        ("ts is unix seconds", "v1;agent=a;state=idle;ts=1700000000".into(), "v1;agent=a;state=idle;ts=soon".into(), Ignore(IgnoreReason::BadTs("soon".into()))),
        ("keys once", "v1;agent=a;state=idle".into(), "v1;agent=a;state=idle;agent=b".into(), Ignore(IgnoreReason::DuplicateKey("agent"))),
        ("no control chars", "v1;agent=a b;state=idle".into(), "v1;agent=a\x1b;state=idle".into(), Ignore(IgnoreReason::Control("agent"))),
    ];
    for (rule, keeps, breaks, want) in rows {
        assert!(
            matches!(p(&keeps), Report(_)),
            "{rule}: {keeps:.60} should parse: {:?}",
            p(&keeps)
        );
        assert_eq!(p(&breaks), want, "{rule}: {breaks:.60}");
    }
}

#[test]
fn full_value() {
    let r = report("v1;agent=soul;state=blocked;session=s-1;pid=42;ts=1700000000;ended=1;new=x");
    assert_eq!(
        r,
        AgentReport {
            agent: "soul".into(),
            state: Some(AgentState::Blocked),
            session: Some("s-1".into()),
            ts: Some(1_700_000_000),
            ended: true,
        }
    );
}

#[test]
fn unknown_state_drives_nothing_but_is_a_report() {
    let r = report("v1;agent=soul;state=thinking");
    assert_eq!(r.state, None);
    assert_eq!(r.agent, "soul");
}

#[test]
fn pid_and_unknown_keys_are_ignored() {
    assert_eq!(
        report("v1;agent=a;state=idle;pid=not-a-number;zzz;;"),
        report("v1;agent=a;state=idle")
    );
}

#[test]
fn session_may_be_empty_and_ended_only_for_one() {
    let r = report("v1;agent=a;state=idle;session=;ended=0");
    assert_eq!(r.session.as_deref(), Some(""));
    assert!(!r.ended);
}

#[test]
fn other_names_and_commands_are_ignored() {
    assert_eq!(
        parse(b"1337;SetUserVar=OTHER=eA=="),
        Ignore(IgnoreReason::OtherName("OTHER".into()))
    );
    assert_eq!(
        parse(b"1337;Capabilities"),
        Ignore(IgnoreReason::NotUserVar)
    );
    assert_eq!(
        parse(b"1337;SetUserVar=THINKTERM_AGENT=!!"),
        Ignore(IgnoreReason::BadBase64)
    );
    let not_utf8 = format!(
        "1337;SetUserVar=THINKTERM_AGENT={}",
        STANDARD.encode([0xff])
    );
    assert_eq!(parse(not_utf8.as_bytes()), Ignore(IgnoreReason::NotUtf8));
}

#[test]
fn oversized_user_var_clears_other_oversized_ignored() {
    assert!(matches!(
        oversized(b"1337;SetUserVar=THINKTERM_AGENT=AAAA", 6000),
        Clear(LimitError::ValueTooLong(_))
    ));
    assert_eq!(
        oversized(b"0;title", 6000),
        Ignore(IgnoreReason::NotUserVar)
    );
}

const NOW: u64 = 1_800_000_000;

fn with(state: &str, ts: Option<u64>, ended: bool) -> AgentReport {
    let mut v = format!("v1;agent=a;state={state}");
    if let Some(ts) = ts {
        v += &format!(";ts={ts}");
    }
    if ended {
        v += ";ended=1";
    }
    report(&v)
}

/// state, age, observable, foreground leader, ended; identity and state expected.
type Row = (
    &'static str,
    Option<i64>,
    bool,
    bool,
    bool,
    bool,
    Option<AgentState>,
);

/// (state, age in seconds (negative: future), observable, fg leader, ended) → authority.
#[test]
fn authority_table() {
    let h6 = MAX_AGE_SECS as i64;
    let m5 = MAX_FUTURE_SECS as i64;
    #[rustfmt::skip]
    let rows: &[Row] = &[
        // state,   age,          obs,  lead,  ended, identity, state
        ("working", Some(0),      true, false, false, true,  Some(AgentState::Working)),
        ("working", Some(h6),     true, false, false, true,  Some(AgentState::Working)),
        ("working", Some(h6 + 1), true, false, false, true,  None),
        ("working", Some(h6 + 1), false, false, false, false, None),
        ("blocked", Some(-(m5 - 1)), true, false, false, true, Some(AgentState::Blocked)),
        ("blocked", Some(-m5),    true, false, false, true,  None),
        ("blocked", Some(-m5),    false, false, false, false, None),
        ("idle",    Some(h6 * 10), false, false, false, true, Some(AgentState::Idle)),
        ("idle",    Some(-m5 * 10), true, false, false, true, Some(AgentState::Idle)),
        ("working", None,         false, false, false, true, Some(AgentState::Working)),
        ("working", Some(0),      true, true,  true,  true,  Some(AgentState::Working)),
        ("working", Some(0),      true, false, true,  false, None),
        ("thinking", Some(0),     true, false, false, true,  None),
    ];
    for &(state, age, obs, lead, ended, identity, want) in rows {
        let ts = age.map(|a| (NOW as i64 - a) as u64);
        let r = with(state, ts, ended);
        let got = authority(&r, NOW, obs, lead);
        assert_eq!(
            got,
            Authority {
                identity,
                state: want
            },
            "{state} age={age:?} obs={obs} lead={lead} ended={ended}"
        );
    }
}
