//! The OSC 7501 parser on arbitrary payloads: no panic; whatever it accepts fits S7.1.
#![no_main]
use libfuzzer_sys::fuzz_target;
use thinkterm_sidecar::osc::scanner::Terminator;
use thinkterm_sidecar::osc::status_report::{parse, Message};

fuzz_target!(|data: &[u8]| {
    let mut payload = b"7501;".to_vec();
    payload.extend_from_slice(data);
    if let Ok(Message::Report(r)) = parse(&payload, Terminator::Bel) {
        assert!(payload.len() + 3 <= 4096);
        assert!(r.title.as_ref().map_or(0, |t| t.len()) <= 192);
        assert!(r.msg.as_ref().map_or(0, |m| m.len()) <= 2048);
        assert!(r.progress.map_or(true, |p| p <= 100));
        assert!(r.id.as_ref().map_or(true, |i| i.as_str().len() <= 128));
    }
});
