//! The card as a tmux menu (`display-menu`): the window's name and number of agents in the
//! title; per agent an item (mark, title, state icon; keys `1`…`9`, `0`) that goes to its pane,
//! and under it a line that cannot be chosen with the state in words and what the program
//! reported; `N more` when the menu would not fit. The argv is given to `tmux` as it is: no
//! shell runs.
//!
//! tmux expands formats in a menu's title, its item names and its commands (`#{…}`, and
//! `#(…)`, which runs a shell command), and draws `#[…]` in them as styles; a name that starts
//! with `-` is a line that cannot be chosen, an empty one a separator. Pane-supplied text goes
//! through [`menu_text`] (every `#` doubled, which both passes read as a literal `#`) and never
//! starts an item's name; commands are made of pane ids only.
//!
//! tmux 3.3a silently shows nothing when a menu is larger than the client, so the menu is
//! fitted here: its box is the width of its widest item plus 4 (border and padding), items
//! with a key take 4 more (` (1)`), and its height is one line per item plus the two borders.
//! tmux also cuts (with `>`) an item whose name is longer *in bytes* than the client's width
//! less those 8 (4 without a key): marks, dots and icons take 2 or 3 bytes for a cell, so the
//! menu narrows until every name passes that count too.

use super::layout::{
    clip, detail, fit, glyph, natural_width, two_sided, Fit, AGENT_LINES, MIN_WIDTH, NO_AGENTS,
};
use super::model::WindowCard;
use crate::panel::options::DisplaySwitches;

/// The keys of the first ten agents' items.
pub const KEYS: [&str; 10] = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "0"];
/// Cells of a menu's box that are not an item's text: border and padding (4), the key tmux
/// appends (` (1)`: 4), and one spare for a glyph tmux counts wider than we do.
pub const CHROME_WIDTH: usize = 9;
/// Lines of a menu's box that are not items: the top and bottom borders.
pub const CHROME_HEIGHT: usize = 2;

/// The most a menu may take on the client, borders included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MenuBox {
    /// Columns.
    pub width: usize,
    /// Lines.
    pub height: usize,
}

/// `s` made safe for a menu's title or an item's name: control characters become spaces,
/// every `#` is doubled (a literal `#` after tmux's format expansion and its style drawing),
/// and a trailing `#` gets a space after it, so that it cannot join the `#[default]` tmux
/// appends to an item with a key.
pub fn menu_text(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .replace('#', "##");
    if out.ends_with('#') {
        out.push(' ');
    }
    out
}

/// The tmux command of the item that goes to `pane`: the client that chose it switches to the
/// pane's session, window and pane.
pub fn jump_command(pane: crate::ids::PaneId) -> String {
    format!("switch-client -t {pane}")
}

/// The `display-menu` argv (without `tmux` and the server's arguments) showing `card` on
/// `client` (None: tmux's choice), within `room`; or why it cannot fit.
pub fn menu_argv(
    card: &WindowCard,
    show: DisplaySwitches,
    client: Option<&str>,
    room: MenuBox,
    now_ms: u64,
) -> Result<Vec<String>, String> {
    if room.width < MIN_WIDTH + CHROME_WIDTH || room.height < CHROME_HEIGHT + 1 {
        return Err(format!(
            "a menu of {}x{} cannot show the card (it needs at least {}x{})",
            room.width,
            room.height,
            MIN_WIDTH + CHROME_WIDTH,
            CHROME_HEIGHT + 1
        ));
    }
    let f = fit(
        card.agents.len(),
        0,
        AGENT_LINES,
        Some(room.height - CHROME_HEIGHT),
    );
    let mut w = natural_width(card, f.shown, show, now_ms, room.width - CHROME_WIDTH);
    let list = loop {
        let list = items(card, show, f, w, now_ms);
        if w <= MIN_WIDTH || !list.iter().any(|it| too_long(it, room.width)) {
            break list;
        }
        w -= 1;
    };
    let title = clip(
        &format!(" {} · {} ", card.name(), card.count_words()),
        w + 4,
    );

    let mut argv: Vec<String> = vec!["display-menu".into()];
    if let Some(c) = client {
        argv.extend(["-c".into(), c.to_string()]);
    }
    argv.extend([
        "-T".into(),
        menu_text(&title),
        "-x".into(),
        "C".into(),
        "-y".into(),
        "C".into(),
        // Items that cannot be chosen start with `-`: not flags.
        "--".into(),
    ]);
    argv.extend(list.into_iter().flatten());
    Ok(argv)
}

/// One item: its name (escaped), key and command; a line that cannot be chosen has neither.
type Item = [String; 3];

/// The items of the card's first `f.shown` agents, `w` cells wide.
fn items(card: &WindowCard, show: DisplaySwitches, f: Fit, w: usize, now_ms: u64) -> Vec<Item> {
    let mut out = Vec::with_capacity(f.shown * AGENT_LINES + 1);
    if card.agents.is_empty() {
        out.push(disabled(&clip(NO_AGENTS, w)));
    }
    for (i, a) in card.agents.iter().take(f.shown).enumerate() {
        let mut name = menu_text(&two_sided(&a.heading(), glyph(a.icon, now_ms), w));
        if name.starts_with('-') {
            name.insert(0, ' ');
        }
        let key = KEYS.get(i).copied().unwrap_or_default();
        out.push([name, key.to_string(), jump_command(a.pane)]);
        out.push(disabled(&detail(a, show, w)));
    }
    if f.more > 0 {
        out.push(disabled(&format!("{} more", f.more)));
    }
    out
}

/// A line that cannot be chosen: `-TEXT`, no key, no command.
fn disabled(text: &str) -> Item {
    [
        format!("-{}", menu_text(text)),
        String::new(),
        String::new(),
    ]
}

/// Whether tmux would cut `item` on a client `cols` wide: tmux 3.3a measures a name in bytes,
/// not cells, against the width less 4 (less 8 with a key), and cuts a longer one with `>`.
/// The escaped name is never shorter than what tmux measures (`##` is one byte to it).
fn too_long(item: &Item, cols: usize) -> bool {
    let chrome = if item[1].is_empty() { 4 } else { 8 };
    item[0].len() + chrome > cols
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::card::model::build;
    use crate::card::model::tests::row;
    use crate::ids::WindowId;
    use crate::ipc::schema::PaneRow;
    use crate::panel::text::width;
    use crate::state::AgentState;

    #[test]
    fn menu_text_keeps_formats_styles_and_commands_literal() {
        assert_eq!(menu_text("#(touch /tmp/x)"), "##(touch /tmp/x)");
        assert_eq!(
            menu_text("#[fg=red]red #{pane_id} #S"),
            "##[fg=red]red ##{pane_id} ##S"
        );
        assert_eq!(menu_text("ends with #"), "ends with ## ");
        assert_eq!(menu_text("a\x1b[31mb\nc"), "a [31mb c");
        assert_eq!(menu_text("plain, text | ok"), "plain, text | ok");
    }

    fn card_of(rows: &[PaneRow]) -> crate::card::WindowCard {
        let panes: Vec<&PaneRow> = rows.iter().collect();
        build(WindowId(1), &panes, &[]).expect("card")
    }

    #[test]
    fn each_agent_is_an_item_that_jumps_with_its_state_under_it() {
        let mut rows: Vec<PaneRow> = (0..3)
            .map(|i| row(20 + i, 1, i, Some(AgentState::Working)))
            .collect();
        rows[1].title = "-rf #(reboot) #".into();
        rows[1].agent_mark = Some("-".into());
        let room = MenuBox {
            width: 60,
            height: 20,
        };
        let argv = menu_argv(
            &card_of(&rows),
            DisplaySwitches::default(),
            Some("/dev/pts/4"),
            room,
            0,
        )
        .expect("fits");
        assert_eq!(
            &argv[..10],
            [
                "display-menu",
                "-c",
                "/dev/pts/4",
                "-T",
                " Thread 1 · 3 agents ",
                "-x",
                "C",
                "-y",
                "C",
                "--"
            ]
        );
        let items: Vec<&[String]> = argv[10..].chunks(3).collect();
        assert_eq!(items.len(), 6);
        assert!(items[0][0].starts_with("✳ task 20"), "{items:?}");
        assert_eq!(items[0][1], "1");
        assert_eq!(items[0][2], "switch-client -t %20");
        assert_eq!(items[1][0].trim_end(), "-  Working");
        assert_eq!(items[1][1], "");
        assert!(
            items[2][0].starts_with(" - -rf ##(reboot) ##"),
            "a pane's text never disables its item or reaches tmux as a format: {:?}",
            items[2]
        );
        assert_eq!(items[2][1], "2");
        assert_eq!(items[2][2], "switch-client -t %21");
        assert_eq!(items[4][2], "switch-client -t %22");
    }

    #[test]
    fn a_small_client_gets_what_fits_then_n_more() {
        let mut rows: Vec<PaneRow> = (0..6)
            .map(|i| row(30 + i, 1, i, Some(AgentState::Idle)))
            .collect();
        for r in &mut rows {
            r.title = "a long title · about fixing the build".into();
        }
        let room = MenuBox {
            width: 40,
            height: 12,
        };
        let argv =
            menu_argv(&card_of(&rows), DisplaySwitches::default(), None, room, 0).expect("fits");
        let items: Vec<&[String]> = argv[8..].chunks(3).collect();
        // 12 lines: 2 borders, 4 agents of 2 lines, `2 more`.
        assert_eq!(items.len(), 9, "{items:?}");
        assert_eq!(items[8][0], "-2 more");
        for it in &items {
            assert!(width(&it[0]) + CHROME_WIDTH <= 40, "{it:?}");
            // What tmux 3.3a counts: bytes.
            let chrome = if it[1].is_empty() { 4 } else { 8 };
            assert!(it[0].len() + chrome <= 40, "{} bytes: {it:?}", it[0].len());
        }
        let small = MenuBox {
            width: 40,
            height: 2,
        };
        let err = menu_argv(&card_of(&rows), DisplaySwitches::default(), None, small, 0)
            .expect_err("too small");
        assert!(err.contains("cannot show the card"), "{err}");
    }

    #[test]
    fn an_empty_window_says_so() {
        let mut rows = vec![row(40, 1, 0, None)];
        rows[0].agent = None;
        rows[0].agent_name = None;
        let room = MenuBox {
            width: 40,
            height: 10,
        };
        let argv =
            menu_argv(&card_of(&rows), DisplaySwitches::default(), None, room, 0).expect("fits");
        assert_eq!(argv[2], " Thread 1 · 0 agents ");
        assert_eq!(argv[8], "-No agents in this window");
    }
}
