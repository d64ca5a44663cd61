//! Stage two: the compiled, validated manifest the engine runs (regexes built once).

use super::region::Region;
use regex::Regex;
use serde::Serialize;

/// The engine version this build implements (herdr's numbering).
pub const ENGINE_VERSION: i64 = 3;

/// A state a rule can decide (`unknown` is a real verdict, not "no match").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleState {
    /// Ready for input.
    Idle,
    /// Busy on a turn.
    Working,
    /// Waiting for the person's decision.
    Blocked,
    /// Cannot tell (an overlay or viewer hides the agent's state).
    Unknown,
}

impl RuleState {
    /// Parses the manifest word.
    pub fn parse(s: &str) -> Option<RuleState> {
        match s {
            "idle" => Some(RuleState::Idle),
            "working" => Some(RuleState::Working),
            "blocked" => Some(RuleState::Blocked),
            "unknown" => Some(RuleState::Unknown),
            _ => None,
        }
    }

    /// The manifest / JSON word.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleState::Idle => "idle",
            RuleState::Working => "working",
            RuleState::Blocked => "blocked",
            RuleState::Unknown => "unknown",
        }
    }

    /// The shared agent state, `None` for `unknown`.
    pub fn agent_state(self) -> Option<crate::state::AgentState> {
        use crate::state::AgentState;
        match self {
            RuleState::Idle => Some(AgentState::Idle),
            RuleState::Working => Some(AgentState::Working),
            RuleState::Blocked => Some(AgentState::Blocked),
            RuleState::Unknown => None,
        }
    }
}

/// A compiled gate: every listed condition must hold.
#[derive(Clone, Debug, Default)]
pub struct Gate {
    /// Lowercased substrings, all required (case-insensitive).
    pub contains: Vec<String>,
    /// Regexes that must all match the region.
    pub regex: Vec<Regex>,
    /// Regexes that must each match some line of the region.
    pub line_regex: Vec<Regex>,
    /// Gates that must all match.
    pub all: Vec<Gate>,
    /// Gates of which at least one must match (when any are listed).
    pub any: Vec<Gate>,
    /// Gates none of which may match.
    pub not: Vec<Gate>,
}

impl Gate {
    /// Whether this gate or a nested one has `contains` matchers.
    pub fn uses_contains(&self) -> bool {
        !self.contains.is_empty()
            || self
                .all
                .iter()
                .chain(&self.any)
                .chain(&self.not)
                .any(Gate::uses_contains)
    }

    /// Whether the gate holds on a region (`lower` is `text` lowercased).
    pub fn matches(&self, text: &str, lower: &str) -> bool {
        self.contains.iter().all(|c| lower.contains(c.as_str()))
            && self.regex.iter().all(|r| r.is_match(text))
            && self
                .line_regex
                .iter()
                .all(|r| text.split('\n').any(|l| r.is_match(l)))
            && self.all.iter().all(|g| g.matches(text, lower))
            && (self.any.is_empty() || self.any.iter().any(|g| g.matches(text, lower)))
            && !self.not.iter().any(|g| g.matches(text, lower))
    }
}

/// One compiled `[[rules]]` entry.
#[derive(Clone, Debug)]
pub struct Rule {
    /// Rule id.
    pub id: String,
    /// The state it decides.
    pub state: RuleState,
    /// Higher wins; ties go to the earlier rule.
    pub priority: i64,
    /// Where it looks.
    pub region: Region,
    /// herdr's `visible_idle` hint (kept, reported in explain).
    pub visible_idle: bool,
    /// herdr's `visible_blocker` hint.
    pub visible_blocker: bool,
    /// herdr's `visible_working` hint.
    pub visible_working: bool,
    /// When it wins, the pane keeps its previous state.
    pub skip_state_update: bool,
    /// The conditions.
    pub gate: Gate,
}

/// A compiled `[[fingerprints]]` entry.
#[derive(Clone, Debug)]
pub struct Fingerprint {
    /// Where it looks (`osc_title` for title fingerprints).
    pub region: Region,
    /// The conditions.
    pub gate: Gate,
}

/// How the agent is recognised from its process (`[identity]`).
#[derive(Clone, Debug, Default)]
pub struct Identity {
    /// Executable names.
    pub process_names: Vec<String>,
    /// Regexes over the argv joined by spaces.
    pub argv_patterns: Vec<Regex>,
    /// Package path substrings.
    pub package_paths: Vec<String>,
}

/// A compiled manifest.
#[derive(Clone, Debug)]
pub struct Manifest {
    /// Agent id.
    pub id: String,
    /// Manifest version string.
    pub version: Option<String>,
    /// `updated_at` as written.
    pub updated_at: Option<String>,
    /// Other names of the agent.
    pub aliases: Vec<String>,
    /// Display name (extension).
    pub name: Option<String>,
    /// One-glyph mark (extension).
    pub mark: Option<String>,
    /// Commands looked up on PATH for the hint in `rules list` (extension).
    pub commands: Vec<String>,
    /// First agent version that sends status reports (extension).
    pub reports_from: Option<String>,
    /// The agent reports its own state through `THINKTERM_AGENT` (extension).
    pub self_report: bool,
    /// Process identity (extension).
    pub identity: Identity,
    /// Process-less fingerprints (extension).
    pub fingerprints: Vec<Fingerprint>,
    /// The rules, in file order.
    pub rules: Vec<Rule>,
    /// Distinct regions the rules use, so each is cut once per snapshot, and whether any rule
    /// on it has `contains` matchers (which need the lowercase form).
    pub regions: Vec<(Region, bool)>,
    /// The rules' indexes, highest priority first and in file order among equals: the first
    /// that matches is the verdict.
    pub by_priority: Vec<usize>,
}
