//! Turning a manifest file into a [`Manifest`]: parse (stage one, `raw`), then validate
//! and compile, collecting every problem as `file:line: reason`.

use super::model::{Fingerprint, Gate, Identity, Manifest, Rule, RuleState, ENGINE_VERSION};
use super::raw::{GateParts, RawManifest};
use super::region::Region;
use regex::Regex;
use std::ops::Range;
use toml::Spanned;

/// Largest manifest file accepted.
pub const MAX_FILE_BYTES: usize = 256 * 1024;
/// Most rules in one manifest.
pub const MAX_RULES: usize = 128;
/// Most gates (each rule's own plus nested ones) in one manifest.
pub const MAX_GATES: usize = 512;
/// Most matchers (strings in `contains`/`regex`/`line_regex`) in one manifest.
pub const MAX_MATCHERS: usize = 1024;
/// Most matchers directly in one gate.
pub const MAX_MATCHERS_PER_GATE: usize = 32;
/// Longest matcher, in characters.
pub const MAX_MATCHER_CHARS: usize = 512;
/// Deepest gate nesting (a rule's own gate is depth 1).
pub const MAX_GATE_DEPTH: usize = 8;

/// Compiles a manifest's text; `file` names it in the reasons.
pub fn compile(source: &str, file: &str) -> Result<Manifest, Vec<String>> {
    if source.len() > MAX_FILE_BYTES {
        return Err(vec![format!(
            "{file}:1: file is {} bytes, the limit is {MAX_FILE_BYTES}",
            source.len()
        )]);
    }
    let raw: RawManifest = match toml::from_str(source) {
        Ok(r) => r,
        Err(e) => {
            let line = e.span().map(|s| line_of(source, s.start)).unwrap_or(1);
            return Err(vec![format!("{file}:{line}: {}", e.message().trim())]);
        }
    };
    let mut c = Compiler {
        source,
        file,
        errors: Vec::new(),
        gates: 0,
        matchers: 0,
    };
    let m = c.manifest(raw);
    if c.errors.is_empty() {
        Ok(m)
    } else {
        Err(c.errors)
    }
}

/// 1-based line of a byte offset.
fn line_of(source: &str, offset: usize) -> usize {
    let end = offset.min(source.len());
    source.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

struct Compiler<'a> {
    source: &'a str,
    file: &'a str,
    errors: Vec<String>,
    gates: usize,
    matchers: usize,
}

impl Compiler<'_> {
    fn err(&mut self, span: Range<usize>, reason: impl std::fmt::Display) {
        let line = line_of(self.source, span.start);
        self.errors.push(format!("{}:{line}: {reason}", self.file));
    }

    fn manifest(&mut self, raw: RawManifest) -> Manifest {
        let id = raw.id.get_ref().trim().to_string();
        if id.is_empty() || id.chars().any(|c| c.is_whitespace() || c.is_control()) {
            self.err(raw.id.span(), "id must be a non-empty word without spaces");
        }
        if let Some(v) = &raw.min_engine_version {
            if *v.get_ref() > ENGINE_VERSION {
                self.err(
                    v.span(),
                    format!(
                        "needs engine version {}, this engine is {ENGINE_VERSION}",
                        v.get_ref()
                    ),
                );
            }
        }
        if let Some(m) = &raw.mark {
            let n = m.get_ref().chars().count();
            if n == 0 || n > 4 {
                self.err(m.span(), "mark must be one glyph");
            }
        }
        if raw.rules.len() > MAX_RULES {
            let span = raw.rules[MAX_RULES].id.span();
            self.err(
                span,
                format!("{} rules, the limit is {MAX_RULES}", raw.rules.len()),
            );
        }
        let mut rules = Vec::with_capacity(raw.rules.len());
        let mut seen: Vec<String> = Vec::new();
        for r in &raw.rules {
            let rid = r.id.get_ref().clone();
            if seen.contains(&rid) {
                self.err(r.id.span(), format!("duplicate rule id `{rid}`"));
            }
            seen.push(rid.clone());
            let state = RuleState::parse(r.state.get_ref());
            if state.is_none() {
                self.err(
                    r.state.span(),
                    format!(
                        "rule `{rid}`: unknown state `{}` (idle|working|blocked|unknown)",
                        r.state.get_ref()
                    ),
                );
            }
            let region = self.region(&r.region);
            let parts = r.parts();
            if is_empty(&parts) {
                self.err(r.id.span(), format!("rule `{rid}` has no matchers"));
            }
            let gate = self.gate(parts, 1, r.id.span());
            if let (Some(state), Some(region)) = (state, region) {
                rules.push(Rule {
                    id: rid,
                    state,
                    priority: r.priority,
                    region,
                    visible_idle: r.visible_idle,
                    visible_blocker: r.visible_blocker,
                    visible_working: r.visible_working,
                    skip_state_update: r.skip_state_update,
                    gate,
                });
            }
        }
        let mut fingerprints = Vec::new();
        for f in &raw.fingerprints {
            let region = self.region(&f.region);
            let parts = f.parts();
            if is_empty(&parts) {
                self.err(f.region.span(), "fingerprint has no matchers");
            }
            let gate = self.gate(parts, 1, f.region.span());
            if let Some(region) = region {
                fingerprints.push(Fingerprint { region, gate });
            }
        }
        let identity = match &raw.identity {
            None => Identity::default(),
            Some(i) => Identity {
                process_names: i.process_names.clone(),
                argv_patterns: i
                    .argv_patterns
                    .iter()
                    .filter_map(|p| self.regex(p))
                    .collect(),
                package_paths: i.package_paths.clone(),
            },
        };
        let mut regions: Vec<(Region, bool)> = Vec::new();
        for r in &rules {
            let lower = r.gate.uses_contains();
            match regions.iter_mut().find(|(k, _)| *k == r.region) {
                Some(slot) => slot.1 |= lower,
                None => regions.push((r.region, lower)),
            }
        }
        let mut by_priority: Vec<usize> = (0..rules.len()).collect();
        // Stable: equal priorities keep their file order (ties go to the earlier rule).
        by_priority.sort_by_key(|&i| std::cmp::Reverse(rules[i].priority));
        Manifest {
            id,
            version: raw.version,
            updated_at: raw.updated_at,
            aliases: raw.aliases,
            name: raw.name,
            mark: raw.mark.map(|m| m.into_inner()),
            commands: raw.commands,
            reports_from: raw.reports_from,
            self_report: raw.self_report,
            identity,
            fingerprints,
            rules,
            regions,
            by_priority,
        }
    }

    fn region(&mut self, r: &Spanned<String>) -> Option<Region> {
        match Region::parse(r.get_ref()) {
            Ok(region) => Some(region),
            Err(e) => {
                self.err(r.span(), e);
                None
            }
        }
    }

    fn gate(&mut self, p: GateParts<'_>, depth: usize, span: Range<usize>) -> Gate {
        self.gates += 1;
        if self.gates == MAX_GATES + 1 {
            self.err(
                span.clone(),
                format!("more than {MAX_GATES} gates in the file"),
            );
        }
        if depth > MAX_GATE_DEPTH {
            self.err(
                span.clone(),
                format!("gates nested deeper than {MAX_GATE_DEPTH}"),
            );
        }
        let n = p.contains.len() + p.regex.len() + p.line_regex.len();
        if n > MAX_MATCHERS_PER_GATE {
            self.err(
                span,
                format!("{n} matchers in one gate, the limit is {MAX_MATCHERS_PER_GATE}"),
            );
        }
        let before = self.matchers;
        self.matchers += n;
        if before <= MAX_MATCHERS && self.matchers > MAX_MATCHERS {
            let at = p.contains.iter().chain(p.regex).chain(p.line_regex).next();
            if let Some(at) = at {
                self.err(
                    at.span(),
                    format!("more than {MAX_MATCHERS} matchers in the file"),
                );
            }
        }
        for m in p.contains.iter().chain(p.regex).chain(p.line_regex) {
            let len = m.get_ref().chars().count();
            if len > MAX_MATCHER_CHARS {
                self.err(
                    m.span(),
                    format!("matcher is {len} characters, the limit is {MAX_MATCHER_CHARS}"),
                );
            } else if m.get_ref().is_empty() {
                self.err(m.span(), "empty matcher");
            }
        }
        let nested = |list: &[Spanned<super::raw::RawGate>], this: &mut Self| -> Vec<Gate> {
            list.iter()
                .map(|g| {
                    if is_empty(&g.get_ref().parts()) {
                        this.err(g.span(), "empty gate");
                    }
                    this.gate(g.get_ref().parts(), depth + 1, g.span())
                })
                .collect()
        };
        Gate {
            contains: p
                .contains
                .iter()
                .map(|c| c.get_ref().to_lowercase())
                .collect(),
            regex: p.regex.iter().filter_map(|r| self.regex(r)).collect(),
            line_regex: p.line_regex.iter().filter_map(|r| self.regex(r)).collect(),
            all: nested(p.all, self),
            any: nested(p.any, self),
            not: nested(p.not, self),
        }
    }

    fn regex(&mut self, r: &Spanned<String>) -> Option<Regex> {
        if r.get_ref().chars().count() > MAX_MATCHER_CHARS {
            return None;
        }
        match regex::RegexBuilder::new(r.get_ref())
            .size_limit(1 << 20)
            .build()
        {
            Ok(re) => Some(re),
            Err(e) => {
                let msg = e.to_string();
                let last = msg
                    .lines()
                    .last()
                    .unwrap_or("invalid regex")
                    .trim()
                    .to_string();
                self.err(r.span(), format!("bad regex `{}`: {last}", r.get_ref()));
                None
            }
        }
    }
}

fn is_empty(p: &GateParts<'_>) -> bool {
    p.contains.is_empty()
        && p.regex.is_empty()
        && p.line_regex.is_empty()
        && p.all.is_empty()
        && p.any.is_empty()
        && p.not.is_empty()
}
