//! Window titles (OSC 0 and OSC 2) and the spinner some programs put at their start while they
//! run (S3.3 item 3). OSC 1 (icon name only) is not a title.
//!
//! A spinner is one animation frame followed by whitespace or the end of the title. Frames
//! counted: braille U+2800–U+28FF (Codex sends `⠋ codex`, `⠙ codex`, …; most CLI spinners are
//! braille), the quarter circles ◐◑◒◓, and the other geometric frame sets common spinner
//! libraries cycle through (◴◵◶◷, ◰◱◲◳, ◜◝◞◟◠◡). Excluded on purpose: glyphs agents use as a
//! *steady* mark — Claude Code's `✳ Claude Code` (its title while idle, and under tmux the only
//! title it ever sends; its ✢✶✻✽ relatives would be read the same way, so the whole asterisk
//! family is left out), Gemini's `◇ Ready` / `✦ Working…` / `✋ Action Required`, Pi's `π`. One
//! title cannot tell a steady mark from a frame, and a false "running" from an idle program is
//! worse than a missed one; those agents' titles are read by screen rules (`osc_title`) instead.
//! (Claude Code before 2.1.3xx did spin braille frames in its title, `⠐ Claude Code`: those
//! count.)

/// Longest title kept, in bytes (titles beyond are cut at a character boundary).
pub const MAX_TITLE_BYTES: usize = 1024;

/// Parses an OSC payload: the title of `0;…` or `2;…`, else `None`. Invalid UTF-8 becomes
/// U+FFFD; control characters are removed.
pub fn parse(payload: &[u8]) -> Option<String> {
    let text = payload
        .strip_prefix(b"0;")
        .or_else(|| payload.strip_prefix(b"2;"))?;
    let lossy = String::from_utf8_lossy(text);
    let mut out = String::with_capacity(lossy.len().min(MAX_TITLE_BYTES));
    for c in lossy.chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > MAX_TITLE_BYTES {
            break;
        }
        out.push(c);
    }
    Some(out)
}

/// Whether `c` is a spinner animation frame (see the module docs for the set and why).
pub fn is_spinner_glyph(c: char) -> bool {
    matches!(c,
        '\u{2800}'..='\u{28FF}'        // braille patterns
        | '\u{25D0}'..='\u{25D3}'      // ◐◑◒◓
        | '\u{25F4}'..='\u{25F7}'      // ◴◵◶◷
        | '\u{25F0}'..='\u{25F3}'      // ◰◱◲◳
        | '\u{25DC}'..='\u{25DF}'      // ◜◝◞◟
        | '\u{25E0}'..='\u{25E1}'      // ◠◡
    )
}

/// The spinner frame at the start of `title`, if it has one.
pub fn spinner_frame(title: &str) -> Option<char> {
    let mut chars = title.chars();
    let first = chars.next()?;
    let next_ok = chars.next().is_none_or(char::is_whitespace);
    (is_spinner_glyph(first) && next_ok).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::osc::scanner::{Event, Scanner};

    #[test]
    fn titles_from_osc_0_and_2_only() {
        assert_eq!(parse(b"0;codex").as_deref(), Some("codex"));
        assert_eq!(parse(b"2;t").as_deref(), Some("t"));
        assert_eq!(parse(b"0;").as_deref(), Some(""));
        assert_eq!(parse(b"1;icon"), None);
        assert_eq!(parse(b"7501;state=idle"), None);
        assert_eq!(parse(b"0;a\x7fb\xffc").as_deref(), Some("ab\u{FFFD}c"));
        let long = format!("0;{}", "é".repeat(MAX_TITLE_BYTES));
        assert_eq!(
            parse(long.as_bytes()).map(|t| t.len()),
            Some(MAX_TITLE_BYTES)
        );
    }

    #[test]
    fn spinner_frames() {
        let rows = [
            ("⠋ codex", Some('⠋')),
            ("⣾ build", Some('⣾')),
            ("◐ working", Some('◐')),
            ("◓", Some('◓')),
            ("◴ x", Some('◴')),
            ("codex", None),
            ("✳ Claude Code", None),
            ("✶ Claude Code", None),
            ("◇  Ready (gemini)", None),
            ("✦  Working… (gemini)", None),
            ("π - pi", None),
            ("⠋codex", None),
            ("[ . ] Action Required | codex", None),
            ("", None),
        ];
        for (t, want) in rows {
            assert_eq!(spinner_frame(t), want, "{t:?}");
        }
    }

    /// Every title every recorded agent sent: only the braille frames are spinners (Codex's, and
    /// Claude Code 2.1.197's `⠐ Claude Code`); steady marks (`✳`, `◇`, `✦`, `π`) are not.
    #[test]
    fn fixture_titles() {
        let root = crate::test_fixtures::root();
        let agents =
            std::fs::read_dir(&root).unwrap_or_else(|e| panic!("fixtures {}: {e}", root.display()));
        let mut seen = 0;
        let mut braille_seen = false;
        for ver in agents
            .flatten()
            .filter_map(|a| std::fs::read_dir(a.path()).ok())
        {
            for v in ver.flatten() {
                let path = v.path().join("raw-main-120x40.bin");
                let raw = std::fs::read(&path)
                    .unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()));
                let agent = v.path().display().to_string();
                let mut titles = Vec::new();
                Scanner::new().feed(&raw, &mut |ev| {
                    if let Event::Osc { payload, .. } = ev {
                        titles.extend(parse(payload));
                    }
                });
                for t in titles {
                    seen += 1;
                    let braille = t.starts_with(|c| ('\u{2800}'..='\u{28FF}').contains(&c));
                    assert_eq!(spinner_frame(&t).is_some(), braille, "{agent}: {t:?}");
                    braille_seen |= braille && agent.contains("claude-code");
                }
            }
        }
        assert!(seen > 300, "expected the recorded titles, saw {seen}");
        assert!(
            braille_seen,
            "Claude Code 2.1.197's spinner titles are among them"
        );
    }
}
