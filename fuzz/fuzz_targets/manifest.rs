//! The manifest loader and compiler on arbitrary text (a rule file's TOML), and the engine on
//! what it compiles: no panic; every error names the file and a line that exists
//! (`fuzz.toml:N: reason`); a manifest that compiles keeps the limits; classifying a screen
//! with it ends. The input is the manifest, then optionally a NUL byte and a screen.
#![no_main]
use libfuzzer_sys::fuzz_target;
use thinkterm_sidecar::rules::compile::{compile, MAX_RULES};
use thinkterm_sidecar::rules::{eval, Snapshot};

fuzz_target!(|data: &[u8]| {
    let (text, screen) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let lines = text.lines().count().max(1) + 1;
    match compile(text, "fuzz.toml") {
        Ok(m) => {
            assert!(m.rules.len() <= MAX_RULES, "{} rules", m.rules.len());
            let screen = String::from_utf8_lossy(screen);
            let _ = eval::classify(
                &m,
                &Snapshot {
                    screen: &screen,
                    osc_title: Some(&screen),
                    osc_progress: None,
                },
            );
        }
        Err(errors) => {
            assert!(!errors.is_empty());
            for e in errors {
                let rest = e
                    .strip_prefix("fuzz.toml:")
                    .unwrap_or_else(|| panic!("no file in {e:?}"));
                let n: usize = rest
                    .split(':')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("no line in {e:?}"));
                assert!((1..=lines).contains(&n), "line {n} of {lines}: {e:?}");
            }
        }
    }
});
