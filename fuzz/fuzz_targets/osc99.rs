//! kitty's OSC 99 notifications: arbitrary bytes cut into payloads (at 0x1e), each parsed and
//! pushed into one pane's assembler with a clock that moves by the byte after the cut. No panic,
//! and the bounds hold whatever arrives: at most `MAX_PENDING` notifications in progress, and a
//! finished title or body never longer than `MAX_TEXT` bytes of input (invalid UTF-8 becomes
//! U+FFFD, three bytes, hence the factor) and never carrying a control character.
#![no_main]
use libfuzzer_sys::fuzz_target;
use thinkterm_sidecar::osc::kitty_notify::{parse, Assembler, MAX_PENDING, MAX_TEXT};

fuzz_target!(|data: &[u8]| {
    let mut assembler = Assembler::default();
    let mut now = 1_700_000_000u64;
    for piece in data.split(|&b| b == 0x1e) {
        let (step, payload) = piece.split_first().unwrap_or((&0, piece));
        now += u64::from(*step % 40);
        let mut with_prefix = b"99;".to_vec();
        with_prefix.extend_from_slice(payload);
        for p in [payload, with_prefix.as_slice()] {
            let Some(chunk) = parse(p) else { continue };
            if let Some(n) = assembler.push(chunk, now) {
                for text in n.title.iter().chain(std::iter::once(&n.body)) {
                    assert!(text.len() <= 3 * MAX_TEXT, "{} bytes", text.len());
                    assert!(!text.chars().any(char::is_control));
                }
                assert!(n.title.as_deref().is_some_and(|t| !t.trim().is_empty()) || !n.body.trim().is_empty());
            }
            assert!(assembler.pending() <= MAX_PENDING);
        }
    }
});
