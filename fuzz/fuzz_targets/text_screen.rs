//! The text model of a screen on arbitrary bytes, at a size taken from the input: no panic, the
//! same text whether the bytes come whole or split at a point taken from the input, and the
//! rows' kept text the same as the text read afresh.
#![no_main]
use libfuzzer_sys::fuzz_target;
use thinkterm_sidecar::vt::TextScreen;

fuzz_target!(|data: &[u8]| {
    let Some((&size, data)) = data.split_first() else {
        return;
    };
    let (rows, cols) = (1 + u16::from(size & 0x0f), 1 + u16::from(size >> 4) * 5);
    let mut whole = TextScreen::new(rows, cols);
    whole.process(data);
    let cut = data.first().map_or(0, |&b| b as usize * data.len() / 256);
    let mut split = TextScreen::new(rows, cols);
    split.process(&data[..cut]);
    let kept = split.text();
    assert_eq!(kept, split.text_uncached());
    split.process(&data[cut..]);
    let text = whole.text();
    assert_eq!(text, split.text());
    assert_eq!(text, whole.text_uncached());
});
