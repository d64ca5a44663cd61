//! The control-mode side, as the daemon reads tmux: the line splitter, the decoder (reply
//! blocks, notifications) and the octal un-escaping of `%output`. No panic, and split
//! invariance: the stream cut at two points taken from the input, fed in three chunks, gives
//! the same notifications (and the same un-escaped output) as the stream fed whole.
#![no_main]
use libfuzzer_sys::fuzz_target;
use thinkterm_sidecar::tmux::escape::{escape, unescape};
use thinkterm_sidecar::tmux::protocol::{Decoder, LineSplitter, Notification};

/// Everything the stream decodes to, with each `%output`'s bytes un-escaped.
fn decode(chunks: &[&[u8]]) -> Vec<(Notification, Option<Vec<u8>>)> {
    let mut split = LineSplitter::default();
    let mut dec = Decoder::default();
    let mut out = Vec::new();
    for c in chunks {
        split.feed(c, |line| {
            if let Some(n) = dec.decode(line) {
                let raw = match &n {
                    Notification::Output { data, .. }
                    | Notification::ExtendedOutput { data, .. } => Some(data.unescape()),
                    _ => None,
                };
                out.push((n, raw));
            }
        });
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let whole = decode(&[data]);
    let at = |i: usize| {
        data.get(i)
            .map_or(0, |&b| b as usize * data.len() / 256)
            .min(data.len())
    };
    let (a, b) = {
        let (x, y) = (at(0), at(1));
        (x.min(y), x.max(y))
    };
    let cut = decode(&[&data[..a], &data[a..b], &data[b..]]);
    assert_eq!(whole, cut, "split at {a} and {b}");
    // Every byte survives tmux's escaping and ours un-escaping it.
    assert_eq!(unescape(&escape(data)), data);
});
