//! The scanner and the whole facade on arbitrary bytes: no panic, and the same events whether
//! the input comes whole or split at a point taken from the input itself.
#![no_main]
use libfuzzer_sys::fuzz_target;
use thinkterm_sidecar::osc::PaneSignals;

fuzz_target!(|data: &[u8]| {
    let whole = PaneSignals::new().feed_collect(data, 0);
    let cut = data.first().map_or(0, |&b| b as usize * data.len() / 256);
    let mut split = PaneSignals::new();
    let mut got = split.feed_collect(&data[..cut], 0);
    got.extend(split.feed_collect(&data[cut..], 0));
    assert_eq!(whole, got);
});
