//! The drift alarm: a known agent whose screen the rules no longer recognise. Agents change
//! their screens with each release; when that breaks our rules, the fallback (idle) decides in
//! silence. This detector, fed with each classification of one pane, says when that pane is
//! `unrecognised`:
//!
//! - no rule of its manifest matches for [`DriftConfig::unmatched_for`] while its screen keeps
//!   changing ([`DriftConfig::min_changes`] times or more within that time); or
//! - the states its rules decide flip faster than real agents do: more than
//!   [`DriftConfig::max_flips`] state changes within [`DriftConfig::flip_window`]. A screen no
//!   rule matches is no state here (the idle fallback decided it): a look that caught a frame
//!   half drawn, between two working frames, is not two flips; a layout the rules lost is
//!   what the first cause watches.
//!
//! It clears once rules match again, without flipping, for [`DriftConfig::clear_after`].
//! Pure and clock-injected: the daemon feeds it from the place verdicts are made and reads
//! [`Drift::unrecognised`]; it decides no state and changes none.

use super::RuleState;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// When a pane counts as unrecognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriftConfig {
    /// How long no rule may match a changing screen.
    pub unmatched_for: Duration,
    /// How many screen changes within the last `unmatched_for` make "keeps changing".
    pub min_changes: u32,
    /// State changes allowed within [`DriftConfig::flip_window`].
    pub max_flips: usize,
    /// The window in which flips are counted.
    pub flip_window: Duration,
    /// How long rules must match, calmly, before the mark goes.
    pub clear_after: Duration,
}

impl Default for DriftConfig {
    /// 30 s unmatched with 4 changes; more than 10 state changes in 15 s; 10 s to clear.
    ///
    /// Real agents change state at human pace: a turn starts, a prompt waits for a key, a turn
    /// ends. 30 s leaves a person time to open and leave a menu no rule knows (`/config`,
    /// `/resume`) before the pane is flagged.
    fn default() -> Self {
        DriftConfig {
            unmatched_for: Duration::from_secs(30),
            min_changes: 4,
            max_flips: 10,
            flip_window: Duration::from_secs(15),
            clear_after: Duration::from_secs(10),
        }
    }
}

/// Why a pane is unrecognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DriftReason {
    /// No rule matched while the screen changed.
    Unmatched {
        /// Seconds without a matching rule.
        secs: u64,
        /// Screen changes in the last `unmatched_for`.
        changes: u32,
    },
    /// The verdict flipped too often.
    Flapping {
        /// State changes within the window.
        flips: usize,
        /// The window, in seconds.
        secs: u64,
    },
}

impl std::fmt::Display for DriftReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DriftReason::Unmatched { secs, changes } => write!(
                f,
                "no rule matched for {secs} s while the screen kept changing ({changes} times)"
            ),
            DriftReason::Flapping { flips, secs } => {
                write!(f, "the state changed {flips} times in {secs} s")
            }
        }
    }
}

/// One classification of the pane, as the detector needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observation {
    /// The screen or title differs from the last classification's.
    pub changed: bool,
    /// No rule matched: the idle fallback decided.
    pub fallback: bool,
    /// The decided state (`None` when the winning rule keeps the previous state).
    pub state: Option<RuleState>,
}

/// What an observation changed about the mark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DriftChange {
    /// The pane became unrecognised.
    Raised(DriftReason),
    /// The pane is recognised again.
    Cleared,
}

/// Most flips or changes remembered (the thresholds never need more).
const MAX_KEPT: usize = 64;

/// The drift detector of one pane (of one agent: reset it when the agent changes).
#[derive(Clone, Debug)]
pub struct Drift {
    cfg: DriftConfig,
    /// Since when no rule matched.
    unmatched: Option<Instant>,
    /// When the screen changed while no rule matched, oldest first.
    changes: VecDeque<Instant>,
    /// Since when rules match (set while marked, to time the clearing).
    matched_since: Option<Instant>,
    /// The last decided state.
    last_state: Option<RuleState>,
    /// When the state changed, oldest first.
    flips: VecDeque<Instant>,
    /// The mark, if raised.
    reason: Option<DriftReason>,
    /// The last observation at which a cause held.
    cause_seen: Option<Instant>,
}

impl Drift {
    /// A detector with these thresholds.
    pub fn new(cfg: DriftConfig) -> Self {
        Drift {
            cfg,
            unmatched: None,
            changes: VecDeque::new(),
            matched_since: None,
            last_state: None,
            flips: VecDeque::new(),
            reason: None,
            cause_seen: None,
        }
    }

    /// Why the pane is unrecognised, if it is.
    pub fn unrecognised(&self) -> Option<DriftReason> {
        self.reason
    }

    /// Forgets everything (another agent, or none, runs in the pane now).
    pub fn reset(&mut self) {
        *self = Drift::new(self.cfg);
    }

    /// Takes one classification made at `now`; says when the mark is raised or cleared.
    pub fn observe(&mut self, now: Instant, obs: Observation) -> Option<DriftChange> {
        if let Some(s) = obs.state.filter(|_| !obs.fallback) {
            if self.last_state.is_some_and(|l| l != s) {
                if self.flips.len() == MAX_KEPT {
                    self.flips.pop_front();
                }
                self.flips.push_back(now);
            }
            self.last_state = Some(s);
        }
        while self
            .flips
            .front()
            .is_some_and(|t| now.duration_since(*t) > self.cfg.flip_window)
        {
            self.flips.pop_front();
        }
        if obs.fallback {
            self.unmatched.get_or_insert(now);
            if obs.changed {
                if self.changes.len() == MAX_KEPT {
                    self.changes.pop_front();
                }
                self.changes.push_back(now);
            }
            while self
                .changes
                .front()
                .is_some_and(|t| now.duration_since(*t) > self.cfg.unmatched_for)
            {
                self.changes.pop_front();
            }
            self.matched_since = None;
        } else {
            self.unmatched = None;
            self.changes.clear();
            self.matched_since.get_or_insert(now);
        }
        let cause = self.cause(now);
        if cause.is_some() {
            self.cause_seen = Some(now);
        }
        match (self.reason, cause) {
            (None, Some(r)) => {
                self.reason = Some(r);
                Some(DriftChange::Raised(r))
            }
            (Some(_), Some(r)) => {
                self.reason = Some(r);
                None
            }
            (Some(_), None) if self.calm(now) => {
                self.reason = None;
                Some(DriftChange::Cleared)
            }
            _ => None,
        }
    }

    /// What would raise the mark now.
    fn cause(&self, now: Instant) -> Option<DriftReason> {
        if self.flips.len() > self.cfg.max_flips {
            return Some(DriftReason::Flapping {
                flips: self.flips.len(),
                secs: self.cfg.flip_window.as_secs(),
            });
        }
        let long = now.duration_since(self.unmatched?);
        let changes = u32::try_from(self.changes.len()).unwrap_or(u32::MAX);
        (long >= self.cfg.unmatched_for && changes >= self.cfg.min_changes).then_some(
            DriftReason::Unmatched {
                secs: long.as_secs(),
                changes,
            },
        )
    }

    /// Rules match, and have for `clear_after`, and no cause held for as long.
    fn calm(&self, now: Instant) -> bool {
        let long_ago =
            |t: Option<Instant>| t.is_some_and(|t| now.duration_since(t) >= self.cfg.clear_after);
        long_ago(self.matched_since) && (self.cause_seen.is_none() || long_ago(self.cause_seen))
    }
}

impl Default for Drift {
    fn default() -> Self {
        Drift::new(DriftConfig::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(changed: bool, fallback: bool, state: RuleState) -> Observation {
        Observation {
            changed,
            fallback,
            state: Some(state),
        }
    }

    const IDLE: RuleState = RuleState::Idle;
    const WORK: RuleState = RuleState::Working;

    #[test]
    fn a_changing_screen_no_rule_matches_is_flagged_after_the_window() {
        let t0 = Instant::now();
        let mut d = Drift::default();
        let s = |n: u64| t0 + Duration::from_secs(n);
        for n in 0..30 {
            assert_eq!(d.observe(s(n), obs(true, true, IDLE)), None, "at {n} s");
        }
        let got = d.observe(s(30), obs(true, true, IDLE));
        assert_eq!(
            got,
            Some(DriftChange::Raised(DriftReason::Unmatched {
                secs: 30,
                changes: 31
            }))
        );
        assert!(d.unrecognised().is_some());
        assert_eq!(
            d.unrecognised().map(|r| r.to_string()).as_deref(),
            Some("no rule matched for 30 s while the screen kept changing (31 times)")
        );
    }

    #[test]
    fn a_still_screen_without_a_rule_is_not_flagged() {
        let t0 = Instant::now();
        let mut d = Drift::default();
        d.observe(t0, obs(true, true, IDLE));
        for n in 1..200 {
            // Title or rules reloaded: classified again, nothing changed on screen.
            let at = t0 + Duration::from_secs(n);
            assert_eq!(d.observe(at, obs(n % 50 == 0, true, IDLE)), None);
        }
        assert_eq!(d.unrecognised(), None);
    }

    #[test]
    fn one_matching_rule_restarts_the_window() {
        let t0 = Instant::now();
        let mut d = Drift::default();
        let s = |n: u64| t0 + Duration::from_secs(n);
        for n in 0..25 {
            d.observe(s(n), obs(true, true, IDLE));
        }
        d.observe(s(25), obs(true, false, IDLE));
        for n in 26..50 {
            assert_eq!(d.observe(s(n), obs(true, true, IDLE)), None, "at {n} s");
        }
        assert!(d.observe(s(56), obs(true, true, IDLE)).is_some());
    }

    #[test]
    fn the_mark_clears_after_rules_match_calmly() {
        let t0 = Instant::now();
        let mut d = Drift::default();
        let s = |n: u64| t0 + Duration::from_secs(n);
        for n in 0..=30 {
            d.observe(s(n), obs(true, true, IDLE));
        }
        assert!(d.unrecognised().is_some());
        // Matching again: the mark holds for clear_after, then goes once.
        assert_eq!(d.observe(s(31), obs(true, false, WORK)), None);
        assert_eq!(d.observe(s(40), obs(true, false, WORK)), None);
        assert_eq!(
            d.observe(s(41), obs(true, false, WORK)),
            Some(DriftChange::Cleared)
        );
        assert_eq!(d.observe(s(42), obs(true, false, WORK)), None);
        // A fallback in between restarts the clearing.
        for n in 43..=73 {
            d.observe(s(n), obs(true, true, IDLE));
        }
        assert!(d.unrecognised().is_some());
        d.observe(s(74), obs(true, false, IDLE));
        d.observe(s(80), obs(true, true, IDLE));
        assert!(d.observe(s(86), obs(true, false, IDLE)).is_none());
        assert!(d.unrecognised().is_some());
    }

    #[test]
    fn flipping_faster_than_agents_do_is_flagged_and_clears_when_it_stops() {
        let t0 = Instant::now();
        let mut d = Drift::default();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut raised = None;
        for i in 0..12u64 {
            let st = if i % 2 == 0 { WORK } else { IDLE };
            if let Some(c) = d.observe(ms(i * 500), obs(true, false, st)) {
                raised = Some((i, c));
            }
        }
        assert_eq!(
            raised,
            Some((
                11,
                DriftChange::Raised(DriftReason::Flapping {
                    flips: 11,
                    secs: 15
                })
            ))
        );
        // Calm: the flips age out of the window, then the mark waits clear_after more.
        assert_eq!(d.observe(ms(14_000), obs(false, false, IDLE)), None);
        assert_eq!(d.observe(ms(20_600), obs(false, false, IDLE)), None);
        assert!(d.unrecognised().is_some());
        assert_eq!(
            d.observe(ms(24_000), obs(false, false, IDLE)),
            Some(DriftChange::Cleared)
        );
    }

    /// Found in the scale run: a replayed Kimi Code pane, whose frames the replay cut, was
    /// flagged (11 changes in 15 s) while it went through a real prompt: working, a half-drawn
    /// frame no rule matched, working again counted as two flips each time.
    #[test]
    fn a_half_drawn_frame_between_two_of_one_state_is_not_a_flip() {
        let t0 = Instant::now();
        let mut d = Drift::default();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        for i in 0..30u64 {
            let o = if i % 2 == 0 {
                obs(true, false, WORK)
            } else {
                obs(true, true, IDLE)
            };
            assert_eq!(d.observe(ms(i * 500), o), None, "step {i}");
        }
        assert_eq!(d.unrecognised(), None);
        // The same pace between two states its rules decide is flapping.
        let mut raised = false;
        for i in 30..45u64 {
            let st = if i % 2 == 0 { WORK } else { IDLE };
            raised |= d.observe(ms(i * 500), obs(true, false, st)).is_some();
        }
        assert!(raised);
    }

    #[test]
    fn human_paced_state_changes_are_not_flapping() {
        let t0 = Instant::now();
        let mut d = Drift::default();
        let states = [IDLE, WORK, RuleState::Blocked, WORK];
        for i in 0..400u64 {
            let at = t0 + Duration::from_millis(i * 1600);
            let st = states[(i % 4) as usize];
            assert_eq!(d.observe(at, obs(true, false, st)), None, "step {i}");
        }
    }

    #[test]
    fn skip_state_verdicts_do_not_count_as_flips_and_reset_forgets() {
        let t0 = Instant::now();
        let mut d = Drift::default();
        for i in 0..100u64 {
            let at = t0 + Duration::from_millis(i * 100);
            let o = Observation {
                changed: true,
                fallback: false,
                state: if i % 2 == 0 { None } else { Some(WORK) },
            };
            assert_eq!(d.observe(at, o), None);
        }
        for n in 0..=30 {
            d.observe(t0 + Duration::from_secs(20 + n), obs(true, true, IDLE));
        }
        assert!(d.unrecognised().is_some());
        d.reset();
        assert_eq!(d.unrecognised(), None);
    }
}
