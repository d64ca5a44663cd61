use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::*;

/// One frame of a recording: where it is in the raw bytes, what tmux showed, its cursor.
struct Frame {
    name: PathBuf,
    offset: usize,
    screen: String,
    cursor: CursorState,
}

/// Every recording in `tests/fixtures/agents` with its frames, in stream order.
fn recordings() -> Vec<(Vec<u8>, Vec<Frame>)> {
    let mut out = Vec::new();
    for dir in crate::test_fixtures::version_dirs("agents") {
        let Ok(raw) = std::fs::read(dir.join("raw-main-120x40.bin")) else {
            continue;
        };
        let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        names.sort();
        let mut frames = Vec::new();
        for name in names {
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&name).unwrap()).unwrap();
            if v["raw_file"].as_str() != Some("raw-main-120x40.bin") {
                continue;
            }
            let num = |k: &str| v["cursor"][k].as_str().and_then(|s| s.parse().ok());
            frames.push(Frame {
                offset: v["raw_offset"].as_u64().unwrap() as usize,
                screen: std::fs::read_to_string(name.with_extension("txt")).unwrap(),
                cursor: CursorState {
                    x: num("x").unwrap(),
                    y: num("y").unwrap(),
                    alternate: v["alternate_on"].as_str() == Some("1"),
                    region: (0, 39),
                },
                name,
            });
        }
        out.push((raw, frames));
    }
    out
}

/// Whether the model shows the frame's screen as the rules read it (the frame is named when not).
fn shows(m: &mut ScreenModel, f: &Frame) -> bool {
    let same = screen_lines(&m.text()) == screen_lines(&f.screen);
    if !same {
        eprintln!("differs: {}", f.name.display());
    }
    same
}

#[test]
fn the_model_fed_a_recording_shows_the_screens_tmux_showed() {
    let (mut same, mut all) = (0, 0);
    for (raw, frames) in recordings() {
        for f in &frames {
            let mut m = ScreenModel::new(40, 120);
            m.feed(&raw[..f.offset.min(raw.len())], None, false);
            all += 1;
            same += usize::from(shows(&mut m, f));
        }
    }
    // The frames that differ do so by one spinner frame or one streamed word: the capture was
    // taken a few bytes after the frame's recorded offset (7 of 152 on 2026-12-04).
    assert!(all >= 150, "{all} frames");
    assert!(same * 100 >= all * 94, "{same} of {all} frames match");
}

#[test]
fn a_model_seeded_from_a_capture_follows_the_bytes_that_come_after_it() {
    let (mut same, mut all) = (0, 0);
    for (raw, frames) in recordings() {
        for pair in frames.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            let mut m = ScreenModel::new(40, 120);
            let now = Instant::now();
            assert_eq!(m.check(now, &a.screen, Some(a.cursor)), Checked::Seeded);
            assert_eq!(screen_lines(&m.text()), screen_lines(&a.screen));
            m.feed(
                &raw[a.offset.min(raw.len())..b.offset.min(raw.len())],
                None,
                false,
            );
            all += 1;
            same += usize::from(shows(&mut m, b));
        }
    }
    // The pairs that differ are those around the frames of the test above (8 of 142 on
    // 2026-12-04): the seed holds the alternate screen, wrapped lines and the cursor.
    assert!(all >= 140, "{all} pairs");
    assert!(same * 100 >= all * 92, "{same} of {all} pairs match");
}

const EVERY: Duration = Duration::from_secs(2);

#[test]
fn only_a_model_a_capture_confirmed_serves_and_only_until_its_check_is_due() {
    let t0 = Instant::now();
    let cursor = CursorState::parse("5 1 0 0 3").unwrap();
    let mut m = ScreenModel::new(4, 20);
    assert_eq!(m.trust(), Trust::Unsynced);
    assert!(m.wants_cursor());
    assert!(!m.serves(t0, EVERY));
    // An unsynced model is seeded even when the capture happens to match.
    assert_eq!(m.check(t0, "", Some(cursor)), Checked::Seeded);
    assert!(!m.serves(t0, EVERY), "a seed alone is not trusted");
    m.feed(b"hello", None, false);
    assert_eq!(m.text(), "\n     hello");
    assert_eq!(m.check(t0, "\n     hello\n\n", None), Checked::Matched);
    assert!(m.serves(t0 + EVERY - Duration::from_millis(1), EVERY));
    assert!(!m.serves(t0 + EVERY, EVERY));
    assert_eq!(m.check_due(EVERY), Some(t0 + EVERY));
    assert!(!m.wants_cursor());
    assert_eq!(m.serve(false), "\n     hello");
    // A capture that differs withdraws the trust; with no cursor state it cannot seed.
    assert_eq!(m.check(t0, "other", None), Checked::Unsynced);
    assert!(!m.serves(t0, EVERY));
    assert_eq!(m.check(t0, "other", Some(cursor)), Checked::Seeded);
    assert_eq!(m.check(t0, "other", None), Checked::Matched);
    // Lost bytes and a new size each withdraw it.
    m.lost();
    assert!(!m.serves(t0, EVERY));
    assert_eq!(m.check(t0, "other", Some(cursor)), Checked::Seeded);
    assert_eq!(m.check(t0, "other", None), Checked::Matched);
    m.resize(5, 20);
    assert_eq!((m.size(), m.trust()), ((5, 20), Trust::Unsynced));
    let c = m.counts();
    assert_eq!((c.served, c.matched, c.seeded), (1, 3, 3));
}

#[test]
fn each_capture_in_a_row_that_agrees_stretches_the_check_up_to_its_bound_and_a_miss_ends_it() {
    let t0 = Instant::now();
    let at = |s: u64| t0 + Duration::from_secs(s);
    let cursor = CursorState::parse("0 0 0 0 3").unwrap();
    let mut m = ScreenModel::new(4, 20);
    assert_eq!(m.check(t0, "", Some(cursor)), Checked::Seeded);
    m.feed(b"hello", None, false);
    // The capture after a seed, then each later one that agrees: 2 s, 4 s, 8 s, 16 s, then
    // 32 s.
    let mut t = t0;
    for (i, wait) in [2, 4, 8, 16, 32, 32, 32].into_iter().enumerate() {
        assert_eq!(m.check(t, "hello", None), Checked::Matched, "capture {i}");
        let due = t + Duration::from_secs(wait);
        assert_eq!(m.check_due(EVERY), Some(due), "after capture {i}");
        assert!(m.serves(due - Duration::from_millis(1), EVERY));
        assert!(!m.serves(due, EVERY));
        t = due;
    }
    assert_eq!(m.explain()["agreed_in_a_row"], 7);
    // A capture that differs seeds it: the capture that confirms the seed is due after 2 s
    // again.
    m.feed(b" world", None, false);
    assert_eq!(m.check(t, "hello", Some(cursor)), Checked::Seeded);
    assert_eq!(m.explain()["agreed_in_a_row"], 0);
    assert_eq!(m.check(at(100), "hello", None), Checked::Matched);
    assert_eq!(m.check_due(EVERY), Some(at(102)));
    // So does a loss of bytes, and a new size.
    assert_eq!(m.check(at(102), "hello", None), Checked::Matched);
    assert_eq!(m.check_due(EVERY), Some(at(106)));
    m.lost();
    assert_eq!(m.check_due(EVERY), None);
    assert_eq!(m.check(at(106), "hello", Some(cursor)), Checked::Seeded);
    assert_eq!(m.check(at(106), "hello", None), Checked::Matched);
    assert_eq!(m.check_due(EVERY), Some(at(108)));
}

#[test]
fn a_seed_keeps_wrapped_lines_joined_the_cursor_the_region_and_the_alternate_screen() {
    let t0 = Instant::now();
    let mut m = ScreenModel::new(4, 10);
    let long = "abcdefghijKLM";
    let c = CursorState {
        x: 3,
        y: 3,
        alternate: true,
        region: (0, 2),
    };
    assert_eq!(
        m.check(t0, &format!("top\n{long}\nend"), Some(c)),
        Checked::Seeded
    );
    assert_eq!(m.text(), format!("top\n{long}\nend"));
    // The cursor is where tmux said: writing goes on from there.
    m.feed(b"Z", None, false);
    assert_eq!(m.text(), format!("top\n{long}\nendZ"));
    // A line feed at the region's last row (2) scrolls rows 0 to 2 only: the last row stays.
    m.feed(b"\x1b[3;1H\n", None, false);
    assert_eq!(m.text(), format!("{long}\n\nendZ"));
    // Leaving the alternate screen shows the main one, which the seed never saw.
    m.feed(b"\x1b[?1049l", None, false);
    assert_eq!(m.text(), "");
}

#[test]
fn cursor_states_are_parsed_from_what_tmux_answers() {
    assert_eq!(
        CursorState::parse("120 39 1 0 39"),
        Some(CursorState {
            x: 120,
            y: 39,
            alternate: true,
            region: (0, 39)
        })
    );
    assert_eq!(CursorState::parse("1 2 0 0"), None);
    assert_eq!(CursorState::parse("x 2 0 0 3"), None);
}

#[test]
fn a_look_inside_a_synchronized_update_reads_the_last_whole_frame() {
    let mut m = ScreenModel::new(3, 20);
    m.feed(b"old frame", None, false);
    // The next frame begins at byte 9 of this read and does not end in it.
    m.feed(b"\x1b[2J\x1b[H\x1b[?2026h\x1b[2J\x1b[Hhalf", Some(9), true);
    assert_eq!(m.serve(true), "", "the screen as the update began: cleared");
    assert_eq!(m.serve(false), "half", "past the hold: as it is");
    // More of it, still open: the same frame is kept.
    m.feed(b" more", None, true);
    assert_eq!(m.serve(true), "");
    // It ends: looks read the screen again.
    m.feed(b"\x1b[?2026l", None, false);
    assert_eq!(m.serve(true), "half more");
}
