//! The catalog: bundled manifests, replaced or extended by the user's override folder, with the
//! lookups the daemon needs (classify, aliases, process identity, fingerprints).

use super::compile::compile;
use super::eval::{self, Evidence, Verdict};
use super::model::{Manifest, RuleState};
use super::{bundled, Snapshot};
use crate::process::identify::{IdentitySpec, IdentityTable};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Where a manifest came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Compiled into the binary.
    Bundled,
    /// A user file in the override folder.
    Override(PathBuf),
}

impl Source {
    /// `bundled` or the override file's path.
    pub fn label(&self) -> String {
        match self {
            Source::Bundled => "bundled".to_string(),
            Source::Override(p) => p.display().to_string(),
        }
    }
}

impl Serialize for Source {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.label())
    }
}

/// How an agent is supported (the S2.3 line).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Support {
    /// Sends status reports from this version on; screen rules before.
    Reports {
        /// First version that reports.
        from: String,
    },
    /// Screen rules only.
    ScreenRules,
    /// Reports itself through `THINKTERM_AGENT`.
    SelfReport,
    /// Listed, not yet detected.
    ListedOnly,
}

impl Support {
    /// The one line shown in `rules list`.
    pub fn line(&self) -> String {
        match self {
            Support::Reports { from } => format!("status reports from {from}, screen rules before"),
            Support::ScreenRules => "screen rules".to_string(),
            Support::SelfReport => "reports itself through THINKTERM_AGENT".to_string(),
            Support::ListedOnly => "listed, not yet detected".to_string(),
        }
    }

    /// Whether screen rules carry this agent (so a PATH hint is useful).
    pub fn uses_screen_rules(&self) -> bool {
        matches!(self, Support::Reports { .. } | Support::ScreenRules)
    }
}

/// What `rules list` and `agents` show about one agent.
#[derive(Clone, Debug, Serialize)]
pub struct AgentInfo {
    /// Agent id.
    pub id: String,
    /// Display name (the id when the manifest gives none).
    pub name: String,
    /// Mark glyph, if any.
    pub mark: Option<String>,
    /// Where its manifest came from.
    pub source: Source,
    /// Manifest version.
    pub version: Option<String>,
    /// Number of state rules.
    pub rule_count: usize,
    /// How it is supported.
    pub support: Support,
    /// Other names.
    pub aliases: Vec<String>,
    /// Commands looked up on PATH for the hint.
    pub commands: Vec<String>,
}

#[derive(Clone)]
struct Entry {
    info: AgentInfo,
    manifest: Manifest,
}

/// A file of the override folder that was rejected whole.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Rejected {
    /// The file.
    pub path: PathBuf,
    /// Every problem, as `file:line: reason`.
    pub reasons: Vec<String>,
}

/// The result of loading bundled manifests plus an override folder.
#[derive(Clone, Debug)]
pub struct LoadReport {
    /// The working catalog (bundled manifests wherever an override was rejected).
    pub catalog: Catalog,
    /// Rejected files, in file-name order.
    pub rejected: Vec<Rejected>,
}

impl LoadReport {
    /// `Detection rules reloaded.` or how many files were rejected.
    pub fn summary(&self) -> String {
        match self.rejected.len() {
            0 => "Detection rules reloaded.".to_string(),
            1 => "Detection rules reloaded; 1 file rejected.".to_string(),
            n => format!("Detection rules reloaded; {n} files rejected."),
        }
    }
}

/// A serializable account of why a snapshot got its state.
#[derive(Clone, Debug, Serialize)]
pub struct Explanation {
    /// The agent id asked for, resolved through aliases when known.
    pub agent: String,
    /// Whether the agent is in the catalog.
    pub known: bool,
    /// The decided state (`unknown` when the agent is unknown or has no state rules).
    pub state: RuleState,
    /// The winning rule, or null.
    pub rule: Option<String>,
    /// True when no rule matched and idle is the fallback.
    pub fallback: bool,
    /// The winning rule keeps the previous state.
    pub skip_state_update: bool,
    /// `bundled` or the override file.
    pub source: Option<Source>,
    /// Per-rule evidence, in file order.
    pub evidence: Vec<Evidence>,
}

/// The set of manifests in force.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    entries: Vec<Entry>,
    /// Which set of manifests this is (see [`Catalog::generation`]).
    generation: u64,
}

/// The last generation given to a catalog (see [`Catalog::generation`]).
static GENERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry").field("id", &self.info.id).finish()
    }
}

fn info_of(m: &Manifest, source: Source) -> AgentInfo {
    let support = if let Some(v) = &m.reports_from {
        Support::Reports { from: v.clone() }
    } else if m.self_report {
        Support::SelfReport
    } else if !m.rules.is_empty() {
        Support::ScreenRules
    } else {
        Support::ListedOnly
    };
    AgentInfo {
        id: m.id.clone(),
        name: m.name.clone().unwrap_or_else(|| m.id.clone()),
        mark: m.mark.clone(),
        source,
        version: m.version.clone(),
        rule_count: m.rules.len(),
        support,
        aliases: m.aliases.clone(),
        commands: m.commands.clone(),
    }
}

impl Catalog {
    /// The bundled manifests only.
    pub fn bundled() -> Catalog {
        let mut c = Catalog::default();
        for (file, text) in bundled::FILES {
            match compile(text, &format!("bundled:{file}")) {
                Ok(m) => c.insert(m, Source::Bundled),
                Err(reasons) => tracing::error!(?reasons, "bundled manifest {file} rejected"),
            }
        }
        c
    }

    /// Bundled manifests plus every `*.toml` in `dir` (file-name order). A file replaces the
    /// manifest whose `id` it has; a new id adds an agent; a bad file is rejected whole. A
    /// missing folder is no error.
    pub fn load(dir: &Path) -> LoadReport {
        let mut catalog = Catalog::bundled();
        let mut rejected = Vec::new();
        let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
            Ok(rd) => rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect(),
            Err(_) => Vec::new(),
        };
        files.sort();
        let mut taken: Vec<(String, PathBuf)> = Vec::new();
        for path in files {
            let shown = path.display().to_string();
            let m = match check_path(&path) {
                Ok(m) => m,
                Err(reasons) => {
                    rejected.push(Rejected { path, reasons });
                    continue;
                }
            };
            if let Some((_, first)) = taken.iter().find(|(id, _)| *id == m.id) {
                let reason = format!(
                    "{shown}:1: id `{}` is already given by {}",
                    m.id,
                    first.display()
                );
                rejected.push(Rejected {
                    path,
                    reasons: vec![reason],
                });
                continue;
            }
            taken.push((m.id.clone(), path.clone()));
            catalog.insert(m, Source::Override(path));
        }
        LoadReport { catalog, rejected }
    }

    /// Adds a manifest, replacing the one with the same id in place. A replacing manifest
    /// keeps what it does not say itself from the one it replaces (name, mark, commands,
    /// `reports_from`, `self_report`, identity, fingerprints; aliases are merged), so a herdr
    /// manifest, which has none of these, still leaves the agent identifiable.
    pub fn insert(&mut self, mut manifest: Manifest, source: Source) {
        self.generation = GENERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if let Some(old) = self.entries.iter().find(|e| e.info.id == manifest.id) {
            inherit(&mut manifest, &old.manifest);
        }
        let entry = Entry {
            info: info_of(&manifest, source),
            manifest,
        };
        match self.entries.iter_mut().find(|e| e.info.id == entry.info.id) {
            Some(slot) => *slot = entry,
            None => self.entries.push(entry),
        }
    }

    /// Which set of manifests this is: two catalogs of one generation (one and its clones)
    /// classify alike, and every change of the manifests makes a generation no catalog had
    /// (an empty catalog is generation 0). A verdict kept for a generation is a verdict of
    /// this catalog.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Every agent, in catalog order.
    pub fn agents(&self) -> impl Iterator<Item = &AgentInfo> {
        self.entries.iter().map(|e| &e.info)
    }

    /// One agent by id.
    pub fn agent(&self, id: &str) -> Option<&AgentInfo> {
        self.entry(id).map(|e| &e.info)
    }

    /// The compiled manifest of an agent id.
    pub fn manifest(&self, id: &str) -> Option<&Manifest> {
        self.entry(id).map(|e| &e.manifest)
    }

    fn entry(&self, id: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.info.id == id)
    }

    /// The id an id or alias names (case-insensitive).
    pub fn resolve(&self, name: &str) -> Option<&str> {
        let hit = |s: &str| s.eq_ignore_ascii_case(name.trim());
        self.entries
            .iter()
            .find(|e| hit(&e.info.id))
            .or_else(|| {
                self.entries
                    .iter()
                    .find(|e| e.info.aliases.iter().any(|a| hit(a)))
            })
            .map(|e| e.info.id.as_str())
    }

    /// Classifies a snapshot for an agent (id or alias). `None` when the agent is unknown or
    /// has no state rules (listed-only and self-reporting agents).
    pub fn classify(&self, agent: &str, snap: &Snapshot<'_>) -> Option<Verdict> {
        let id = self.resolve(agent)?;
        eval::classify(&self.entry(id)?.manifest, snap)
    }

    /// [`Catalog::classify`], with `memo` answering the rules whose region did not change
    /// ([`eval::RuleMemo`]: it must have been used for this agent and this catalog's
    /// generation only).
    pub fn classify_with(
        &self,
        agent: &str,
        snap: &Snapshot<'_>,
        memo: &mut eval::RuleMemo,
    ) -> Option<Verdict> {
        let id = self.resolve(agent)?;
        eval::classify_with(&self.entry(id)?.manifest, snap, memo)
    }

    /// Classifies and explains.
    pub fn explain(&self, agent: &str, snap: &Snapshot<'_>) -> Explanation {
        let entry = self.resolve(agent).and_then(|id| self.entry(id));
        let Some(entry) = entry else {
            return Explanation {
                agent: agent.to_string(),
                known: false,
                state: RuleState::Unknown,
                rule: None,
                fallback: false,
                skip_state_update: false,
                source: None,
                evidence: Vec::new(),
            };
        };
        let (verdict, evidence) = eval::evaluate(&entry.manifest, snap);
        Explanation {
            agent: entry.info.id.clone(),
            known: true,
            state: verdict.as_ref().map_or(RuleState::Unknown, |v| v.state),
            rule: verdict.as_ref().and_then(|v| v.rule.clone()),
            fallback: verdict.as_ref().is_some_and(|v| v.fallback),
            skip_state_update: verdict.as_ref().is_some_and(|v| v.skip_state_update),
            source: Some(entry.info.source.clone()),
            evidence,
        }
    }

    /// The process identity table from the manifests' `[identity]` sections, catalog order.
    pub fn identity_table(&self) -> IdentityTable {
        let specs = self
            .entries
            .iter()
            .map(|e| {
                let i = &e.manifest.identity;
                IdentitySpec {
                    agent: e.info.id.clone(),
                    process_names: i.process_names.clone(),
                    argv_patterns: i.argv_patterns.clone(),
                    package_paths: i.package_paths.clone(),
                }
            })
            .filter(|s| {
                !(s.process_names.is_empty()
                    && s.argv_patterns.is_empty()
                    && s.package_paths.is_empty())
            })
            .collect();
        IdentityTable::new(specs)
    }

    /// The agent a process-less pane shows (screen text and program-sent title), by the
    /// manifests' `[[fingerprints]]`; the first agent in catalog order wins.
    pub fn fingerprint(&self, screen: &str, title: Option<&str>) -> Option<&str> {
        let snap = Snapshot {
            screen,
            osc_title: title,
            osc_progress: None,
        };
        self.entries
            .iter()
            .find(|e| {
                e.manifest.fingerprints.iter().any(|f| {
                    f.region.extract(&snap).is_some_and(|t| {
                        let lower = t.to_lowercase();
                        f.gate.matches(&t, &lower)
                    })
                })
            })
            .map(|e| e.info.id.as_str())
    }
}

fn inherit(m: &mut Manifest, old: &Manifest) {
    if m.name.is_none() {
        m.name = old.name.clone();
    }
    if m.mark.is_none() {
        m.mark = old.mark.clone();
    }
    if m.commands.is_empty() {
        m.commands = old.commands.clone();
    }
    if m.reports_from.is_none() {
        m.reports_from = old.reports_from.clone();
    }
    m.self_report |= old.self_report;
    let i = &m.identity;
    if i.process_names.is_empty() && i.argv_patterns.is_empty() && i.package_paths.is_empty() {
        m.identity = old.identity.clone();
    }
    if m.fingerprints.is_empty() {
        m.fingerprints = old.fingerprints.clone();
    }
    for a in &old.aliases {
        if !m.aliases.contains(a) {
            m.aliases.push(a.clone());
        }
    }
}

/// Reads and compiles one manifest file.
pub fn check_path(path: &Path) -> Result<Manifest, Vec<String>> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| vec![format!("{shown}:1: cannot read: {e}")])?;
    if meta.len() > super::compile::MAX_FILE_BYTES as u64 {
        return Err(vec![format!(
            "{shown}:1: file is {} bytes, the limit is {}",
            meta.len(),
            super::compile::MAX_FILE_BYTES
        )]);
    }
    let bytes = std::fs::read(path).map_err(|e| vec![format!("{shown}:1: cannot read: {e}")])?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let line = e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        vec![format!("{shown}:{line}: not valid UTF-8")]
    })?;
    compile(&text, &shown)
}

/// Validates one manifest file (`rules check`): `Ok` or every reason as `file:line: reason`.
pub fn check_file(path: &Path) -> Result<(), Vec<String>> {
    check_path(path).map(|_| ())
}
