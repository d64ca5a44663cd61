//! Rendering tests on ratatui's TestBackend: cards, icons, state words, grouping, empty lists.

use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};
use ratatui::{backend::TestBackend, Terminal};

use super::keys::handle_key;
use super::model::{CardKey, PanelModel, Screen};
use super::options::{Grouping, SortOrder, ViewOptions};
use super::text::width;
use super::theme;
use crate::ids::{PaneId, SessionId, WindowId};
use crate::ipc::schema::{
    PaneRow, Reply, Request, StateSource, Subtask, WindowMark, WindowRow, SCHEMA_VERSION,
};
use crate::state::{AgentState, BlockedKind};

fn pane(id: u32, session: &str, state: Option<AgentState>, title: &str) -> PaneRow {
    PaneRow {
        pane: PaneId(id),
        window: WindowId(id),
        session: SessionId(1),
        session_name: session.into(),
        window_index: id,
        window_name: format!("Thread {id}"),
        pane_index: 0,
        title: title.into(),
        active: true,
        window_active: true,
        current_path: String::new(),
        current_command: "claude".into(),
        fg_pid: None,
        fg_process: None,
        fg_argv: vec![],
        process_less: false,
        agent: Some("soul".into()),
        agent_name: Some("Soul".into()),
        agent_mark: None,
        agent_version: None,
        unrecognised: false,
        state,
        unseen_result: false,
        source: StateSource::ScreenRule,
        rule: None,
        message: None,
        report_title: None,
        kind: None,
        progress: None,
        subtasks: vec![],
        since_ms: 0,
        window_mark: WindowMark::Idle,
        machine: None,
        shows: None,
    }
}

/// The key of the card of pane `n` (the test rows name no machine).
fn card_key(n: u32) -> CardKey {
    CardKey {
        machine: None,
        pane: PaneId(n),
    }
}

fn screen(m: &PanelModel, w: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, 24)).expect("test terminal");
    t.draw(|f| super::render::draw(f, m, 0)).expect("draw");
    let buf = t.backend().buffer().clone();
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
                + "\n"
        })
        .collect()
}

fn model(panes: Vec<PaneRow>, o: ViewOptions) -> PanelModel {
    let mut m = PanelModel::new(o, None);
    m.apply(
        Reply::Snapshot {
            machines: Vec::new(),
            clients: Vec::new(),
            schema: SCHEMA_VERSION,
            panes,
            windows: vec![],
        },
        0,
    );
    m
}

#[test]
fn empty_and_all_hidden_messages() {
    assert!(screen(&model(vec![], ViewOptions::default()), 60).contains("No agents detected"));
    let mut o = ViewOptions::default();
    o.show.idle = false;
    let s = screen(
        &model(vec![pane(1, "p", Some(AgentState::Idle), "t")], o),
        60,
    );
    assert!(
        s.contains("All agents are hidden by the view options"),
        "{s}"
    );
}

#[test]
fn state_grouping_icons_and_words() {
    let panes = vec![
        pane(1, "proj", Some(AgentState::Idle), "resting"),
        pane(2, "proj", Some(AgentState::Blocked), "asks"),
        pane(3, "proj", None, "mystery"),
        pane(4, "proj", Some(AgentState::Error), "broke"),
    ];
    let s = screen(&model(panes.clone(), ViewOptions::default()), 60);
    assert!(s.contains("Needs attention  2"), "{s}");
    assert!(s.contains("◆ Soul · resting"), "{s}");
    assert!(s.contains("Idle · proj · Thread 1"), "{s}");
    assert!(s.contains("Unknown · proj · Thread 3"), "{s}");
    assert!(s.contains('⚠') && s.contains('✗') && s.contains('✓'), "{s}");
    assert!(s.find("asks") < s.find("resting"), "attention before idle");
    let s = screen(
        &model(
            panes,
            ViewOptions {
                grouping: Grouping::Session,
                ..Default::default()
            },
        ),
        40,
    );
    assert!(s.contains("1: Thread 1") && s.contains(" proj  4"), "{s}");
}

/// The panel drawn with `render` into a fresh buffer of `w`×`h` at `now_ms`.
fn draw(m: &PanelModel, w: u16, h: u16, now_ms: u64) -> Buffer {
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    super::render::render(m, area, &mut buf, now_ms);
    buf
}

/// The symbols of row `y`.
fn row(buf: &Buffer, y: u16) -> String {
    (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect()
}

/// The whole buffer as text, one line per row.
fn text(buf: &Buffer) -> String {
    (0..buf.area.height).map(|y| row(buf, y) + "\n").collect()
}

/// Where `needle` starts (cell x, row y), matching one char per cell.
fn find(buf: &Buffer, needle: &str) -> Option<(u16, u16)> {
    let chars: Vec<String> = needle.chars().map(String::from).collect();
    let n = chars.len() as u16;
    for y in 0..buf.area.height {
        for x in 0..buf.area.width.saturating_sub(n - 1) {
            if (0..n).all(|k| buf[(x + k, y)].symbol() == chars[k as usize]) {
                return Some((x, y));
            }
        }
    }
    None
}

fn at(buf: &Buffer, needle: &str) -> (u16, u16) {
    find(buf, needle).unwrap_or_else(|| panic!("{needle:?} not on screen:\n{}", text(buf)))
}

fn key(m: &mut PanelModel, c: KeyCode) -> super::keys::Outcome {
    handle_key(m, KeyEvent::new(c, KeyModifiers::NONE))
}

fn sub(id: &str, state: AgentState, done: bool) -> Subtask {
    Subtask {
        id: id.into(),
        state,
        done,
        msg: None,
    }
}

#[test]
fn subtasks_fold_into_a_count_and_unfold_to_five_coloured_dots_then_more() {
    let mut p = pane(1, "proj", Some(AgentState::Working), "build");
    p.subtasks = vec![
        sub("lint", AgentState::Error, false),
        sub("ask", AgentState::Blocked, false),
        sub("compile", AgentState::Working, false),
        sub("test", AgentState::Working, false),
        sub("docs", AgentState::Idle, true),
        sub("bench", AgentState::Idle, true),
        sub("fuzz", AgentState::Idle, false),
    ];
    let mut m = model(vec![p], ViewOptions::default());
    let b = draw(&m, 70, 24, 0);
    let s = text(&b);
    at(
        &b,
        "▸ 7 subtasks: 1 failed, 1 waiting, 2 working, 2 done, 1 idle",
    );
    assert!(!s.contains('●') && !s.contains("compile"), "folded: {s}");

    assert_eq!(m.selected, Some(card_key(1)));
    key(&mut m, KeyCode::Char('s'));
    let b = draw(&m, 70, 24, 0);
    let s = text(&b);
    let (_, count_y) = at(&b, "▾ 7 subtasks");
    let expect = [
        ("lint", theme::RED),
        ("ask", theme::AMBER),
        ("compile", theme::BLUE),
        ("test", theme::BLUE),
        ("docs", theme::GREEN),
    ];
    let (x, first_y) = at(&b, "●");
    assert_eq!(first_y, count_y + 1, "the list follows the counting line");
    for (i, (id, colour)) in expect.iter().enumerate() {
        let y = count_y + 1 + i as u16;
        assert_eq!(b[(x, y)].symbol(), "●", "row {y}: {}", row(&b, y));
        assert_eq!(b[(x, y)].fg, *colour, "dot colour of {id}");
        assert!(row(&b, y).contains(id), "{id} on row {y}: {s}");
    }
    assert_eq!(s.matches('●').count(), 5, "only the first five: {s}");
    assert!(!s.contains("bench") && !s.contains("fuzz"), "{s}");
    assert!(row(&b, count_y + 6).contains("2 more"), "{s}");

    key(&mut m, KeyCode::Char('s'));
    assert!(!text(&draw(&m, 70, 24, 0)).contains('●'), "folds again");
}

#[test]
fn a_description_that_does_not_fit_fades_at_the_end_instead_of_wrapping() {
    let mut long = pane(1, "proj", Some(AgentState::Idle), "long");
    long.message = Some("Refactored the parser and then rewrote all the tests twice over".into());
    let mut short = pane(2, "proj", Some(AgentState::Idle), "short");
    short.message = Some("All green".into());
    let m = model(vec![long, short], ViewOptions::default());
    let b = draw(&m, 40, 24, 0);
    let (x0, y) = at(&b, "Refactored the");
    // A card line runs from x = 2 to the last cell before the one-cell margin (x = 38).
    let last = 38;
    let shades = [
        Color::Indexed(245),
        Color::Indexed(241),
        Color::Indexed(238),
    ];
    for (k, shade) in shades.iter().enumerate() {
        let c = &b[(last - 2 + k as u16, y)];
        assert!(c.modifier.contains(Modifier::DIM), "cell {k} of the fade");
        assert_eq!(c.fg, *shade, "fade shade {k}");
        assert_ne!(c.symbol(), " ", "the fade dims text, it does not blank it");
    }
    let before = &b[(last - 3, y)];
    assert!(
        !before.modifier.contains(Modifier::DIM),
        "only the end fades"
    );
    assert_eq!(x0, 2);
    // No wrapping: the rest of the text is nowhere, the next row is the location.
    let s = text(&b);
    assert!(!s.contains("twice"), "{s}");
    assert!(row(&b, y + 1).contains("Idle · proj · Thread 1"), "{s}");
    // A description that fits is not dimmed.
    let (sx, sy) = at(&b, "All green");
    for x in sx..sx + 9 {
        assert!(!b[(x, sy)].modifier.contains(Modifier::DIM), "{s}");
    }
}

#[test]
fn a_long_path_in_a_description_shortens_to_its_last_folder_on_a_narrow_card() {
    let mut p = pane(1, "proj", Some(AgentState::Idle), "t");
    p.message = Some("Editing /home/me/work/thinkterm/src/panel now".into());
    let m = model(vec![p], ViewOptions::default());
    let narrow = text(&draw(&m, 40, 24, 0));
    assert!(narrow.contains("Editing panel now"), "{narrow}");
    assert!(!narrow.contains("/home"), "{narrow}");
    let wide = text(&draw(&m, 100, 24, 0));
    assert!(
        wide.contains("Editing /home/me/work/thinkterm/src/panel now"),
        "fits, unchanged: {wide}"
    );
}

#[test]
fn grouping_none_has_no_headings_and_the_sort_switches_between_fixed_and_recent() {
    let mut a = pane(1, "alpha", Some(AgentState::Idle), "first");
    a.since_ms = 100;
    let mut b = pane(2, "beta", Some(AgentState::Blocked), "second");
    b.since_ms = 50;
    let mut c = pane(3, "gamma", Some(AgentState::Working), "third");
    c.since_ms = 300;
    let panes = vec![c, a, b];
    let mut o = ViewOptions {
        grouping: Grouping::None,
        ..Default::default()
    };
    let buf = draw(&model(panes.clone(), o.clone()), 60, 24, 0);
    let s = text(&buf);
    for heading in [" Needs attention", " Running", " Idle ", " Done"] {
        assert!(
            !(1..23).any(|y| row(&buf, y).starts_with(heading)),
            "no heading {heading:?}: {s}"
        );
    }
    let y = |t: &str| at(&buf, t).1;
    assert!(
        y("first") < y("second") && y("second") < y("third"),
        "fixed: by session: {s}"
    );
    assert_eq!(
        y("first"),
        1,
        "the first card starts right under the header: {s}"
    );

    o.sort = SortOrder::Recent;
    let buf = draw(&model(panes, o), 60, 24, 0);
    let s = text(&buf);
    let y = |t: &str| at(&buf, t).1;
    assert!(
        y("third") < y("first") && y("first") < y("second"),
        "recent activity: latest change first: {s}"
    );
}

#[test]
fn a_narrow_and_a_wide_popup_draw_the_same_snapshot_with_the_icon_at_the_right_edge() {
    let mut w = pane(1, "proj", Some(AgentState::Working), "build it");
    w.message = Some("Compiling the whole workspace with every feature turned on".into());
    let mut q = pane(2, "proj", Some(AgentState::Blocked), "asks");
    q.kind = Some(BlockedKind::Permission);
    q.message = Some("May I run cargo?".into());
    let e = pane(3, "proj", Some(AgentState::Error), "broke");
    let m = model(vec![w, q, e], ViewOptions::default());
    for width in [40u16, 160] {
        let b = draw(&m, width, 24, 1234);
        let s = text(&b);
        assert!(row(&b, 0).starts_with(" Agents"), "{s}");
        for (title, icon) in [
            ("build it", theme::SPINNER[12 % 10]),
            ("asks", "⚠"),
            ("broke", "✗"),
        ] {
            let (_, y) = at(&b, title);
            // The icon sits in the last cell before the one-cell margin.
            assert_eq!(b[(width - 2, y)].symbol(), icon, "{title} at {width}: {s}");
            assert_eq!(b[(width - 1, y)].symbol(), " ", "{s}");
        }
        assert!(s.contains(" permission "), "waiting tag: {s}");
        let full = s.contains("Compiling the whole workspace with every feature turned on");
        assert_eq!(full, width == 160, "fits only when wide: {s}");
    }
}

#[test]
fn the_card_of_the_origin_windows_active_pane_is_raised() {
    let other = pane(1, "proj", Some(AgentState::Idle), "other");
    let active = pane(2, "proj", Some(AgentState::Idle), "active");
    // The popup was opened from a shell pane beside the active agent, in the same window.
    let mut shell = pane(3, "proj", None, "zsh");
    shell.window = WindowId(2);
    shell.active = false;
    shell.agent = None;
    shell.agent_name = None;
    let mut m = PanelModel::new(ViewOptions::default(), Some(PaneId(3)));
    m.apply(
        Reply::Snapshot {
            machines: Vec::new(),
            clients: Vec::new(),
            schema: SCHEMA_VERSION,
            panes: vec![other, active, shell],
            windows: vec![],
        },
        0,
    );
    assert_eq!(m.raised(), Some(card_key(2)));
    let b = draw(&m, 50, 24, 0);
    let bg = |t: &str| {
        let (x, y) = at(&b, t);
        b[(x, y)].bg
    };
    assert_eq!(bg("active"), theme::RAISED_BG);
    assert_eq!(bg("other"), theme::CARD_BG);
    // Whole card rows carry the background, the location line too.
    let (_, loc_y) = at(&b, "proj · Thread 2");
    assert_eq!(b[(45, loc_y)].bg, theme::RAISED_BG);
    // Brighter: both on xterm's grey ramp (232..=255), the raised one further up.
    match (theme::RAISED_BG, theme::CARD_BG) {
        (Color::Indexed(r), Color::Indexed(c)) => {
            assert!((232..=255).contains(&r) && (232..=255).contains(&c) && r > c)
        }
        other => panic!("unexpected card colours {other:?}"),
    }
    assert_eq!(
        m.selected,
        Some(card_key(2)),
        "the raised card starts selected"
    );
}

#[test]
fn the_detail_view_shows_everything_wrapped_with_the_time_in_this_state() {
    let mut p = pane(1, "proj", Some(AgentState::Blocked), "");
    p.report_title = Some("Migrate the storage layer to the new schema version".into());
    p.message = Some("Wants to run the migration against the staging database first".into());
    p.kind = Some(BlockedKind::Question);
    p.progress = Some(40);
    p.since_ms = 1_000_000;
    p.subtasks = vec![sub("schema", AgentState::Working, false)];
    let mut m = model(vec![p], ViewOptions::default());
    key(&mut m, KeyCode::Char('d'));
    assert_eq!(m.screen, Screen::Detail);
    let now = 1_000_000 + 192_000;
    let b = draw(&m, 40, 24, now);
    let s = text(&b);
    // Wrapped, not faded: every word is there, and no cell is dimmed.
    let all: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        all.contains("Migrate the storage layer to the new schema version"),
        "{s}"
    );
    assert!(
        all.contains("Wants to run the migration against the staging database first"),
        "{s}"
    );
    let (_, title_y) = at(&b, "Migrate");
    assert!(
        b[(1, title_y)].modifier.contains(Modifier::BOLD),
        "title is bold"
    );
    assert!(
        row(&b, title_y + 1)
            .trim_start()
            .starts_with("schema version"),
        "{s}"
    );
    for y in 0..b.area.height - 1 {
        for x in 0..b.area.width {
            assert!(
                !b[(x, y)].modifier.contains(Modifier::DIM),
                "faded at {x},{y}: {s}"
            );
        }
    }
    for line in [
        "Agent     Soul",
        "State     Waiting for question",
        "Progress  40%",
        "Waits for question",
        "Session   proj · window 1: Thread 1",
        "Machine   this computer",
        "Elapsed   3 min 12 s",
        "Subtasks  1",
        "● schema",
    ] {
        at(&b, line);
    }
    // The time is computed from since_ms and now_ms, not stored.
    let later = text(&draw(&m, 40, 24, 1_000_000 + 3_600_000 + 300_000));
    assert!(later.contains("Elapsed   1 h 5 min"), "{later}");
    key(&mut m, KeyCode::Esc);
    assert_eq!(m.screen, Screen::List, "Esc goes back to the list");
}

#[test]
fn the_view_menu_toggles_show_checkboxes_but_never_hides_the_last_one() {
    let panes = vec![
        pane(1, "proj", Some(AgentState::Working), "runner"),
        pane(2, "proj", Some(AgentState::Blocked), "asker"),
    ];
    let mut m = model(panes, ViewOptions::default());
    key(&mut m, KeyCode::Char('m'));
    let b = draw(&m, 60, 24, 0);
    let s = text(&b);
    for item in [
        " View ",
        "Show",
        "[x] Needs attention",
        "[x] Running",
        "[x] Done",
        "[x] Idle",
        "Group by  State",
        "Sort      Fixed",
        "Display",
        "[x] Description",
        "[x] Waiting reason",
        "[x] Progress",
        "[x] Subtasks",
        "Reload detection rules",
    ] {
        at(&b, item);
    }
    let (x, y) = at(&b, "[x] Needs attention");
    assert_eq!(
        b[(x, y)].bg,
        theme::ACCENT,
        "the cursor is on the first item: {s}"
    );

    // Hide Running: saved, and its card leaves the list.
    key(&mut m, KeyCode::Down);
    let out = key(&mut m, KeyCode::Enter);
    assert!(out.save_options);
    at(&draw(&m, 60, 24, 0), "[ ] Running");
    // Hide Done and Idle; then Needs attention is the last one shown.
    for _ in 0..2 {
        key(&mut m, KeyCode::Down);
        assert!(key(&mut m, KeyCode::Enter).save_options);
    }
    for _ in 0..3 {
        key(&mut m, KeyCode::Up);
    }
    let out = key(&mut m, KeyCode::Enter);
    assert!(!out.save_options, "refused, nothing to save");
    assert!(m.options.show.attention);
    let b = draw(&m, 60, 24, 0);
    at(&b, "[x] Needs attention");
    at(&b, "[ ] Idle");
    at(&b, "The last shown kind cannot be hidden.");

    key(&mut m, KeyCode::Esc);
    let s = text(&draw(&m, 60, 24, 0));
    assert!(s.contains("asker") && !s.contains("runner"), "{s}");
}

fn window(id: u32, session: &str, mark: WindowMark, since_ms: u64) -> WindowRow {
    WindowRow {
        window: WindowId(id),
        session: SessionId(id),
        session_name: session.into(),
        window_index: id,
        window_name: format!("w{id}"),
        mark,
        agents: 1,
        pane: Some(PaneId(id)),
        message: Some(format!("msg {id}")),
        since_ms,
        machine: None,
    }
}

#[test]
fn the_notifications_section_lists_attention_and_done_windows_most_urgent_first() {
    let panes = (1..=6)
        .map(|i| pane(i, "s", Some(AgentState::Idle), "t"))
        .collect();
    let windows = vec![
        window(1, "one", WindowMark::Done, 10),
        window(2, "two", WindowMark::Running, 10),
        window(3, "three", WindowMark::Attention, 500),
        window(4, "four", WindowMark::Idle, 10),
        window(5, "five", WindowMark::Error, 900),
        window(6, "six", WindowMark::Attention, 100),
    ];
    let mut m = PanelModel::new(ViewOptions::default(), None);
    m.apply(
        Reply::Snapshot {
            machines: Vec::new(),
            clients: Vec::new(),
            schema: SCHEMA_VERSION,
            panes,
            windows,
        },
        0,
    );
    key(&mut m, KeyCode::Char('n'));
    assert_eq!(m.screen, Screen::Notifications);
    let b = draw(&m, 60, 24, 0);
    let s = text(&b);
    at(&b, "Notifications  4");
    let order = ["five · w5", "six · w6", "three · w3", "one · w1"];
    let ys: Vec<u16> = order.iter().map(|t| at(&b, t).1).collect();
    assert!(
        ys.windows(2).all(|p| p[0] < p[1]),
        "error, attention (longest waiting first), done: {s}"
    );
    for (t, glyph, colour) in [
        ("five", "✗", theme::RED),
        ("six", "⚠", theme::AMBER),
        ("one", "✓", theme::GREEN),
    ] {
        let (x, y) = at(&b, &format!("{t} · "));
        assert_eq!(b[(x - 2, y)].symbol(), glyph, "{s}");
        assert_eq!(b[(x - 2, y)].fg, colour, "{s}");
    }
    assert!(
        !s.contains("two") && !s.contains("four"),
        "running and idle are not listed: {s}"
    );
    assert!(s.contains("msg 6"), "{s}");
    // One key from the list; Enter goes to the chosen window's pane.
    key(&mut m, KeyCode::Down);
    let out = key(&mut m, KeyCode::Enter);
    assert!(out.quit);
    assert_eq!(
        out.requests,
        vec![
            Request::Focus {
                pane: PaneId(6),
                client: None,
                machine: None,
            },
            Request::Seen {
                pane: PaneId(6),
                machine: None
            }
        ]
    );
}

#[test]
fn each_state_icon_has_its_colour_and_the_spinner_turns_with_time() {
    let mut done = pane(4, "proj", Some(AgentState::Idle), "finished");
    done.unseen_result = true;
    let m = model(
        vec![
            pane(1, "proj", Some(AgentState::Working), "working"),
            pane(2, "proj", Some(AgentState::Blocked), "waiting"),
            pane(3, "proj", Some(AgentState::Error), "failing"),
            done,
            pane(5, "proj", Some(AgentState::Idle), "resting"),
        ],
        ViewOptions::default(),
    );
    let w = 50;
    let b = draw(&m, w, 30, 0);
    let s = text(&b);
    let icon = |b: &Buffer, t: &str| {
        let (_, y) = at(b, t);
        b[(w - 2, y)].clone()
    };
    for (t, glyph, colour) in [
        ("working", theme::SPINNER[0], theme::BLUE),
        ("waiting", "⚠", theme::AMBER),
        ("failing", "✗", theme::RED),
        ("finished", "✓", theme::GREEN),
        ("resting", "✓", theme::GREY),
    ] {
        let c = icon(&b, t);
        assert_eq!((c.symbol(), c.fg), (glyph, colour), "{t}: {s}");
    }
    assert!(s.contains(" Done  1"), "{s}");
    let (_, y) = at(&b, "finished");
    assert_eq!(
        row(&b, y + 1).trim(),
        "proj · Thread 4",
        "done names no state word: {s}"
    );
    let later = draw(&m, w, 30, theme::SPINNER_STEP_MS * 3);
    assert_eq!(icon(&later, "working").symbol(), theme::SPINNER[3]);
}

#[test]
fn session_grouping_puts_agents_without_a_window_under_other() {
    let mut lost = pane(2, "", Some(AgentState::Idle), "lost");
    lost.window_name = String::new();
    lost.window_index = 0;
    let m = model(
        vec![pane(1, "proj", Some(AgentState::Idle), "home"), lost],
        ViewOptions {
            grouping: Grouping::Session,
            ..Default::default()
        },
    );
    let b = draw(&m, 50, 24, 0);
    let s = text(&b);
    let (_, other_y) = at(&b, " Other  1");
    assert!(at(&b, " proj  1").1 < at(&b, "home").1, "{s}");
    assert!(
        other_y < at(&b, "lost").1 && at(&b, "home").1 < other_y,
        "{s}"
    );
}

#[test]
fn a_path_is_not_shortened_when_the_description_exactly_fits_the_card() {
    // A card line at 40 columns holds 37 cells (x = 2..=38).
    let d = "Read /srv/a/b/c.rs and then stopped ok";
    let d = &d[..37];
    assert_eq!(width(d), 37);
    let mut p = pane(1, "proj", Some(AgentState::Idle), "t");
    p.message = Some(d.into());
    let b = draw(&model(vec![p], ViewOptions::default()), 40, 24, 0);
    let (x, y) = at(&b, d);
    assert_eq!(x, 2);
    assert!(
        !b[(38, y)].modifier.contains(Modifier::DIM),
        "fits: no fade"
    );
}

#[test]
fn the_selected_card_stays_in_view_in_a_short_popup() {
    let panes = (1..=10)
        .map(|i| pane(i, "proj", Some(AgentState::Idle), &format!("card{i:02}")))
        .collect();
    let mut m = model(panes, ViewOptions::default());
    key(&mut m, KeyCode::End);
    assert_eq!(m.selected, Some(card_key(10)));
    let b = draw(&m, 40, 12, 0);
    let (_, y) = at(&b, "card10");
    assert_eq!(b[(0, y)].symbol(), "▌", "the selection bar marks it");
    assert!(find(&b, "card01").is_none(), "scrolled: {}", text(&b));
    assert!(
        row(&b, 11).contains("↑↓ move"),
        "the footer stays: {}",
        text(&b)
    );
    key(&mut m, KeyCode::Home);
    let b = draw(&m, 40, 12, 0);
    assert_eq!(
        at(&b, " Idle  10").1,
        1,
        "the heading comes back with the first card"
    );
    at(&b, "card01");
}

#[test]
fn a_path_after_a_waiting_tag_shortens_to_fit_beside_it() {
    let mut p = pane(1, "proj", Some(AgentState::Blocked), "t");
    p.kind = Some(BlockedKind::Permission);
    p.message = Some("Write /home/me/src/thinkterm/panel.rs?".into());
    let b = draw(&model(vec![p], ViewOptions::default()), 40, 24, 0);
    let (x, y) = at(&b, " permission ");
    assert_eq!(b[(x, y)].bg, theme::AMBER, "the tag is amber");
    let (dx, dy) = at(&b, "Write panel.rs?");
    assert_eq!((dx, dy), (x + 13, y), "after the tag, on the same line");
    assert!(!b[(38, y)].modifier.contains(Modifier::DIM));
}

#[test]
fn the_view_menu_scrolls_to_its_cursor_in_a_short_popup() {
    let mut m = model(
        vec![pane(1, "proj", Some(AgentState::Idle), "t")],
        ViewOptions::default(),
    );
    key(&mut m, KeyCode::Char('m'));
    for _ in 0..10 {
        key(&mut m, KeyCode::Down);
    }
    let b = draw(&m, 40, 12, 0);
    let (x, y) = at(&b, "Reload detection rules");
    assert_eq!(
        b[(x, y)].bg,
        theme::ACCENT,
        "the cursor line is shown: {}",
        text(&b)
    );
    let out = key(&mut m, KeyCode::Enter);
    assert_eq!(out.requests, vec![Request::Reload]);
    m.apply(
        Reply::Done {
            message: "Detection rules reloaded.".into(),
        },
        0,
    );
    let b = draw(&m, 40, 12, 0);
    at(&b, "Reload detection rules");
    at(&b, "Detection rules reloaded.");
    // Tiny popups draw something and never panic.
    for w in 1..12 {
        for h in 1..6 {
            draw(&m, w, h, 0);
        }
    }
    key(&mut m, KeyCode::Home);
    for _ in 0..10 {
        key(&mut m, KeyCode::Up);
    }
    let b = draw(&m, 40, 12, 0);
    let (x, y) = at(&b, "[x] Needs attention");
    assert_eq!(b[(x, y)].bg, theme::ACCENT, "{}", text(&b));
    at(&b, "Show");
}

#[test]
fn every_screen_draws_at_every_small_size_without_panicking() {
    let mut p = pane(1, "a-long-session-name", Some(AgentState::Blocked), "title");
    p.kind = Some(BlockedKind::Auth);
    p.message = Some("Sign in at /very/long/path/to/somewhere please".into());
    p.progress = Some(70);
    p.subtasks = (0..8)
        .map(|i| sub(&format!("t{i}"), AgentState::Working, false))
        .collect();
    let mut m = PanelModel::new(ViewOptions::default(), Some(PaneId(1)));
    m.apply(
        Reply::Snapshot {
            machines: Vec::new(),
            clients: Vec::new(),
            schema: SCHEMA_VERSION,
            panes: vec![
                p,
                pane(2, "b", Some(AgentState::Working), "日本語のタイトル"),
            ],
            windows: vec![window(1, "a", WindowMark::Attention, 5)],
        },
        0,
    );
    m.expanded.insert(card_key(1));
    for screen in [Screen::List, Screen::Detail, Screen::Notifications] {
        m.screen = screen;
        for menu in [None, Some(10)] {
            m.menu = menu;
            for w in 0..46 {
                for h in 0..14 {
                    let b = draw(&m, w, h, 777);
                    if menu.is_some() || w == 0 || h == 0 {
                        continue;
                    }
                    let top = row(&b, 0);
                    let want = if w >= 8 && h >= 3 {
                        " Agents"
                    } else {
                        "thinkterm"
                    };
                    let n = want.len().min(w as usize);
                    assert_eq!(&top[..n], &want[..n], "{screen:?} at {w}x{h}");
                }
            }
        }
    }
}

#[test]
fn the_display_switches_hide_description_tag_progress_and_subtasks_on_the_cards() {
    let mut p = pane(1, "proj", Some(AgentState::Blocked), "t");
    p.kind = Some(BlockedKind::Question);
    p.message = Some("Which branch?".into());
    p.progress = Some(50);
    p.subtasks = vec![sub("one", AgentState::Blocked, false)];
    let mut m = model(vec![p], ViewOptions::default());
    let b = draw(&m, 40, 24, 0);
    // A 24-cell bar (the most there is), half full, then the number.
    let (x, y) = at(&b, "████████████░░░░░░░░░░░░ 50%");
    assert_eq!(b[(x, y)].fg, theme::BLUE);
    assert_ne!(b[(x + 12, y)].fg, theme::BLUE, "the rest is the dim track");
    at(&b, " question ");
    at(&b, "Which branch?");
    at(&b, "▸ 1 subtask: 1 waiting");
    key(&mut m, KeyCode::Char('m'));
    // Cursor to the four display switches (items 6..=9), turning each off in turn.
    let gone = ["Which branch?", " question ", "50%", "1 subtask"];
    for _ in 0..6 {
        key(&mut m, KeyCode::Down);
    }
    for (k, what) in gone.iter().enumerate() {
        assert!(key(&mut m, KeyCode::Enter).save_options);
        m.menu = None;
        let s = text(&draw(&m, 40, 24, 0));
        assert!(!s.contains(what), "{what} hidden: {s}");
        for rest in &gone[k + 1..] {
            assert!(s.contains(rest), "{rest} still shown: {s}");
        }
        m.menu = Some(7 + k);
    }
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(["-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

#[test]
fn a_card_in_a_real_linked_worktree_shows_the_branch_line_and_the_main_checkout_none() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let main = tmp.path().join("repo");
    std::fs::create_dir_all(&main).expect("mkdir");
    git(&main, &["init", "-q"]);
    std::fs::write(main.join("a.txt"), "a").expect("write");
    git(&main, &["add", "."]);
    git(&main, &["commit", "-q", "-m", "one"]);
    git(&main, &["worktree", "add", "-q", "-b", "feat/x", "../wt-x"]);
    let mut in_wt = pane(1, "proj", Some(AgentState::Idle), "linked");
    in_wt.current_path = tmp.path().join("wt-x").to_string_lossy().into_owned();
    let mut in_main = pane(2, "proj", Some(AgentState::Idle), "main");
    in_main.current_path = main.to_string_lossy().into_owned();
    let b = draw(
        &model(vec![in_wt, in_main], ViewOptions::default()),
        50,
        24,
        0,
    );
    let s = text(&b);
    let (_, y) = at(&b, "⎇ wt-x · feat/x");
    assert_eq!(y, at(&b, "Thread 1").1 + 1, "under the location: {s}");
    assert_eq!(s.matches('⎇').count(), 1, "none for the main checkout: {s}");
}

/// Issue 17: the detail view names the agent's version and says when its screen is one its
/// rules no longer recognise (the drift alarm).
#[test]
fn the_detail_view_names_the_version_and_an_unrecognised_screen() {
    let mut p = pane(1, "proj", Some(AgentState::Idle), "");
    p.agent_version = Some("2.1.332".into());
    p.unrecognised = true;
    let mut m = model(vec![p], ViewOptions::default());
    key(&mut m, KeyCode::Char('d'));
    let s = text(&draw(&m, 70, 24, 0));
    assert!(s.contains("Agent     Soul 2.1.332"), "{s}");
    assert!(s.contains("Screen    not recognised by its rules"), "{s}");
}
