use proptest::prelude::*;

use super::TextScreen;

fn screen(rows: u16, cols: u16, bytes: &str) -> TextScreen {
    let mut s = TextScreen::new(rows, cols);
    s.process(bytes.as_bytes());
    s
}

fn text(rows: u16, cols: u16, bytes: &str) -> String {
    screen(rows, cols, bytes).text()
}

#[test]
fn a_wrapped_row_is_joined_to_the_next_and_an_ended_line_is_not() {
    assert_eq!(text(3, 5, "abcdefg\r\nxy"), "abcdefg\nxy");
    // Text that fills the row exactly waits for the next character before it wraps.
    let mut s = screen(3, 5, "abcde");
    assert_eq!(s.cursor(), (5, 0));
    s.process(b"\r\nf");
    assert_eq!(s.text(), "abcde\nf");
}

#[test]
fn a_wide_character_that_does_not_fit_wraps_whole_and_halves_are_emptied() {
    // One column left: the character goes to the next row, the row above is wrapped.
    assert_eq!(text(3, 5, "abcd中"), "abcd中");
    assert_eq!(screen(3, 5, "abcd中").cursor(), (2, 1));
    // Writing over either half of a wide character empties the other half.
    assert_eq!(text(2, 6, "中文\x1b[1;2Ha"), " a文");
    assert_eq!(text(2, 6, "中文\x1b[1;1Ha"), "a 文");
}

#[test]
fn zero_width_characters_join_the_cell_before_the_cursor() {
    assert_eq!(text(2, 10, "e\u{301}x"), "e\u{301}x");
    assert_eq!(text(2, 10, "中\u{301}"), "中\u{301}");
    // At the first column there is no cell to join.
    assert_eq!(text(2, 10, "\u{301}a"), "a");
}

#[test]
fn a_scroll_region_scrolls_alone_and_keeps_the_rows_around_it() {
    let s = "1\r\n2\r\n3\r\n4\r\n5\x1b[2;4r\x1b[4;1H\nx";
    assert_eq!(text(5, 4, s), "1\n3\n4\nx\n5");
    // Reverse index at the region's top scrolls it down.
    assert_eq!(
        text(5, 4, "1\r\n2\r\n3\r\n4\r\n5\x1b[2;4r\x1b[2;1H\x1bMy"),
        "1\ny\n2\n3\n5"
    );
    // Outside the region a line feed at the last row does not scroll.
    assert_eq!(text(3, 4, "1\r\n2\r\n3\x1b[1;2r\x1b[3;1H\nz"), "1\n2\nz");
}

#[test]
fn the_whole_screen_scrolls_its_rows_with_their_text() {
    let mut s = screen(3, 4, "1\r\n2\r\n3");
    assert_eq!(s.text(), "1\n2\n3");
    s.process(b"\r\n4");
    assert_eq!(s.text(), "2\n3\n4");
    assert_eq!(s.text(), s.text_uncached());
}

#[test]
fn lines_and_characters_are_inserted_deleted_and_erased_as_tmux_does() {
    assert_eq!(text(4, 6, "a\r\nb\r\nc\r\nd\x1b[2;1H\x1b[L"), "a\n\nb\nc");
    assert_eq!(text(4, 6, "a\r\nb\r\nc\r\nd\x1b[2;1H\x1b[2M"), "a\nd");
    assert_eq!(text(2, 6, "abcdef\x1b[1;2H\x1b[2@"), "a  bcd");
    assert_eq!(text(2, 6, "abcdef\x1b[1;2H\x1b[2P"), "adef");
    assert_eq!(text(2, 6, "abcdef\x1b[1;2H\x1b[2X"), "a  def");
    assert_eq!(text(2, 6, "abcdef\x1b[1;3H\x1b[K"), "ab");
    assert_eq!(text(2, 6, "abcdef\x1b[1;3H\x1b[1K"), "   def");
    assert_eq!(text(3, 6, "ab\r\ncd\r\nef\x1b[2;2H\x1b[J"), "ab\nc");
    assert_eq!(text(3, 6, "ab\r\ncd\r\nef\x1b[2;1H\x1b[1J"), "\n d\nef");
    // REP repeats the character printed just before it, and nothing after another sequence.
    assert_eq!(text(2, 8, "x\x1b[3b"), "xxxx");
    assert_eq!(text(2, 8, "x\r\x1b[3b"), "x");
}

#[test]
fn tabs_move_to_the_stops_and_write_nothing() {
    assert_eq!(text(2, 20, "a\tb"), "a       b");
    assert_eq!(text(2, 20, "a\tb\x1b[Zc"), "a       c");
    assert_eq!(text(2, 20, "\x1b[3g\tq"), "                   q");
}

#[test]
fn the_alternate_screen_leaves_the_main_one_as_it_was() {
    let mut s = screen(3, 10, "main\x1b[?1049halt");
    assert_eq!(s.text(), "    alt");
    s.process(b"\x1b[?1049l!");
    assert_eq!(s.text(), "main!");
    // 47 does not save the cursor.
    assert_eq!(text(3, 10, "ab\x1b[?47h\x1b[2;5Hx\x1b[?47l!"), "ab\n     !");
}

#[test]
fn origin_mode_and_the_saved_cursor_count_from_the_region() {
    assert_eq!(
        text(5, 5, "\x1b[2;4r\x1b[?6h\x1b[1;1Ho\x1b[9;1Hp"),
        "\no\n\np"
    );
    assert_eq!(text(3, 5, "\x1b[2;3Ha\x1b7\x1b[1;1Hb\x1b8c"), "b\n  ac");
}

#[test]
fn without_autowrap_the_last_column_is_written_over() {
    assert_eq!(text(2, 5, "\x1b[?7labcdefg"), "abcdg");
    assert_eq!(text(2, 5, "\x1b[4habc\x1b[1;1Hx"), "xabc");
}

#[test]
fn a_reset_clears_the_screen_and_the_modes() {
    assert_eq!(text(3, 5, "ab\x1b[?7l\x1b[2;3r\x1bcxyz"), "xyz");
}

/// One piece of terminal input: text, wide and combining characters, controls, and the
/// sequences the model acts on with parameters.
fn piece() -> impl Strategy<Value = String> {
    const TEXT: &[&str] = &[
        "a", "xyz ", "中", "e\u{301}", "\u{200d}", "─", " ", "\u{fe0f}",
    ];
    const CONTROL: &[&str] = &[
        "\r",
        "\n",
        "\x08",
        "\t",
        "\x1bM",
        "\x1bD",
        "\x1bE",
        "\x1b7",
        "\x1b8",
        "\x1bH",
        "\x1b#8",
        "\x1bc",
        "\x07",
        "\x1b]0;t\x07",
    ];
    const CSI: &[&str] = &[
        "@", "A", "B", "C", "D", "E", "F", "G", "H", "J", "K", "L", "M", "P", "S", "T", "X", "Z",
        "`", "b", "d", "f", "g", "r", "s", "u", "m",
    ];
    const MODES: &[&str] = &[
        "?1049h", "?1049l", "?47h", "?1047l", "?6h", "?6l", "?7l", "?7h", "4h", "4l", "20h", "20l",
        "?2026h",
    ];
    prop_oneof![
        3 => prop::sample::select(TEXT).prop_map(String::from),
        2 => prop::sample::select(CONTROL).prop_map(String::from),
        3 => (prop::sample::select(CSI), prop::option::of(0u16..12), prop::option::of(0u16..50))
            .prop_map(|(action, a, b)| match (a, b) {
                (Some(a), Some(b)) => format!("\x1b[{a};{b}{action}"),
                (Some(a), None) => format!("\x1b[{a}{action}"),
                _ => format!("\x1b[{action}"),
            }),
        1 => prop::sample::select(MODES).prop_map(|m| format!("\x1b[{m}")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Whatever it is fed, the model keeps its cursor on the screen, shows the same text
    /// whether the bytes come whole or in pieces, and the text it keeps row by row is the text
    /// read afresh.
    #[test]
    fn any_input_keeps_the_model_whole_and_its_kept_rows_true(
        rows in 1u16..12,
        cols in 1u16..30,
        pieces in prop::collection::vec(piece(), 0..60),
        step in 1usize..8,
    ) {
        let input = pieces.concat().into_bytes();
        let mut whole = TextScreen::new(rows, cols);
        let mut split = TextScreen::new(rows, cols);
        for chunk in input.chunks(step) {
            split.process(chunk);
            prop_assert_eq!(split.text(), split.text_uncached());
        }
        whole.process(&input);
        prop_assert_eq!(whole.text(), split.text());
        let (x, y) = whole.cursor();
        prop_assert!(x <= cols && y < rows, "cursor {},{} in {}x{}", x, y, cols, rows);
    }
}

#[test]
fn the_kept_text_of_every_paced_recording_is_the_text_read_afresh() {
    let mut reads = 0;
    for dir in crate::test_fixtures::version_dirs("paced") {
        let raw = std::fs::read(dir.join("raw-main-120x40.bin")).unwrap();
        let pace = crate::test_fixtures::load_pace(&dir).expect("a paced recording's pace");
        let mut s = TextScreen::new(40, 120);
        let mut at = 0;
        for read in pace {
            let end = read.end.min(raw.len());
            s.process(&raw[at..end]);
            at = end;
            reads += 1;
            assert_eq!(s.text(), s.text_uncached(), "{} at {end}", dir.display());
        }
    }
    assert!(reads > 4000, "{reads} reads");
}

#[test]
fn a_character_split_between_two_writes_loses_nothing_around_it() {
    // vte 0.15 alone drops the "e" after a completed split character.
    let input = "ae\u{301}e\u{301}中x".as_bytes();
    for cut in 0..=input.len() {
        let mut s = TextScreen::new(2, 20);
        s.process(&input[..cut]);
        s.process(&input[cut..]);
        assert_eq!(s.text(), "ae\u{301}e\u{301}中x", "cut at {cut}");
    }
    // Byte by byte, and a character cut in three.
    let mut s = TextScreen::new(2, 20);
    input.chunks(1).for_each(|b| s.process(b));
    assert_eq!(s.text(), "ae\u{301}e\u{301}中x");
}
