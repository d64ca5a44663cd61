use super::*;
use proptest::prelude::*;

/// An owned copy of an event, so tests can collect them.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Got {
    Osc(Vec<u8>, Terminator, bool),
    Oversized(Vec<u8>, usize),
    Bell,
}

fn own(ev: Event<'_>) -> Got {
    match ev {
        Event::Osc {
            payload,
            terminator,
            passthrough,
        } => Got::Osc(payload.to_vec(), terminator, passthrough),
        Event::Oversized { head, len } => Got::Oversized(head.to_vec(), len),
        Event::Bell => Got::Bell,
    }
}

fn scan_chunks(chunks: &[&[u8]]) -> Vec<Got> {
    let mut s = Scanner::new();
    let mut out = Vec::new();
    for c in chunks {
        s.feed(c, &mut |ev| out.push(own(ev)));
    }
    out
}

fn scan(input: &[u8]) -> Vec<Got> {
    scan_chunks(&[input])
}

fn scan_bytewise(input: &[u8]) -> Vec<Got> {
    let chunks: Vec<&[u8]> = input.chunks(1).collect();
    scan_chunks(&chunks)
}

fn osc(p: &str, t: Terminator) -> Got {
    Got::Osc(p.as_bytes().to_vec(), t, false)
}

fn pt(p: &str, t: Terminator) -> Got {
    Got::Osc(p.as_bytes().to_vec(), t, true)
}

use Terminator::{Bel, St};

/// The examples every split test runs: (input, expected events).
fn examples() -> Vec<(Vec<u8>, Vec<Got>)> {
    let big = format!("\x1b]0;{}\x07", "x".repeat(MAX_OSC_PAYLOAD));
    let fits = format!("\x1b]0;{}\x07", "x".repeat(MAX_OSC_PAYLOAD - 2));
    let uv_long = format!(
        "\x1b]{}{}\x07",
        std::str::from_utf8(USER_VAR_PREFIX).unwrap_or_default(),
        "A".repeat(5000)
    );
    let uv_too_long = format!(
        "\x1b]{}{}\x07",
        std::str::from_utf8(USER_VAR_PREFIX).unwrap_or_default(),
        "A".repeat(5465)
    );
    vec![
        (b"plain text only".to_vec(), vec![]),
        (b"a\x1b]0;title\x07b".to_vec(), vec![osc("0;title", Bel)]),
        (b"\x1b]2;t\x1b\\".to_vec(), vec![osc("2;t", St)]),
        (
            b"\x1b]7501;state=idle:app=codex\x1b\\\x1b]7501;state=working:app=codex\x1b\\".to_vec(),
            vec![
                osc("7501;state=idle:app=codex", St),
                osc("7501;state=working:app=codex", St),
            ],
        ),
        (
            "\x1b]0;⠋ codex\x07".as_bytes().to_vec(),
            vec![osc("0;⠋ codex", Bel)],
        ),
        (
            b"\x1b]133;A\x07$ \x1b]133;B\x07ls\x1b]133;C\x07\x1b]133;D;0\x07".to_vec(),
            vec![
                osc("133;A", Bel),
                osc("133;B", Bel),
                osc("133;C", Bel),
                osc("133;D;0", Bel),
            ],
        ),
        // CSI, SGR and other escapes are plain text to us.
        (
            b"\x1b[1;31mred\x1b[0m\x1b7\x1b8\x1b]9;4;1;50\x07".to_vec(),
            vec![osc("9;4;1;50", Bel)],
        ),
        // CAN and SUB abort; the next sequence still works.
        (
            b"\x1b]0;lost\x18\x1b]0;kept\x07\x1b]0;lost\x1a".to_vec(),
            vec![osc("0;kept", Bel)],
        ),
        // A new ESC aborts the open OSC and starts the next one.
        (b"\x1b]0;a\x1b]0;b\x07".to_vec(), vec![osc("0;b", Bel)]),
        (b"\x1b]0;a\x1b[31m\x07".to_vec(), vec![Got::Bell]),
        // Other C0 inside an OSC are ignored.
        (b"\x1b]0;a\nb\rc\x07".to_vec(), vec![osc("0;abc", Bel)]),
        // Bare BELs.
        (b"ding\x07dong\x1b\x07".to_vec(), vec![Got::Bell, Got::Bell]),
        // Stray ST and ESC ESC.
        (b"\x1b\\\x1b\x1b]0;x\x07".to_vec(), vec![osc("0;x", Bel)]),
        // Length: fits, too long (dropped whole), user var allowance.
        (
            fits.clone().into_bytes(),
            vec![Got::Osc(
                fits.as_bytes()[2..fits.len() - 1].to_vec(),
                Bel,
                false,
            )],
        ),
        (
            big.clone().into_bytes(),
            vec![Got::Oversized(
                big.as_bytes()[2..2 + OVERSIZED_HEAD].to_vec(),
                MAX_OSC_PAYLOAD + 2,
            )],
        ),
        (
            uv_long.clone().into_bytes(),
            vec![Got::Osc(
                uv_long.as_bytes()[2..uv_long.len() - 1].to_vec(),
                Bel,
                false,
            )],
        ),
        (
            uv_too_long.clone().into_bytes(),
            vec![Got::Oversized(
                uv_too_long.as_bytes()[2..2 + OVERSIZED_HEAD].to_vec(),
                MAX_USER_VAR_PAYLOAD + 1,
            )],
        ),
        // tmux passthrough, ESCs doubled, both terminators inside.
        (
            b"\x1bPtmux;\x1b\x1b]7501;state=working\x1b\x1b\\\x1b\\after\x1b]0;t\x07".to_vec(),
            vec![pt("7501;state=working", St), osc("0;t", Bel)],
        ),
        // The real passthrough opencode sends (XTGETTCAP, DECRQM, OSC 4, kitty graphics, DA1).
        (
            b"\x1bPtmux;\x1b\x1bP+q4d73\x1b\x1b\\\x1b\x1b[?1016$p\x1b\\\x1bPtmux;\x1b\x1b]4;0;?\x07\x1b\\\x1bPtmux;\x1b\x1b_Gi=31337,s=1;AAAA\x1b\x1b\\\x1b\x1b[c\x1b\\".to_vec(),
            vec![pt("4;0;?", Bel)],
        ),
        // An unfinished inner OSC is dropped when the passthrough ends.
        (
            b"\x1bPtmux;\x1b\x1b]0;cut\x1b\\\x1b]0;next\x07".to_vec(),
            vec![osc("0;next", Bel)],
        ),
        // CAN aborts a passthrough; a lone ESC+byte inside is kept as both bytes.
        (
            b"\x1bPtmux;\x1b\x1b]0;a\x18\x1b]0;b\x07".to_vec(),
            vec![osc("0;b", Bel)],
        ),
        // Other DCS strings are skipped to their ST, OSC-looking bytes inside included.
        (
            b"\x1bP1$r]0;no\x07\x1b\\\x1b]0;yes\x07".to_vec(),
            vec![osc("0;yes", Bel)],
        ),
        (
            b"\x1bPtmu]0;x\x07\x1b\\z".to_vec(),
            vec![],
        ),
        // 8-bit C1 is not ST: UTF-8 continuation bytes stay in the payload.
        (
            "\x1b]0;\u{271c}\u{9c}x\x07".as_bytes().to_vec(),
            vec![osc("0;\u{271c}\u{9c}x", Bel)],
        ),
    ]
}

#[test]
fn examples_whole() {
    for (input, want) in examples() {
        assert_eq!(
            scan(&input),
            want,
            "input {:?}",
            String::from_utf8_lossy(&input)
        );
    }
}

#[test]
fn examples_byte_by_byte() {
    for (input, want) in examples() {
        assert_eq!(
            scan_bytewise(&input),
            want,
            "input {:?}",
            String::from_utf8_lossy(&input)
        );
    }
}

#[test]
fn examples_at_every_single_split() {
    for (input, want) in examples() {
        if input.len() > 200 {
            continue; // the long ones are covered by the random splits
        }
        for k in 0..=input.len() {
            let (a, b) = input.split_at(k);
            assert_eq!(scan_chunks(&[a, b]), want, "split at {k}");
        }
    }
}

#[test]
fn reset_forgets_half_sequence() {
    let mut s = Scanner::new();
    let mut out = Vec::new();
    s.feed(b"\x1b]0;half", &mut |ev| out.push(own(ev)));
    s.reset();
    s.feed(b" tail\x07\x1b]0;x\x07", &mut |ev| out.push(own(ev)));
    assert_eq!(out, vec![Got::Bell, osc("0;x", Bel)]);
}

#[test]
fn buffer_never_grows_past_its_first_allocation() {
    let mut s = Scanner::new();
    let cap = s.buf.capacity();
    let mut n = 0;
    let long = format!(
        "\x1b]{}{}\x07",
        "1337;SetUserVar=THINKTERM_AGENT=",
        "A".repeat(100_000)
    );
    s.feed(long.as_bytes(), &mut |_| n += 1);
    assert_eq!(s.buf.capacity(), cap);
    assert_eq!(n, 1);
}

/// The raw recording of `which` (`agent` or `agent/version`, see `version_dir`).
fn fixture(which: &str) -> Vec<u8> {
    let ver = crate::test_fixtures::version_dir(which);
    let raw = ver.join("raw-main-120x40.bin");
    std::fs::read(&raw).unwrap_or_else(|e| panic!("fixture {}: {e}", raw.display()))
}

#[test]
fn codex_recording_yields_its_seventeen_status_reports_however_split() {
    let raw = fixture("codex/0.169.0");
    let reports = |evs: &[Got]| -> Vec<Vec<u8>> {
        evs.iter()
            .filter_map(|g| match g {
                Got::Osc(p, _, _) if p.starts_with(b"7501;") => Some(p.clone()),
                _ => None,
            })
            .collect()
    };
    let whole = scan(&raw);
    let r = reports(&whole);
    assert_eq!(r.len(), 17, "escapes.md counts 17 OSC 7501");
    assert_eq!(r[0], b"7501;state=idle:app=codex");
    assert!(r.contains(&b"7501;state=blocked:app=codex:kind=permission".to_vec()));
    let titles = whole
        .iter()
        .filter(|g| matches!(g, Got::Osc(p, _, _) if p.starts_with(b"0;")))
        .count();
    assert_eq!(titles, 369, "escapes.md counts 369 OSC 0");
    assert_eq!(scan_bytewise(&raw), whole);
    let chunks: Vec<&[u8]> = raw.chunks(977).collect();
    assert_eq!(scan_chunks(&chunks), whole);
}

#[test]
fn pi_recording_prompt_marks() {
    let raw = fixture("pi");
    let evs = scan(&raw);
    let count = |p: &[u8]| {
        evs.iter()
            .filter(|g| matches!(g, Got::Osc(q, _, _) if q.as_slice() == p))
            .count()
    };
    assert_eq!(count(b"133;A"), 8);
    assert_eq!(count(b"133;B"), 87);
    assert_eq!(count(b"133;C"), 87);
}

fn split_points(len: usize, cuts: &[usize]) -> Vec<usize> {
    let mut v: Vec<usize> = cuts.iter().map(|c| c % (len + 1)).collect();
    v.sort_unstable();
    v
}

fn scan_split(input: &[u8], points: &[usize]) -> Vec<Got> {
    let mut chunks = Vec::new();
    let mut last = 0;
    for &p in points {
        chunks.push(&input[last..p]);
        last = p;
    }
    chunks.push(&input[last..]);
    scan_chunks(&chunks)
}

proptest! {
    #[test]
    fn examples_at_random_splits(which in 0usize..64, cuts in proptest::collection::vec(any::<usize>(), 0..12)) {
        let ex = examples();
        let (input, want) = &ex[which % ex.len()];
        let points = split_points(input.len(), &cuts);
        prop_assert_eq!(&scan_split(input, &points), want);
    }

    #[test]
    fn any_bytes_same_events_however_split(
        input in proptest::collection::vec(
            prop_oneof![Just(0x1bu8), Just(0x07), Just(b']'), Just(b'\\'), Just(b'P'), Just(b';'),
                        Just(0x18), Just(b'0'), Just(b't'), Just(b'm'), Just(b'u'), Just(b'x'), any::<u8>()],
            0..300),
        cuts in proptest::collection::vec(any::<usize>(), 0..10),
    ) {
        let whole = scan(&input);
        let points = split_points(input.len(), &cuts);
        prop_assert_eq!(&scan_split(&input, &points), &whole);
        prop_assert_eq!(&scan_bytewise(&input), &whole);
    }

    #[test]
    fn real_recording_at_random_splits(cuts in proptest::collection::vec(any::<usize>(), 1..40)) {
        let raw = fixture("codex/0.169.0");
        let whole = scan(&raw);
        let points = split_points(raw.len(), &cuts);
        prop_assert_eq!(scan_split(&raw, &points), whole);
    }
}
