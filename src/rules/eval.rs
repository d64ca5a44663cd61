//! The engine: the highest priority rule that matches its region wins, and ties go to the
//! earlier rule; a known agent with no match is idle as a fallback. Rules are tried from the
//! highest priority down and the first match stops the search, so a verdict cuts only the
//! regions of the rules it tried. A pane's classifications go through a [`RuleMemo`], which
//! answers the rules whose region still holds the text they last read.

use super::model::{Gate, Manifest, Rule, RuleState};
use super::region::Region;
use super::Snapshot;
use serde::Serialize;
use std::borrow::Cow;
use std::cell::OnceCell;

/// The outcome of classifying one snapshot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The decided state.
    pub state: RuleState,
    /// The winning rule's id; `None` for the idle fallback.
    pub rule: Option<String>,
    /// True when no rule matched and the state is the idle fallback.
    pub fallback: bool,
    /// The winning rule says: keep the pane's previous state (an overlay hides the agent).
    pub skip_state_update: bool,
}

/// What one rule did on a snapshot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Evidence {
    /// Rule id.
    pub rule: String,
    /// The state it would decide.
    pub state: RuleState,
    /// Its priority.
    pub priority: i64,
    /// Its region's name.
    pub region: String,
    /// False when the region does not exist on this snapshot (no title sent, no prompt box).
    pub region_present: bool,
    /// Whether it matched.
    pub matched: bool,
    /// Whether it decided the verdict.
    pub winner: bool,
    /// For matched rules: the region line(s) that show why (shortened).
    pub excerpt: Option<String>,
}

/// Regions cut from one snapshot as rules ask for them, each once, with its lowercase form
/// when a rule on it needs one: a rule that is never evaluated costs no cut.
struct Cut<'m, 's> {
    manifest: &'m Manifest,
    snap: &'m Snapshot<'s>,
    lines: OnceCell<Vec<&'s str>>,
    /// By the manifest's region index.
    regions: Vec<OnceCell<Option<RegionText<'s>>>>,
}

/// A region's text, and its lowercase form when a rule on it needs one (else empty).
type RegionText<'s> = (Cow<'s, str>, String);

impl<'m, 's> Cut<'m, 's> {
    fn new(manifest: &'m Manifest, snap: &'m Snapshot<'s>) -> Self {
        Cut {
            manifest,
            snap,
            lines: OnceCell::new(),
            regions: manifest.regions.iter().map(|_| OnceCell::new()).collect(),
        }
    }

    fn get(&self, r: Region) -> Option<(&str, &str)> {
        let i = self.manifest.regions.iter().position(|(k, _)| *k == r)?;
        let needs_lower = self.manifest.regions[i].1;
        let slot = self.regions[i].get_or_init(|| {
            let lines = self
                .lines
                .get_or_init(|| super::region::screen_lines(self.snap.screen));
            r.cut(self.snap, lines).map(|t| {
                let lower = if needs_lower {
                    t.to_lowercase()
                } else {
                    String::new()
                };
                (t, lower)
            })
        });
        slot.as_ref().map(|(t, l)| (t.as_ref(), l.as_str()))
    }
}

fn rule_matches(rule: &Rule, cut: &Cut<'_, '_>) -> bool {
    cut.get(rule.region)
        .is_some_and(|(t, l)| rule.gate.matches(t, l))
}

/// The index of the winning rule, if any matched: the first in priority order whose region
/// exists and for which `matches(index, text, lowercase text)` holds.
fn winner(
    m: &Manifest,
    cut: &Cut<'_, '_>,
    mut matches: impl FnMut(usize, &str, &str) -> bool,
) -> Option<usize> {
    m.by_priority.iter().copied().find(|&i| {
        cut.get(m.rules[i].region)
            .is_some_and(|(t, l)| matches(i, t, l))
    })
}

/// Whether rule `i` holds on a region's text and its lowercase form.
fn holds(m: &Manifest) -> impl Fn(usize, &str, &str) -> bool + '_ {
    |i, t, l| m.rules[i].gate.matches(t, l)
}

fn verdict_of(m: &Manifest, best: Option<usize>) -> Verdict {
    match best {
        Some(i) => {
            let r = &m.rules[i];
            Verdict {
                state: r.state,
                rule: Some(r.id.clone()),
                fallback: false,
                skip_state_update: r.skip_state_update,
            }
        }
        None => Verdict {
            state: RuleState::Idle,
            rule: None,
            fallback: true,
            skip_state_update: false,
        },
    }
}

/// Classifies a snapshot with one manifest. `None` when the manifest has no state rules.
pub fn classify(m: &Manifest, snap: &Snapshot<'_>) -> Option<Verdict> {
    if m.rules.is_empty() {
        return None;
    }
    let cut = Cut::new(m, snap);
    Some(verdict_of(m, winner(m, &cut, holds(m))))
}

/// What each rule of one manifest found on the text of its region the last time it was tried,
/// so that a rule whose region did not change since is not matched again: an agent at work
/// changes its spinner line, which is in `whole_recent`, and not its footer or bottom line,
/// whose rules then cost a comparison of a line or two. The verdict is the one
/// [`classify`] gives: a rule's match depends on its region's text alone.
#[derive(Debug, Default)]
pub struct RuleMemo {
    /// By rule index: the region text last matched and whether the rule matched it.
    seen: Vec<Option<(String, bool)>>,
    /// Rules whose answer was taken from here instead of matched again.
    reused: u64,
}

impl RuleMemo {
    /// Forgets everything (for another manifest).
    pub fn clear(&mut self) {
        self.seen.clear();
    }

    /// Rules answered from the memo since it was made.
    pub fn reused(&self) -> u64 {
        self.reused
    }
}

/// [`classify`], with the rules whose region text is the one in `memo` answered from there.
/// `memo` must be this manifest's (see [`RuleMemo::clear`]).
pub fn classify_with(m: &Manifest, snap: &Snapshot<'_>, memo: &mut RuleMemo) -> Option<Verdict> {
    if m.rules.is_empty() {
        return None;
    }
    memo.seen.resize_with(m.rules.len(), || None);
    let cut = Cut::new(m, snap);
    let best = winner(m, &cut, |i, text, lower| match &mut memo.seen[i] {
        Some((last, matched)) if last.as_str() == text => {
            memo.reused += 1;
            *matched
        }
        Some((last, matched)) => {
            *matched = m.rules[i].gate.matches(text, lower);
            last.clear();
            last.push_str(text);
            *matched
        }
        slot @ None => {
            let matched = m.rules[i].gate.matches(text, lower);
            *slot = Some((text.to_string(), matched));
            matched
        }
    });
    Some(verdict_of(m, best))
}

/// Classifies and reports what every rule did.
pub fn evaluate(m: &Manifest, snap: &Snapshot<'_>) -> (Option<Verdict>, Vec<Evidence>) {
    if m.rules.is_empty() {
        return (None, Vec::new());
    }
    let cut = Cut::new(m, snap);
    let best = winner(m, &cut, holds(m));
    let evidence = m
        .rules
        .iter()
        .enumerate()
        .map(|(i, rule)| {
            let region = cut.get(rule.region);
            let matched = rule_matches(rule, &cut);
            Evidence {
                rule: rule.id.clone(),
                state: rule.state,
                priority: rule.priority,
                region: rule.region.to_string(),
                region_present: region.is_some(),
                matched,
                winner: best == Some(i),
                excerpt: if matched {
                    region.map(|(t, l)| excerpt(&rule.gate, t, l))
                } else {
                    None
                },
            }
        })
        .collect();
    (Some(verdict_of(m, best)), evidence)
}

/// Longest excerpt line, in characters.
const EXCERPT_CHARS: usize = 100;

/// The first region line that one of the gate's own matchers hits, else the region's last
/// non-blank line; shortened.
fn excerpt(gate: &Gate, text: &str, _lower: &str) -> String {
    let hit = text.split('\n').find(|line| {
        let low = line.to_lowercase();
        gate.contains.iter().any(|c| low.contains(c.as_str()))
            || gate.line_regex.iter().any(|r| r.is_match(line))
            || gate.regex.iter().any(|r| r.is_match(line))
    });
    let line = hit
        .or_else(|| text.split('\n').rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("")
        .trim();
    shorten(line, EXCERPT_CHARS)
}

/// Cuts a string to `max` characters, marking the cut with `…`.
pub fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}
