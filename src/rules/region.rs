//! Regions: which part of a pane snapshot a rule looks at, and how each is cut from the screen.
//!
//! Lines are the screen's lines with trailing whitespace removed; trailing blank lines of the
//! screen are dropped first. A region that does not exist on this screen (no prompt box, no
//! title sent yet) is `None`, and a `None` region never matches anything, not even a `not`.

use super::Snapshot;
use std::borrow::Cow;
use std::fmt;

/// A region a rule looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Region {
    /// The whole visible screen.
    WholeRecent,
    /// The last N lines.
    BottomLines(usize),
    /// The last N lines that are not blank.
    BottomNonEmptyLines(usize),
    /// The first N lines that are not blank.
    TopNonEmptyLines(usize),
    /// The lines between the last two horizontal rules (an input box drawn with `───` lines).
    PromptBoxBody,
    /// Everything above the prompt box.
    AbovePromptBox,
    /// The last non-blank line above the prompt box.
    LastNonEmptyAbovePromptBox,
    /// The lines after the last horizontal rule.
    AfterLastHorizontalRule,
    /// From the last line that starts with a prompt marker (`❯`, `›`, `>`, `▶`) to the end.
    AfterLastPromptMarker,
    /// The lines before the last prompt-marker line.
    BeforeLastPromptMarker,
    /// The last prompt-marker line alone.
    LastPromptMarkerLine,
    /// The title the program sent (OSC 0/2); `None` until it sends one.
    OscTitle,
    /// The last OSC 9;4 progress report the program sent (`4;1;50`); `None` until it sends one.
    OscProgress,
}

/// Builds a counted region from its N.
type MakeRegion = fn(usize) -> Region;

/// Lines of a region are limited to this count when given as N.
pub const MAX_REGION_LINES: usize = 10_000;

impl Region {
    /// Parses a manifest region name.
    pub fn parse(s: &str) -> Result<Region, String> {
        let fixed = match s {
            "whole_recent" => Some(Region::WholeRecent),
            "prompt_box_body" => Some(Region::PromptBoxBody),
            "above_prompt_box" => Some(Region::AbovePromptBox),
            "last_non_empty_above_prompt_box" => Some(Region::LastNonEmptyAbovePromptBox),
            "after_last_horizontal_rule" => Some(Region::AfterLastHorizontalRule),
            "after_last_prompt_marker" => Some(Region::AfterLastPromptMarker),
            "before_last_prompt_marker" => Some(Region::BeforeLastPromptMarker),
            "last_prompt_marker_line" => Some(Region::LastPromptMarkerLine),
            "osc_title" => Some(Region::OscTitle),
            "osc_progress" => Some(Region::OscProgress),
            _ => None,
        };
        if let Some(r) = fixed {
            return Ok(r);
        }
        let counted: [(&str, MakeRegion); 3] = [
            ("bottom_lines", Region::BottomLines),
            ("bottom_non_empty_lines", Region::BottomNonEmptyLines),
            ("top_non_empty_lines", Region::TopNonEmptyLines),
        ];
        for (name, make) in counted {
            if let Some(arg) = s.strip_prefix(name).and_then(|r| r.strip_prefix('(')) {
                let n = arg
                    .strip_suffix(')')
                    .and_then(|n| n.trim().parse::<usize>().ok())
                    .filter(|n| (1..=MAX_REGION_LINES).contains(n))
                    .ok_or_else(|| {
                        format!(
                            "region `{s}`: N must be a whole number from 1 to {MAX_REGION_LINES}"
                        )
                    })?;
                return Ok(make(n));
            }
        }
        Err(format!("unknown region `{s}`"))
    }

    /// Cuts this region out of a snapshot.
    pub fn extract(self, snap: &Snapshot<'_>) -> Option<String> {
        self.cut(snap, &screen_lines(snap.screen))
            .map(Cow::into_owned)
    }

    /// Cuts this region out of a snapshot whose screen is already split by [`screen_lines`].
    /// A run of whole lines that the screen holds as they are (no trailing blanks to drop) is
    /// borrowed from it, not copied: most regions are such a run.
    pub fn cut<'s>(self, snap: &Snapshot<'s>, lines: &[&'s str]) -> Option<Cow<'s, str>> {
        match self {
            Region::OscTitle => return snap.osc_title.map(Cow::Borrowed),
            Region::OscProgress => return snap.osc_progress.map(|p| Cow::Owned(p.region_text())),
            _ => {}
        }
        fn non_empty(l: &&&str) -> bool {
            !l.trim().is_empty()
        }
        let joined = |ls: &[&'s str]| joined(snap.screen, ls);
        Some(match self {
            Region::WholeRecent => joined(lines),
            Region::BottomLines(n) => joined(&lines[lines.len().saturating_sub(n)..]),
            Region::BottomNonEmptyLines(n) => {
                let mut v: Vec<&str> = lines
                    .iter()
                    .rev()
                    .filter(non_empty)
                    .take(n)
                    .copied()
                    .collect();
                v.reverse();
                joined(&v)
            }
            Region::TopNonEmptyLines(n) => joined(
                &lines
                    .iter()
                    .filter(non_empty)
                    .take(n)
                    .copied()
                    .collect::<Vec<_>>(),
            ),
            Region::PromptBoxBody => {
                let (top, bottom) = prompt_box(lines)?;
                joined(&lines[top + 1..bottom])
            }
            Region::AbovePromptBox => joined(&lines[..prompt_box(lines)?.0]),
            Region::LastNonEmptyAbovePromptBox => {
                let top = prompt_box(lines)?.0;
                Cow::Borrowed(*lines[..top].iter().rev().find(|l| !l.trim().is_empty())?)
            }
            Region::AfterLastHorizontalRule => {
                let r = lines.iter().rposition(|l| is_horizontal_rule(l))?;
                joined(&lines[r + 1..])
            }
            Region::AfterLastPromptMarker => joined(&lines[last_prompt_marker(lines)?..]),
            Region::BeforeLastPromptMarker => joined(&lines[..last_prompt_marker(lines)?]),
            Region::LastPromptMarkerLine => Cow::Borrowed(lines[last_prompt_marker(lines)?]),
            Region::OscTitle | Region::OscProgress => return None,
        })
    }
}

/// `lines` joined with newlines: borrowed from `screen` when they sit there one after another,
/// each ended by a single `\n` (lines [`screen_lines`] trimmed, or that `\r\n` ended, do not).
fn joined<'s>(screen: &'s str, lines: &[&'s str]) -> Cow<'s, str> {
    let (Some(first), Some(last)) = (lines.first(), lines.last()) else {
        return Cow::Borrowed("");
    };
    let offset = |l: &str| (l.as_ptr() as usize).wrapping_sub(screen.as_ptr() as usize);
    let bytes = screen.as_bytes();
    let in_a_row = lines.windows(2).all(|w| {
        let end = offset(w[0]).wrapping_add(w[0].len());
        bytes.get(end) == Some(&b'\n') && offset(w[1]) == end + 1
    });
    let (start, end) = (offset(first), offset(last).wrapping_add(last.len()));
    match screen.get(start..end).filter(|_| in_a_row) {
        Some(run) => Cow::Borrowed(run),
        None => Cow::Owned(lines.join("\n")),
    }
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Region::WholeRecent => f.write_str("whole_recent"),
            Region::BottomLines(n) => write!(f, "bottom_lines({n})"),
            Region::BottomNonEmptyLines(n) => write!(f, "bottom_non_empty_lines({n})"),
            Region::TopNonEmptyLines(n) => write!(f, "top_non_empty_lines({n})"),
            Region::PromptBoxBody => f.write_str("prompt_box_body"),
            Region::AbovePromptBox => f.write_str("above_prompt_box"),
            Region::LastNonEmptyAbovePromptBox => f.write_str("last_non_empty_above_prompt_box"),
            Region::AfterLastHorizontalRule => f.write_str("after_last_horizontal_rule"),
            Region::AfterLastPromptMarker => f.write_str("after_last_prompt_marker"),
            Region::BeforeLastPromptMarker => f.write_str("before_last_prompt_marker"),
            Region::LastPromptMarkerLine => f.write_str("last_prompt_marker_line"),
            Region::OscTitle => f.write_str("osc_title"),
            Region::OscProgress => f.write_str("osc_progress"),
        }
    }
}

/// The screen's lines, trailing whitespace removed, trailing blank lines dropped.
pub fn screen_lines(screen: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

/// A line drawn only with solid box-drawing rule characters (at least 8 of them).
pub fn is_horizontal_rule(line: &str) -> bool {
    let t = line.trim();
    // The character test first: most lines fail it at their first character.
    t.chars().all(|c| matches!(c, '─' | '━' | '═')) && t.chars().count() >= 8
}

/// The last two horizontal rules: the top and bottom of the input box.
fn prompt_box(lines: &[&str]) -> Option<(usize, usize)> {
    let bottom = lines.iter().rposition(|l| is_horizontal_rule(l))?;
    let top = lines[..bottom]
        .iter()
        .rposition(|l| is_horizontal_rule(l))?;
    Some((top, bottom))
}

/// A line whose first non-blank character is a prompt marker followed by a space or the end.
pub fn is_prompt_marker_line(line: &str) -> bool {
    let mut chars = line.trim_start().chars();
    matches!(chars.next(), Some('❯' | '›' | '>' | '▶')) && chars.next().is_none_or(|c| c == ' ')
}

fn last_prompt_marker(lines: &[&str]) -> Option<usize> {
    lines.iter().rposition(|l| is_prompt_marker_line(l))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_names_are_refused() {
        for name in [
            "whole_recent",
            "bottom_lines(3)",
            "bottom_non_empty_lines(12)",
            "top_non_empty_lines(20)",
            "prompt_box_body",
            "above_prompt_box",
            "last_non_empty_above_prompt_box",
            "after_last_horizontal_rule",
            "after_last_prompt_marker",
            "before_last_prompt_marker",
            "last_prompt_marker_line",
            "osc_title",
            "osc_progress",
        ] {
            assert_eq!(
                Region::parse(name).map(|r| r.to_string()).as_deref(),
                Ok(name)
            );
        }
        assert!(Region::parse("bottom_lines(0)").is_err());
        assert!(Region::parse("bottom_lines(x)").is_err());
        assert!(Region::parse("middle").is_err());
    }

    #[test]
    fn runs_of_whole_lines_are_borrowed_and_the_rest_copied() {
        let snap = |screen| Snapshot {
            screen,
            osc_title: None,
            osc_progress: None,
        };
        let s = snap("top\n────────\n❯ x\n────────\nfoot a\nfoot b\n\n");
        let lines = screen_lines(s.screen);
        let cut = Region::AfterLastHorizontalRule.cut(&s, &lines);
        assert!(
            matches!(cut, Some(Cow::Borrowed("foot a\nfoot b"))),
            "{cut:?}"
        );
        let cut = Region::LastPromptMarkerLine.cut(&s, &lines);
        assert!(matches!(cut, Some(Cow::Borrowed("❯ x"))), "{cut:?}");
        // Trailing blanks and `\r\n` are not in the region: copied without them.
        let s = snap("top  \nfoot a\r\nfoot b\n");
        let lines = screen_lines(s.screen);
        let cut = Region::WholeRecent.cut(&s, &lines);
        assert!(
            matches!(&cut, Some(Cow::Owned(t)) if t == "top\nfoot a\nfoot b"),
            "{cut:?}"
        );
        // Lines that are not next to each other: copied.
        let s = snap("a\n\nb\n");
        let lines = screen_lines(s.screen);
        let cut = Region::BottomNonEmptyLines(2).cut(&s, &lines);
        assert!(
            matches!(&cut, Some(Cow::Owned(t)) if t == "a\nb"),
            "{cut:?}"
        );
        assert_eq!(
            Region::BottomLines(3).cut(&s, &lines).as_deref(),
            Some("a\n\nb")
        );
    }

    #[test]
    fn cuts_follow_the_screen_shape() {
        let screen = "a\n\nb\n────────\n❯ x\n────────\nfoot   \n\n\n";
        let s = Snapshot {
            screen,
            osc_title: None,
            osc_progress: Some(crate::osc::progress::Progress::Normal(5)),
        };
        let cut = |r: &str| Region::parse(r).ok().and_then(|r| r.extract(&s));
        assert_eq!(cut("bottom_lines(2)").as_deref(), Some("────────\nfoot"));
        assert_eq!(
            cut("bottom_non_empty_lines(2)").as_deref(),
            Some("────────\nfoot")
        );
        assert_eq!(cut("top_non_empty_lines(2)").as_deref(), Some("a\nb"));
        assert_eq!(cut("prompt_box_body").as_deref(), Some("❯ x"));
        assert_eq!(cut("above_prompt_box").as_deref(), Some("a\n\nb"));
        assert_eq!(cut("last_non_empty_above_prompt_box").as_deref(), Some("b"));
        assert_eq!(cut("after_last_horizontal_rule").as_deref(), Some("foot"));
        assert_eq!(cut("last_prompt_marker_line").as_deref(), Some("❯ x"));
        assert_eq!(cut("osc_title"), None);
        assert_eq!(cut("osc_progress").as_deref(), Some("4;1;5"));
        let bare = Snapshot {
            screen: "no box",
            ..s
        };
        assert_eq!(Region::PromptBoxBody.extract(&bare), None);
        assert_eq!(Region::AfterLastPromptMarker.extract(&bare), None);
    }
}
