//! Tests of [`super`]: scanning output that was skipped or split.

use super::*;
use crate::tmux::escape::Escaped;
use crate::tmux::grid::Grid;
use base64::Engine as _;
use proptest::prelude::*;
use std::time::Duration;

/// Feeds raw chunks to one scanner and their escaped form, through [`Escaped::to_scan`], to
/// another; returns both signal lists without bells.
fn both(chunks: &[Vec<u8>]) -> (Vec<Signal>, Vec<Signal>) {
    let (mut all, mut fast) = (PaneSignals::new(), PaneSignals::new());
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for c in chunks {
        a.extend(all.feed_collect(c, 7));
        if let Some(raw) = Escaped::from_raw(c).to_scan(fast.is_idle()) {
            b.extend(fast.feed_collect(&raw, 7));
        }
    }
    let no_bell =
        |v: Vec<Signal>| -> Vec<Signal> { v.into_iter().filter(|s| *s != Signal::Bell).collect() };
    (no_bell(a), no_bell(b))
}

#[test]
fn skipping_text_before_an_esc_loses_no_signal_of_a_real_recording() {
    let raw = crate::test_fixtures::read("codex/0.169.0/raw-main-120x40.bin");
    for size in [1, 7, 333, 4096] {
        let chunks: Vec<Vec<u8>> = raw.chunks(size).map(<[u8]>::to_vec).collect();
        let (a, b) = both(&chunks);
        assert!(a.iter().any(|s| matches!(s, Signal::StatusReport(_))));
        assert_eq!(a, b, "chunks of {size}");
    }
}

/// Regression: after output was skipped (a `%continue`, the end of a flood pause), a
/// sequence left half open swallowed the text that followed, and the next title with it.
#[test]
fn a_sequence_left_open_by_skipped_output_does_not_swallow_what_follows() {
    let t = Instant::now();
    let now = Now::fake(t, 1_000_000);
    let feed = |p: &mut PaneEntry, bytes: &[u8]| {
        p.on_output(now, &PaneBytes::Escaped(Escaped::from_raw(bytes)), true);
    };
    // What came after the skip: a prompt, then a bell.
    let mut skipped = PaneEntry::new(1, t, 0);
    feed(&mut skipped, b"\x1b]0;half a ti");
    skipped.output_skipped();
    feed(&mut skipped, b"user@host:~$ ");
    feed(&mut skipped, b"\x07");
    assert_eq!(skipped.signals.title(), None);
    feed(&mut skipped, b"\x1b]2;next title\x07");
    assert_eq!(skipped.signals.title(), Some("next title"));
    // Without the reset the prompt and the bell close the open title: a title made of the
    // piece before the skip and the text after it (what the fix prevents).
    let mut open = PaneEntry::new(1, t, 0);
    feed(&mut open, b"\x1b]0;half a ti");
    feed(&mut open, b"user@host:~$ ");
    feed(&mut open, b"\x07");
    assert_eq!(open.signals.title(), Some("half a tiuser@host:~$ "));
}

proptest! {
    #[test]
    fn skipping_text_before_an_esc_loses_no_signal(
        pieces in proptest::collection::vec(0usize..10, 0..16),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        const PIECES: [&[u8]; 10] = [
            b"\x1b]0;a title\x07",
            b"\x1b]2;t\x1b\\",
            b"\x1b]7501;state=working\x1b\\",
            b"\x1b]9;4;1;50\x07",
            b"\x1bPtmux;\x1b\x1b]0;p\x07\x1b\\",
            b"plain text, $ ls\r\n",
            b"\x07",
            b"\x1b[1mbold\x1b[0m",
            b"\x1b]0;cut\x18",
            b"\x1b]133;A\x07",
        ];
        let stream: Vec<u8> = pieces.iter().flat_map(|&i| PIECES[i].iter().copied()).collect();
        let mut at: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
        at.sort_unstable();
        let mut chunks = Vec::new();
        let mut from = 0;
        for to in at.into_iter().chain([stream.len()]) {
            chunks.push(stream[from..to].to_vec());
            from = to;
        }
        let (a, b) = both(&chunks);
        prop_assert_eq!(a, b);
    }
}

/// The bytes that carried a state are kept a while, with when they came, for a pane whose
/// respawn the daemon learns after its new program reported; titles and text are not kept.
#[test]
fn bytes_that_carried_a_state_are_kept_for_a_respawn_and_age_out() {
    let t = Instant::now();
    let mut p = PaneEntry::new(1, t, 0);
    let report = crate::osc::encode::status_report(&crate::osc::encode::ReportArgs {
        state: "blocked".into(),
        msg: None,
        app: Some("x".into()),
        id: None,
        progress: None,
        title: None,
        kind: None,
    })
    .unwrap();
    let at = |ms: u64| Now::fake(t + Duration::from_millis(ms), 1_000_000);
    p.on_output(
        at(0),
        &PaneBytes::Raw(b"\x1b]2;a title\x07plain text".to_vec()),
        true,
    );
    p.on_output(at(100), &PaneBytes::Raw(report.clone()), true);
    assert_eq!(p.recent.since(t), vec![report.clone()]);
    assert!(p.recent.since(t + Duration::from_millis(101)).is_empty());
    // Past RECENT_SIGNALS the next kept bytes push it out.
    let later = 100 + super::super::recent::RECENT_SIGNALS.as_millis() as u64;
    p.on_output(at(later), &PaneBytes::Raw(report.clone()), true);
    assert_eq!(p.recent.since(t).len(), 1);
}

/// Output asks for a look at the foreground a moment after it (the program a typed line starts
/// comes after the shell's echo of the line), at most every 250 ms while the output goes on (two
/// seconds where an agent runs), and once more after the last of it; output after that long a
/// quiet, at once.
#[test]
fn output_asks_for_a_look_a_moment_later_and_not_too_often() {
    let t = Instant::now();
    let ms = |n: u64| t + Duration::from_millis(n);
    let at = |n: u64| Now::fake(ms(n), 1_000_000);
    let off = Grid::off();
    // This process stands for the pane's first process: its look reads real files.
    let mut p = PaneEntry::new(std::process::id(), t, 0);
    assert_eq!(p.look_due(off), None, "nothing written, nothing to look at");
    p.on_output(at(0), &PaneBytes::Raw(b"sleep 300\r\n".to_vec()), true);
    assert_eq!(p.look_due(off), Some(ms(100)), "from the first output on");
    // Never probed: the look asks for a probe.
    assert!(p.look_after_output(ms(100)));
    assert_eq!(p.look_due(off), None, "the output it covers is done with");
    // Output goes on: the next look comes 250 ms after the last.
    p.on_output(at(150), &PaneBytes::Raw(b"x".to_vec()), true);
    p.on_output(at(300), &PaneBytes::Raw(b"x".to_vec()), true);
    assert_eq!(p.look_due(off), Some(ms(350)));
    // Output just before a look is not covered by it: another look follows.
    p.on_output(at(340), &PaneBytes::Raw(b"x".to_vec()), true);
    p.look_after_output(ms(350));
    assert_eq!(p.look_due(off), Some(ms(600)));
    p.look_after_output(ms(600));
    assert_eq!(p.look_due(off), None);
    // Output after 250 ms of quiet (a command line's Enter) is looked after at once.
    p.on_output(at(700), &PaneBytes::Raw(b"\r\n".to_vec()), true);
    assert_eq!(p.look_due(off), Some(ms(800)));
    p.look_after_output(ms(800));
    // Where an agent runs (it draws all the time it works), every two seconds.
    p.identity = Identity::Agent {
        agent: "claude".into(),
        pid: 1,
    };
    p.on_output(at(850), &PaneBytes::Raw(b"x".to_vec()), true);
    assert_eq!(p.look_due(off), Some(ms(2800)));
    p.look_after_output(ms(2800));
    p.on_output(at(3000), &PaneBytes::Raw(b"x".to_vec()), true);
    assert_eq!(
        p.look_due(off),
        Some(ms(3100)),
        "after two seconds of quiet"
    );
    // On the grid pipes are read on: the next instant at or after it (36 × 87.5 ms).
    let grid = Grid::new(t, Duration::from_micros(87_500));
    assert_eq!(p.look_due(grid), Some(t + Duration::from_micros(3_150_000)));
    p.look_after_output(ms(3100));
    p.on_output(at(3500), &PaneBytes::Raw(b"x".to_vec()), true);
    assert_eq!(p.look_due(off), Some(ms(5100)));
    // 59 × 87.5 ms.
    assert_eq!(p.look_due(grid), Some(t + Duration::from_micros(5_162_500)));
    // A `THINKTERM_AGENT` value makes every look a full probe: every two seconds, too.
    let mut q = PaneEntry::new(std::process::id(), t, 0);
    let value = base64::engine::general_purpose::STANDARD.encode("v1;agent=tool;state=working");
    let var = format!("\x1b]1337;SetUserVar=THINKTERM_AGENT={value}\x07");
    q.on_output(at(0), &PaneBytes::Raw(var.into_bytes()), true);
    assert!(q.signals.user_var().is_some());
    q.look_after_output(ms(100));
    q.on_output(at(200), &PaneBytes::Raw(b"x".to_vec()), true);
    assert_eq!(q.look_due(Grid::off()), Some(ms(2100)));
}
