//! The THINKTERM_AGENT parser on arbitrary values (raw and base64-wrapped): no panic; whatever it
//! accepts fits S8.1.
#![no_main]
use base64::Engine;
use libfuzzer_sys::fuzz_target;
use thinkterm_sidecar::osc::user_var::{parse, parse_value, UserVarOutcome};

fuzz_target!(|data: &[u8]| {
    let mut payload = b"1337;SetUserVar=THINKTERM_AGENT=".to_vec();
    payload.extend_from_slice(&base64::engine::general_purpose::STANDARD.encode(data).into_bytes());
    for outcome in [parse(&payload), parse(data)]
        .into_iter()
        .chain(std::str::from_utf8(data).ok().map(parse_value))
    {
        if let UserVarOutcome::Report(r) = outcome {
            assert!(r.agent.len() <= 128 && !r.agent.is_empty());
            assert!(r.session.map_or(0, |s| s.len()) <= 512);
        }
    }
});
