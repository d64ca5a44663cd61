//! What agent updates and other panes do to a recorded frame, as variants that must keep the
//! frame's state:
//!
//! - [`Kind::Width`]: the same screen laid out again at every width from 60 to 200 columns, the
//!   way the agents lay out: full-width rules and box borders follow the width, the padding
//!   between a row's left and right parts grows or shrinks, prose wraps at word boundaries, rows
//!   laid out in columns and the footer (the lines under the last full-width rule, or the last
//!   line) are cut at the edge; lines that no longer fit scroll off the top.
//! - [`Kind::Rows`]: fewer rows, down to [`MIN_ROWS`]: blank space shrinks first, then the top
//!   scrolls off.
//! - [`Kind::Title`]: a segment added to the title before its last one (`⠋ codex` becomes
//!   `⠋ fix the build | codex`, as Codex 0.171 did).
//! - [`Kind::Footer`]: the last non-blank line cut at every length that keeps its first word (no
//!   pane is narrower than that).
//! - [`Kind::Prose`]: every line of the model's or the person's text (what the scripted model
//!   and the capture script wrote) replaced by prompt-like chrome quoted as prose.
//! - [`Kind::Version`]: the version numbers on screen (the banner) changed.
//!
//! Pure text functions: no rules, no files.

use super::layout::{cut, fewer_rows, relayout};

/// The narrowest and widest re-layouts.
pub const WIDTHS: std::ops::RangeInclusive<usize> = 60..=200;

/// The fewest rows a frame is cut to.
pub const MIN_ROWS: usize = 10;

/// What a variant changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// Laid out at another width.
    Width,
    /// Fewer rows.
    Rows,
    /// A segment added to the title.
    Title,
    /// The footer cut.
    Footer,
    /// The model's text replaced.
    Prose,
    /// The banner's version changed.
    Version,
}

impl Kind {
    /// Every kind, in table order.
    pub const ALL: [Kind; 6] = [
        Kind::Width,
        Kind::Rows,
        Kind::Title,
        Kind::Footer,
        Kind::Prose,
        Kind::Version,
    ];

    /// Column name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Width => "width",
            Kind::Rows => "rows",
            Kind::Title => "title",
            Kind::Footer => "footer",
            Kind::Prose => "prose",
            Kind::Version => "version",
        }
    }
}

/// One variant of a frame.
#[derive(Clone, Debug)]
pub struct Variant {
    /// What changed.
    pub kind: Kind,
    /// How (`w=73`, `cut=12`, the quoted text).
    pub detail: String,
    /// The screen.
    pub screen: String,
    /// The title.
    pub title: Option<String>,
}

/// Segments a newer version might add to a title (a thread name is the person's text).
pub const TITLE_SEGMENTS: [&str; 4] = [
    "fix the build",
    "Working on it",
    "review PR 42 | step 2",
    "Do you want to proceed?",
];

/// Prompt-like chrome of every agent, as a reply might quote it.
pub const QUOTES: [&str; 11] = [
    "",
    "Do you want to proceed? ❯ 1. Yes  2. No",
    "Esc to cancel · Tab to amend",
    "Enter to select · ↑/↓ to navigate · Esc to cancel",
    "⏸ manual mode on · esc to interrupt",
    "• Working (3s • esc to interrupt)",
    "Press enter to confirm or esc to cancel",
    "⠧ Working... ↑↓ navigate  enter select  escape/ctrl+c cancel",
    "❯ 1. Yes",
    "Allow once  Allow always  Reject  enter confirm",
    "✻ Frolicking… (3s · ↓ 20 tokens · esc to interrupt)",
];

/// Versions put in place of the ones on screen.
pub const VERSIONS: [&str; 3] = ["9.9.9", "10.200.3000", "0.0.1-beta.1"];

/// Words that mark a line as the scripted model's or the capture script's text (`mock_llm.py`
/// replies, the prompts and the draft typed by `run_evals.py`).
const PROSE_MARKS: [&str; 24] = [
    "EVAL_",
    "Let me think",
    "carefully",
    "step by step",
    "repository does",
    "build system",
    "compiles the",
    "tests exercise",
    "every module",
    "are collected",
    "summarised",
    "artefacts",
    "reported back",
    "short summary",
    "That is all",
    "Done. The command",
    "nothing else to do",
    "Ready when you are",
    "run a command for that",
    "draft that is not",
    "explain it again",
    "once more please",
    "which database?",
    "the scratch directory",
];

/// Every variant of a frame (`width` x `height`, the size it was captured at).
pub fn variants(screen: &str, title: Option<&str>, width: usize, height: usize) -> Vec<Variant> {
    let lines = content_lines(screen);
    let mut out = Vec::new();
    let same_title = || title.map(str::to_string);
    for w in WIDTHS {
        out.push(Variant {
            kind: Kind::Width,
            detail: format!("w={w}"),
            screen: relayout(&lines, width, w, height),
            title: same_title(),
        });
    }
    for r in MIN_ROWS..height.min(lines.len()) {
        out.push(Variant {
            kind: Kind::Rows,
            detail: format!("rows={r}"),
            screen: fewer_rows(&lines, r).join("\n"),
            title: same_title(),
        });
    }
    if let Some(t) = title {
        for seg in TITLE_SEGMENTS {
            out.push(Variant {
                kind: Kind::Title,
                detail: format!("title={seg:?}"),
                screen: screen.to_string(),
                title: Some(title_with(t, seg)),
            });
        }
    }
    if let Some(last) = lines.iter().rposition(|l| !l.trim().is_empty()) {
        let footer: Vec<char> = lines[last].chars().collect();
        for n in first_word_end(&footer)..footer.len() {
            let mut v: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            v[last] = footer[..n].iter().collect();
            out.push(Variant {
                kind: Kind::Footer,
                detail: format!("cut={n}"),
                screen: v.join("\n"),
                title: same_title(),
            });
        }
    }
    if lines.iter().any(|l| is_prose(l)) {
        for q in QUOTES {
            let v: Vec<String> = lines
                .iter()
                .map(|l| {
                    if is_prose(l) {
                        replace_prose(l, q, width)
                    } else {
                        l.to_string()
                    }
                })
                .collect();
            out.push(Variant {
                kind: Kind::Prose,
                detail: format!("quote={q:?}"),
                screen: v.join("\n"),
                title: same_title(),
            });
        }
    }
    if has_version(screen) {
        for v in VERSIONS {
            out.push(Variant {
                kind: Kind::Version,
                detail: format!("version={v}"),
                screen: with_version(screen, v),
                title: same_title(),
            });
        }
    }
    out
}

/// The screen's lines, trailing blanks removed, trailing blank lines dropped.
pub fn content_lines(screen: &str) -> Vec<&str> {
    let mut v: Vec<&str> = screen.lines().map(str::trim_end).collect();
    while v.last().is_some_and(|l| l.is_empty()) {
        v.pop();
    }
    v
}

/// Where a footer cut may start: after its first word (a pane is never narrower than that),
/// or after its first character when it has no word.
fn first_word_end(line: &[char]) -> usize {
    let Some(start) = line.iter().position(|c| c.is_alphanumeric()) else {
        return 1;
    };
    line[start..]
        .iter()
        .position(|c| c.is_whitespace())
        .map_or(line.len(), |n| start + n)
        .max(1)
}

/// The title with `seg` before its last ` | `-segment, after a leading status glyph.
pub fn title_with(title: &str, seg: &str) -> String {
    if let Some(i) = title.rfind(" | ") {
        return format!("{} | {seg}{}", &title[..i], &title[i..]);
    }
    let t = title.trim_start();
    let glyph_end = t
        .char_indices()
        .find(|&(_, c)| c.is_alphanumeric())
        .map_or(0, |(i, _)| i);
    let (head, rest) = t.split_at(glyph_end);
    format!("{head}{seg} | {rest}")
}

/// Whether a line carries the scripted model's or the capture script's words.
pub fn is_prose(line: &str) -> bool {
    PROSE_MARKS.iter().any(|m| line.contains(m))
}

/// The line's text after its indentation and leading glyph replaced by `quote`, no wider than
/// the pane.
fn replace_prose(line: &str, quote: &str, width: usize) -> String {
    let lead = line.len() - line.trim_start().len();
    let t = line.trim_start();
    let mut keep = lead;
    if let Some((g, _)) = t.split_once(' ') {
        if g.chars().count() == 1 && !g.chars().all(char::is_alphanumeric) {
            keep = lead + g.len() + 1;
        }
    }
    cut(&format!("{}{quote}", &line[..keep]), width)
}

fn version_spans(screen: &str) -> Vec<(usize, usize)> {
    let re = regex::Regex::new(r"(?:\bv|\b)(\d+\.\d+\.\d+)\b").expect("a valid literal regex");
    re.captures_iter(screen)
        .filter_map(|c| c.get(1))
        .map(|m| (m.start(), m.end()))
        .collect()
}

fn has_version(screen: &str) -> bool {
    !version_spans(screen).is_empty()
}

fn with_version(screen: &str, v: &str) -> String {
    let mut out = String::new();
    let mut at = 0;
    for (s, e) in version_spans(screen) {
        out.push_str(&screen[at..s]);
        out.push_str(v);
        at = e;
    }
    out.push_str(&screen[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_get_a_segment_before_the_last() {
        assert_eq!(title_with("⠋ codex", "t"), "⠋ t | codex");
        assert_eq!(
            title_with("[ . ] Action Required | codex", "t"),
            "[ . ] Action Required | t | codex"
        );
        assert_eq!(title_with("codex", "t"), "t | codex");
    }

    #[test]
    fn prose_is_replaced_after_its_glyph() {
        assert_eq!(replace_prose("● Let me think", "Esc", 80), "● Esc");
        assert_eq!(replace_prose("  carefully now", "x", 80), "  x");
        assert_eq!(with_version("Codex (v0.171.0)", "9.9.9"), "Codex (v9.9.9)");
    }
}
