//! The config loader on arbitrary text (`config.toml`): no panic; every warning about the
//! file names it and a line that exists; every value that was taken is within its key's
//! range (the loader keeps the default for a value out of range).
#![no_main]
use libfuzzer_sys::fuzz_target;
use thinkterm_sidecar::config::{load_text, MAX_FLOOD_PAUSE_KIB_S, MAX_READ_BATCH_MS};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines = text.lines().count().max(1) + 1;
    let l = load_text("fuzz.toml".into(), Some(text), &[]);
    for w in &l.warnings {
        let rest = w
            .strip_prefix("fuzz.toml:")
            .unwrap_or_else(|| panic!("no file in {w:?}"));
        let n: usize = rest
            .split(':')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no line in {w:?}"));
        assert!((1..=lines).contains(&n), "line {n} of {lines}: {w:?}");
    }
    assert!(l.config.read_batch_ms <= MAX_READ_BATCH_MS);
    assert!(l.config.flood_pause_kib_s <= MAX_FLOOD_PAUSE_KIB_S);
    let _ = l.describe();
});
