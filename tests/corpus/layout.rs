//! Laying a recorded screen out again at another width or with fewer rows, the way the agents'
//! layouts behave: full-width rules and box borders follow the width, the padding between a
//! row's left and right parts grows or shrinks, prose wraps at word boundaries, rows laid out in
//! columns and the footer (the lines under the last full-width rule, or the last line) are cut
//! at the edge, lines that no longer fit scroll off the top; with fewer rows, blank space
//! shrinks before the top scrolls off. Pure text functions for [`super::mutate`].

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

fn cols(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// The longest prefix of `s` that fits in `max` columns.
pub fn cut(s: &str, max: usize) -> String {
    let mut w = 0;
    let mut out = String::new();
    for c in s.chars() {
        w += UnicodeWidthChar::width(c).unwrap_or(0);
        if w > max {
            break;
        }
        out.push(c);
    }
    out
}

/// A line of one repeated drawing character (a rule, a dashed separator).
fn rule_char(line: &str) -> Option<char> {
    let t = line.trim_start();
    let c = t.chars().next()?;
    let drawing = matches!(
        c,
        '─' | '━' | '═' | '╌' | '┄' | '┈' | '▔' | '▁' | '-' | '—' | '_'
    );
    (drawing && t.chars().count() >= 8 && t.chars().all(|x| x == c)).then_some(c)
}

/// The screen at `rows` rows: blank space shrinks first (the largest run of blank lines loses a
/// line, never its last one), then the top scrolls off.
pub fn fewer_rows<'a>(lines: &[&'a str], rows: usize) -> Vec<&'a str> {
    let mut v: Vec<&str> = lines.to_vec();
    while v.len() > rows {
        let mut best: Option<(usize, usize)> = None;
        let mut i = 0;
        while i < v.len() {
            if v[i].trim().is_empty() {
                let s = i;
                while i < v.len() && v[i].trim().is_empty() {
                    i += 1;
                }
                if i - s >= 2 && best.is_none_or(|(_, n)| i - s > n) {
                    best = Some((s, i - s));
                }
            } else {
                i += 1;
            }
        }
        match best {
            Some((s, _)) => {
                v.remove(s);
            }
            None => {
                v.remove(0);
            }
        }
    }
    v
}

/// The first line of the footer block: the lines under the last full-width rule when at most
/// three follow it, else the last non-blank line.
fn footer_start(lines: &[&str]) -> Option<usize> {
    let last = lines.iter().rposition(|l| !l.trim().is_empty())?;
    let rule = lines.iter().rposition(|l| rule_char(l).is_some());
    Some(match rule {
        Some(r) if r < last && last - r <= 3 => r + 1,
        _ => last,
    })
}

/// The screen laid out again at `to` columns (from `from`), at most `rows` lines kept.
pub fn relayout(lines: &[&str], from: usize, to: usize, rows: usize) -> String {
    let footer = footer_start(lines);
    let mut out: Vec<String> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        // The footer is cut at the edge, never wrapped.
        out.extend(fit(l, from, to, footer.is_some_and(|f| i >= f)));
    }
    let skip = out.len().saturating_sub(rows);
    out[skip..].join("\n")
}

/// One line at the new width: elastic parts follow the width, the rest wraps (the footer is cut).
fn fit(line: &str, from: usize, to: usize, footer: bool) -> Vec<String> {
    let lines = fit_line(line, from, to, !footer);
    if footer {
        return vec![cut(&lines.join(" "), to)];
    }
    lines
}

fn fit_line(line: &str, from: usize, to: usize, wraps: bool) -> Vec<String> {
    let w = cols(line);
    let lead = line.len() - line.trim_start().len();
    // Right-aligned to the pane's edge: the line follows the width.
    let elastic = from > 0 && w + 4 >= from;
    let target = (w + to).saturating_sub(from).max(1);
    if let Some(c) = rule_char(line) {
        let n = if elastic {
            target.saturating_sub(lead).max(1)
        } else {
            (w - lead).min(to.saturating_sub(lead)).max(1)
        };
        return vec![format!("{}{}", &line[..lead], c.to_string().repeat(n))];
    }
    let t = line.trim_start();
    let first = t.chars().next();
    let last = t.chars().last();
    if elastic && matches!(first, Some('╭' | '╰' | '┌' | '└' | '┏' | '┗')) {
        // A box border: its last run of ─ takes the change.
        if let Some(fixed) = stretch_run(line, '─', target) {
            return vec![fixed];
        }
    }
    if elastic
        && matches!(first, Some('│' | '┃' | '║'))
        && matches!(last, Some('│' | '┃' | '║'))
        && t.chars().count() > 1
    {
        return box_body(line, lead, target);
    }
    if elastic && t.ends_with("───") {
        // A labelled rule ("── input ────"): its last run of ─ takes the change.
        if let Some(fixed) = stretch_run(line, '─', target) {
            return vec![cut(&fixed, to)];
        }
    }
    if elastic {
        if let Some(fixed) = stretch_gap(line, target) {
            // Laid out in columns: cut at the edge, as the agents' rows are.
            return vec![cut(&fixed, to)];
        }
    }
    if w > to && wraps && !line.trim_start().contains("   ") {
        return wrap(line, to);
    }
    if w > to {
        return vec![cut(line, to)];
    }
    vec![line.to_string()]
}

/// `line` with its last run of `c` (before the closing corner) made to fit `target` columns.
fn stretch_run(line: &str, c: char, target: usize) -> Option<String> {
    let chars: Vec<char> = line.chars().collect();
    let end = chars.iter().rposition(|&x| x == c)?;
    let mut start = end;
    while start > 0 && chars[start - 1] == c {
        start -= 1;
    }
    let run = end - start + 1;
    let w = cols(line);
    let n = (run + target).checked_sub(w)?.max(1);
    let mut s: String = chars[..start].iter().collect();
    s.extend(std::iter::repeat_n(c, n));
    s.extend(&chars[end + 1..]);
    Some(s)
}

/// A `│ text │` line at `target` columns: padding follows, text too long wraps inside.
fn box_body(line: &str, lead: usize, target: usize) -> Vec<String> {
    let t = line.trim_start();
    let mut chars = t.chars();
    let open = chars.next().unwrap_or('│');
    let close = chars.next_back().unwrap_or('│');
    let inner: String = chars.collect();
    let inner = inner.trim_end();
    let room = target.saturating_sub(lead + 2).max(4);
    let pieces = if cols(inner) > room {
        wrap(inner, room)
    } else {
        vec![inner.to_string()]
    };
    pieces
        .into_iter()
        .map(|p| {
            let pad = room.saturating_sub(cols(&p));
            format!("{}{open}{p}{}{close}", &line[..lead], " ".repeat(pad))
        })
        .collect()
}

/// The widest run of 3 or more spaces inside the line (or its indentation) resized so the line
/// is `target` wide (never under 2 spaces); None when the line has none.
fn stretch_gap(line: &str, target: usize) -> Option<String> {
    let bytes = line.as_bytes();
    let mut best: Option<(usize, usize)> = None;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b' ' {
            let s = i;
            while i < bytes.len() && bytes[i] == b' ' {
                i += 1;
            }
            if i - s >= 3 && i < bytes.len() && best.is_none_or(|(a, b)| b - a < i - s) {
                best = Some((s, i));
            }
        } else {
            i += 1;
        }
    }
    let (s, e) = best?;
    let w = cols(line);
    let min = if s == 0 { 0 } else { 2 };
    let n = ((e - s) + target).saturating_sub(w).max(min);
    Some(format!("{}{}{}", &line[..s], " ".repeat(n), &line[e..]))
}

/// Word-wraps a line to `to` columns; continuation lines keep the indentation of the text after
/// a leading glyph (`● text` continues under `text`).
pub fn wrap(line: &str, to: usize) -> Vec<String> {
    let lead = line.len() - line.trim_start().len();
    let t = line.trim_start();
    let mut hang = lead;
    if let Some((g, rest)) = t.split_once(' ') {
        if g.chars().count() == 1 && !g.chars().all(char::is_alphanumeric) {
            hang = lead + cols(g) + 1 + (rest.len() - rest.trim_start().len());
        }
    }
    let hang = hang.min(to / 2);
    let mut out = Vec::new();
    // Indentation wider than the line shrinks as the agents' layouts do.
    let mut cur_w = lead.min(to / 2);
    let mut cur = " ".repeat(cur_w);
    let mut fresh = true;
    for word in t.split(' ') {
        let ww = cols(word);
        if !fresh && cur_w + 1 + ww > to {
            out.push(std::mem::take(&mut cur));
            cur = " ".repeat(hang);
            cur_w = hang;
            fresh = true;
        }
        if !fresh {
            cur.push(' ');
            cur_w += 1;
        }
        if cur_w + ww > to {
            // A word longer than the line: cut it where the line ends.
            let mut rest = word.to_string();
            while cur_w + cols(&rest) > to {
                let head = cut(&rest, to.saturating_sub(cur_w));
                if head.is_empty() {
                    break;
                }
                rest = rest[head.len()..].to_string();
                cur.push_str(&head);
                out.push(std::mem::take(&mut cur));
                cur = " ".repeat(hang);
                cur_w = hang;
            }
            cur.push_str(&rest);
            cur_w += cols(&rest);
        } else {
            cur.push_str(word);
            cur_w += ww;
        }
        fresh = false;
    }
    out.push(cur);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relayout_follows_the_width() {
        let rule = "─".repeat(20);
        let lines = [
            "● alpha beta gamma delta",
            rule.as_str(),
            "❯ x",
            "╭──────────────────╮",
            "│ one two          │",
            "╰──────────────────╯",
            "  left         right",
        ];
        let s = relayout(&lines, 20, 12, 40);
        let got: Vec<&str> = s.lines().collect();
        assert_eq!(
            got,
            [
                "● alpha beta",
                "  gamma",
                "  delta",
                "────────────",
                "❯ x",
                "╭──────────╮",
                "│ one two  │",
                "╰──────────╯",
                "  left  righ"
            ]
        );
        let wide = relayout(&lines, 20, 30, 40);
        assert!(wide.contains(&"─".repeat(30)), "{wide}");
        assert!(
            wide.ends_with(&format!("  left{}right", " ".repeat(19))),
            "{wide}"
        );
        assert_eq!(relayout(&lines, 20, 12, 3).lines().count(), 3);
    }
}
