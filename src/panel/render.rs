//! Drawing the panel into a ratatui buffer: header, the list of headings and cards (with the
//! selection bar, the raised card, scrolling that keeps the selection in view), the empty
//! messages, the footer (connection, results, keys) and the menu on top. Pure: the model and
//! the time in, cells out.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Widget};
use ratatui::Frame;

use super::card::{card_rows, CardRow};
use super::grouping::{emptiness, entries, Emptiness, Entry};
use super::menu;
use super::model::{category, Category, Link, PanelModel, Screen};
use super::text::{put_line, width};
use super::theme;

/// Text when no agent runs anywhere.
pub const NO_AGENTS: &str = "No agents detected";
/// Text when the show checkboxes hide every agent.
pub const ALL_HIDDEN: &str = "All agents are hidden by the view options";
/// Footer while the daemon is away.
pub const RECONNECTING: &str = "Reconnecting to the sidecar…";

/// Draws the whole panel in a frame.
pub fn draw(frame: &mut Frame<'_>, m: &PanelModel, now_ms: u64) {
    let area = frame.area();
    render(m, area, frame.buffer_mut(), now_ms);
}

/// Draws the whole panel into `buf` over `area`.
pub fn render(m: &PanelModel, area: Rect, buf: &mut Buffer, now_ms: u64) {
    if area.is_empty() {
        return;
    }
    if area.height < 3 || area.width < 8 {
        put_line(buf, area.x, area.y, area.width, &Line::raw("thinkterm"));
        return;
    }
    header(m, Rect { height: 1, ..area }, buf);
    let body = Rect {
        y: area.y + 1,
        height: area.height - 2,
        ..area
    };
    match m.screen {
        Screen::List => list(m, body, buf, now_ms),
        Screen::Notifications => super::detail::notifications(m, body, buf),
        Screen::Detail => super::detail::detail(m, body, buf, now_ms),
    }
    footer(
        m,
        Rect {
            y: area.y + area.height - 1,
            height: 1,
            ..area
        },
        buf,
    );
    if let Some(cursor) = m.menu {
        menu_box(m, cursor, area, buf);
    }
}

fn header(m: &PanelModel, area: Rect, buf: &mut Buffer) {
    let count = |c: Category| m.agents().filter(|p| category(p) == c).count();
    let mut spans = vec![Span::styled(
        " Agents",
        Style::new().add_modifier(Modifier::BOLD),
    )];
    let att = count(Category::Attention);
    let run = count(Category::Running);
    let done = count(Category::Done);
    if att > 0 {
        spans.push(Span::styled(
            format!("  ⚠ {att}"),
            Style::new().fg(theme::AMBER),
        ));
    }
    if run > 0 {
        spans.push(Span::styled(
            format!("  ⠿ {run}"),
            Style::new().fg(theme::BLUE),
        ));
    }
    if done > 0 {
        spans.push(Span::styled(
            format!("  ✓ {done}"),
            Style::new().fg(theme::GREEN),
        ));
    }
    put_line(buf, area.x, area.y, area.width, &Line::from(spans));
}

fn footer(m: &PanelModel, area: Rect, buf: &mut Buffer) {
    let line = match m.link {
        Link::Reconnecting => {
            Line::styled(format!(" {RECONNECTING}"), Style::new().fg(theme::AMBER))
        }
        Link::Connecting if !m.has_snapshot => {
            Line::styled(" Connecting to the sidecar…", Style::new().fg(theme::GREY))
        }
        _ => match &m.status {
            Some(s) => Line::styled(format!(" {s}"), Style::new().fg(Color::Indexed(252))),
            None => Line::styled(
                " ↑↓ move  ⏎ go  s subtasks  d detail  n notifications  m menu  r reload  q quit",
                Style::new().fg(theme::GREY),
            ),
        },
    };
    put_line(buf, area.x, area.y, area.width, &line);
}

/// One line of the list before scrolling.
enum Row {
    Heading(Line<'static>),
    Blank,
    Card {
        row: CardRow,
        selected: bool,
        raised: bool,
    },
}

fn list(m: &PanelModel, area: Rect, buf: &mut Buffer, now_ms: u64) {
    if !m.has_snapshot {
        return;
    }
    let message = match emptiness(m) {
        Emptiness::NoAgents => Some(NO_AGENTS),
        Emptiness::AllHidden => Some(ALL_HIDDEN),
        Emptiness::NotEmpty => None,
    };
    if let Some(text) = message {
        let y = area.y + area.height / 3;
        let x = area.x + (area.width.saturating_sub(width(text) as u16)) / 2;
        put_line(
            buf,
            x,
            y,
            area.width - (x - area.x),
            &Line::styled(text, Style::new().fg(theme::GREY)),
        );
        return;
    }
    // The cells a card line holds: card_line writes from x + 2 and keeps a one-cell margin.
    let inner = area.width.saturating_sub(3) as usize;
    let raised = m.raised();
    let mut rows: Vec<Row> = Vec::new();
    for e in entries(m) {
        match e {
            Entry::Heading { text, count } => {
                if !rows.is_empty() {
                    rows.push(Row::Blank);
                }
                let mut spans = vec![Span::styled(
                    format!(" {text}"),
                    Style::new().add_modifier(Modifier::BOLD),
                )];
                if let Some(n) = count {
                    spans.push(Span::styled(format!("  {n}"), Style::new().fg(theme::GREY)));
                }
                rows.push(Row::Heading(Line::from(spans)));
            }
            Entry::SubHeading(text) => rows.push(Row::Heading(Line::styled(
                format!("  {text}"),
                Style::new().fg(Color::Indexed(250)),
            ))),
            Entry::Card(p) => {
                if matches!(rows.last(), Some(Row::Card { .. })) {
                    rows.push(Row::Blank);
                }
                let selected = m.selected.as_ref() == Some(&super::model::CardKey::of(p));
                for row in card_rows(m, p, inner, now_ms) {
                    rows.push(Row::Card {
                        row,
                        selected,
                        raised: raised.as_ref() == Some(&super::model::CardKey::of(p)),
                    });
                }
            }
        }
    }
    let first = rows
        .iter()
        .position(|r| matches!(r, Row::Card { selected: true, .. }));
    let last = rows
        .iter()
        .rposition(|r| matches!(r, Row::Card { selected: true, .. }));
    let h = area.height as usize;
    let mut scroll = m.scroll.get().min(rows.len().saturating_sub(h));
    if let (Some(a), Some(b)) = (first, last) {
        // Keep the heading right above the first card of a group in view with it.
        let a = if a > 0 && matches!(rows[a - 1], Row::Heading(_)) {
            a - 1
        } else {
            a
        };
        if b + 1 > scroll + h {
            scroll = b + 1 - h;
        }
        if a < scroll {
            scroll = a;
        }
    }
    m.scroll.set(scroll);
    for (i, row) in rows.iter().skip(scroll).take(h).enumerate() {
        let y = area.y + i as u16;
        match row {
            Row::Heading(line) => put_line(buf, area.x, y, area.width, line),
            Row::Blank => {}
            Row::Card {
                row,
                selected,
                raised,
                ..
            } => card_line(buf, area, y, row, *selected, *raised),
        }
    }
}

fn card_line(buf: &mut Buffer, area: Rect, y: u16, row: &CardRow, selected: bool, raised: bool) {
    let bg = if raised {
        theme::RAISED_BG
    } else {
        theme::CARD_BG
    };
    let line_area = Rect {
        x: area.x + 1,
        y,
        width: area.width.saturating_sub(1),
        height: 1,
    };
    buf.set_style(line_area, Style::new().bg(bg));
    if selected {
        buf.set_string(area.x, y, "▌", Style::new().fg(theme::ACCENT));
    }
    let x = area.x + 2;
    let mut room = area.width.saturating_sub(3);
    if let Some(icon) = &row.right {
        let w = icon.width() as u16;
        if room > w + 1 {
            buf.set_span(x + room - w, y, icon, w);
            room -= w + 1;
        }
    }
    put_line(buf, x, y, room, &row.left);
}

fn menu_box(m: &PanelModel, cursor: usize, area: Rect, buf: &mut Buffer) {
    let items = menu::items(m);
    let headings = (0..items.len())
        .filter(|i| menu::section(&items, *i).is_some())
        .count();
    let lines = items.len() + headings + 2 + 1; // items, headings, border, result line
    let w = area.width.min(44);
    let h = (lines as u16).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    Clear.render(r, buf);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(" View ")
        .style(Style::new().bg(Color::Indexed(236)));
    let inner = block.inner(r);
    block.render(r, buf);
    // Section headings, items (the cursor's highlighted), then the result line; scrolled so
    // the cursor (and the result under the last item) stays in view in a short popup.
    let grey = Style::new().fg(theme::GREY);
    let mut lines: Vec<(u16, Line<'static>)> = Vec::with_capacity(lines);
    let mut target = 0;
    for (i, item) in items.iter().enumerate() {
        if let Some(s) = menu::section(&items, i) {
            lines.push((1, Line::styled(s, grey)));
        }
        let style = if i == cursor {
            target = lines.len();
            Style::new().fg(Color::Black).bg(theme::ACCENT)
        } else {
            Style::new()
        };
        let text = format!(
            " {:<w$}",
            menu::label(m, *item),
            w = inner.width.saturating_sub(2) as usize
        );
        lines.push((0, Line::styled(text, style)));
    }
    if let Some(s) = &m.status {
        if cursor + 1 >= items.len() {
            target = lines.len();
        }
        lines.push((1, Line::styled(s.clone(), grey)));
    }
    let h = inner.height as usize;
    let scroll = (target + 1).saturating_sub(h);
    for (k, (indent, line)) in lines.iter().skip(scroll).take(h).enumerate() {
        put_line(
            buf,
            inner.x + indent,
            inner.y + k as u16,
            inner.width.saturating_sub(*indent),
            line,
        );
    }
}
