//! Stage one of loading: the manifest file as serde sees it (herdr engine v3 plus our
//! extensions), with source spans kept so that later problems can name a line.

use serde::Deserialize;
use toml::Spanned;

/// A whole manifest file, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawManifest {
    pub id: Spanned<String>,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub min_engine_version: Option<Spanned<i64>>,
    #[serde(default)]
    pub updated_at: Option<String>,
    #[serde(default)]
    pub aliases: Vec<String>,
    #[serde(default)]
    pub rules: Vec<RawRule>,
    // Our extensions.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub mark: Option<Spanned<String>>,
    #[serde(default)]
    pub commands: Vec<String>,
    #[serde(default)]
    pub reports_from: Option<String>,
    #[serde(default)]
    pub self_report: bool,
    #[serde(default)]
    pub identity: Option<RawIdentity>,
    #[serde(default)]
    pub fingerprints: Vec<RawFingerprint>,
}

/// `[identity]`: how the agent's process is recognised.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawIdentity {
    #[serde(default)]
    pub process_names: Vec<String>,
    #[serde(default)]
    pub argv_patterns: Vec<Spanned<String>>,
    #[serde(default)]
    pub package_paths: Vec<String>,
}

/// `[[fingerprints]]`: a region and a gate that name the agent when no process can be seen.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFingerprint {
    pub region: Spanned<String>,
    #[serde(default)]
    pub contains: Vec<Spanned<String>>,
    #[serde(default)]
    pub regex: Vec<Spanned<String>>,
    #[serde(default)]
    pub line_regex: Vec<Spanned<String>>,
    #[serde(default)]
    pub all: Vec<Spanned<RawGate>>,
    #[serde(default)]
    pub any: Vec<Spanned<RawGate>>,
    #[serde(default)]
    pub not: Vec<Spanned<RawGate>>,
}

/// `[[rules]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRule {
    pub id: Spanned<String>,
    pub state: Spanned<String>,
    #[serde(default)]
    pub priority: i64,
    pub region: Spanned<String>,
    #[serde(default)]
    pub visible_idle: bool,
    #[serde(default)]
    pub visible_blocker: bool,
    #[serde(default)]
    pub visible_working: bool,
    #[serde(default)]
    pub skip_state_update: bool,
    #[serde(default)]
    pub contains: Vec<Spanned<String>>,
    #[serde(default)]
    pub regex: Vec<Spanned<String>>,
    #[serde(default)]
    pub line_regex: Vec<Spanned<String>>,
    #[serde(default)]
    pub all: Vec<Spanned<RawGate>>,
    #[serde(default)]
    pub any: Vec<Spanned<RawGate>>,
    #[serde(default)]
    pub not: Vec<Spanned<RawGate>>,
}

/// A nested gate: matchers and further gates.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGate {
    #[serde(default)]
    pub contains: Vec<Spanned<String>>,
    #[serde(default)]
    pub regex: Vec<Spanned<String>>,
    #[serde(default)]
    pub line_regex: Vec<Spanned<String>>,
    #[serde(default)]
    pub all: Vec<Spanned<RawGate>>,
    #[serde(default)]
    pub any: Vec<Spanned<RawGate>>,
    #[serde(default)]
    pub not: Vec<Spanned<RawGate>>,
}

/// The gate fields of a rule, a fingerprint or a nested gate, borrowed for compiling.
pub(crate) struct GateParts<'a> {
    pub contains: &'a [Spanned<String>],
    pub regex: &'a [Spanned<String>],
    pub line_regex: &'a [Spanned<String>],
    pub all: &'a [Spanned<RawGate>],
    pub any: &'a [Spanned<RawGate>],
    pub not: &'a [Spanned<RawGate>],
}

macro_rules! parts {
    ($t:ty) => {
        impl $t {
            pub(crate) fn parts(&self) -> GateParts<'_> {
                GateParts {
                    contains: &self.contains,
                    regex: &self.regex,
                    line_regex: &self.line_regex,
                    all: &self.all,
                    any: &self.any,
                    not: &self.not,
                }
            }
        }
    };
}
parts!(RawGate);
parts!(RawRule);
parts!(RawFingerprint);
