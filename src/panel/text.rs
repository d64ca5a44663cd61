//! Text that must fit one line: measuring, shortening paths to their last folder (S5.4), the
//! fade that replaces wrapping, and the shimmer of working descriptions.

use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// Cells dimmed at the end of a line that does not fit.
pub const FADE_CELLS: u16 = 3;

/// Cells a string takes on screen.
pub fn width(s: &str) -> usize {
    Span::raw(s).width()
}

/// Shortens path-like words to their last folder, longest first, until `s` fits `max` cells
/// (or no path is left to shorten). Text that already fits is returned unchanged.
pub fn shorten_paths(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    let mut words: Vec<String> = s.split(' ').map(str::to_string).collect();
    let mut candidates: Vec<usize> = (0..words.len())
        .filter(|i| path_core(&words[*i]).is_some())
        .collect();
    candidates.sort_by_key(|i| std::cmp::Reverse(width(&words[*i])));
    for i in candidates {
        if let Some((pre, core, post)) = path_core(&words[i]) {
            let last = core
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or(core);
            if !last.is_empty() {
                words[i] = format!("{pre}{last}{post}");
            }
        }
        if width(&words.join(" ")) <= max {
            break;
        }
    }
    words.join(" ")
}

/// Splits a word into (leading punctuation, path, trailing punctuation) when it looks like a
/// path with at least one folder: `/a/b`, `~/a`, `./a`, `src/panel/mod.rs`.
fn path_core(word: &str) -> Option<(&str, &str, &str)> {
    let start = word.find(|c: char| !matches!(c, '(' | '[' | '"' | '\'' | '`'))?;
    let end = word
        .rfind(|c: char| !matches!(c, ')' | ']' | '"' | '\'' | '`' | ',' | ';' | ':' | '.'))?
        + 1;
    if start >= end {
        return None;
    }
    let core = &word[start..end];
    let inner = core.trim_end_matches('/');
    let slashes = inner.matches('/').count();
    let anchored = inner.starts_with('/')
        || inner.starts_with("~/")
        || inner.starts_with("./")
        || inner.starts_with("../");
    let is_path =
        !inner.contains("://") && slashes >= 1 && (anchored || slashes >= 2) && inner.len() > 1;
    is_path.then(|| (&word[..start], core, &word[end..]))
}

/// Writes `line` at (x, y) clipped to `max` cells; when it does not fit, the last cells fade.
pub fn put_line(buf: &mut Buffer, x: u16, y: u16, max: u16, line: &Line<'_>) {
    if max == 0 {
        return;
    }
    buf.set_line(x, y, line, max);
    if line.width() > max as usize {
        fade(buf, x, y, max);
    }
}

/// Dims the last cells of a span of `max` cells starting at x: darker, then darkest.
pub fn fade(buf: &mut Buffer, x: u16, y: u16, max: u16) {
    let n = FADE_CELLS.min(max);
    let shades = [
        Color::Indexed(245),
        Color::Indexed(241),
        Color::Indexed(238),
    ];
    for k in 0..n {
        let cx = x + max - n + k;
        if let Some(cell) = buf.cell_mut((cx, y)) {
            cell.set_fg(shades[k as usize]);
            cell.modifier.insert(Modifier::DIM);
        }
    }
}

/// Cells of the moving highlight of a shimmer.
const SHIMMER_WIDTH: usize = 4;
/// Milliseconds per step of the shimmer.
pub const SHIMMER_STEP_MS: u64 = 90;

/// A working description: `base` style with a bright band sweeping across it as time passes.
pub fn shimmer(text: &str, base: Style, now_ms: u64) -> Vec<Span<'static>> {
    let chars: Vec<char> = text.chars().collect();
    let period = chars.len() + SHIMMER_WIDTH * 2;
    let head = (now_ms / SHIMMER_STEP_MS) as usize % period.max(1);
    let from = head.saturating_sub(SHIMMER_WIDTH).min(chars.len());
    let to = head.min(chars.len());
    let bright = base.fg(Color::White).add_modifier(Modifier::BOLD);
    let part = |a: usize, b: usize| chars[a..b].iter().collect::<String>();
    let mut spans = vec![Span::styled(part(0, from), base)];
    if to > from {
        spans.push(Span::styled(part(from, to), bright));
    }
    spans.push(Span::styled(part(to, chars.len()), base));
    spans.retain(|s| !s.content.is_empty());
    spans
}

/// Wraps `text` into lines of at most `max` cells, breaking at spaces (long words are cut).
pub fn wrap(text: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        let mut word = word.to_string();
        loop {
            let sep = usize::from(!cur.is_empty());
            if width(&cur) + sep + width(&word) <= max {
                if sep == 1 {
                    cur.push(' ');
                }
                cur.push_str(&word);
                break;
            }
            if !cur.is_empty() {
                lines.push(std::mem::take(&mut cur));
                continue;
            }
            // A word longer than a line: cut it at the width.
            let mut cut = String::new();
            let mut rest = word.chars().peekable();
            while let Some(c) = rest.peek() {
                if width(&cut) + width(c.encode_utf8(&mut [0; 4])) > max {
                    break;
                }
                cut.push(*c);
                rest.next();
            }
            if cut.is_empty() {
                cut = rest.next().map(String::from).unwrap_or_default();
            }
            lines.push(cut);
            word = rest.collect();
            if word.is_empty() {
                break;
            }
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_shorten_only_when_that_is_needed_longest_first() {
        let s = "Editing /home/me/work/thinkterm/src/panel and ~/notes/todo.md";
        assert_eq!(shorten_paths(s, 200), s, "fits: unchanged");
        assert_eq!(shorten_paths(s, 45), "Editing panel and ~/notes/todo.md");
        assert_eq!(shorten_paths(s, 30), "Editing panel and todo.md");
        assert_eq!(
            shorten_paths("Reading (src/panel/mod.rs), ok", 20),
            "Reading (mod.rs), ok"
        );
        assert_eq!(
            shorten_paths("see https://example.com/a/b/c for more", 10),
            "see https://example.com/a/b/c for more"
        );
        assert_eq!(
            shorten_paths("and/or both are fine here", 5),
            "and/or both are fine here"
        );
    }

    #[test]
    fn wrap_breaks_at_spaces_and_cuts_long_words() {
        assert_eq!(wrap("one two three", 7), vec!["one two", "three"]);
        assert_eq!(wrap("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
    }

    #[test]
    fn the_shimmer_moves_with_time_and_keeps_the_text() {
        let a = shimmer("building the project", Style::default(), 0);
        let b = shimmer(
            "building the project",
            Style::default(),
            SHIMMER_STEP_MS * 8,
        );
        let text = |s: &[Span]| s.iter().map(|x| x.content.to_string()).collect::<String>();
        assert_eq!(text(&a), "building the project");
        assert_eq!(text(&b), "building the project");
        assert_ne!(a, b, "the bright band moved");
    }
}
