//! Text for the command line: `rules list`, `rules explain ID`, `rules check FILE…` and the
//! human form of an [`Explanation`]. Pure functions over the catalog; the PATH search is
//! separate ([`command_dirs`], [`find_command`]) so callers and tests choose the folders.

use super::catalog::{check_file, AgentInfo, Catalog, Explanation};
use super::eval::shorten;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Folders searched for an agent's command: our PATH, the login shell's PATH (if `login_path`
/// is given, e.g. from `$SHELL -lc 'printf %s "$PATH"'`), then common install folders under
/// `home`. Duplicates removed, order kept.
pub fn command_dirs(
    our_path: Option<&str>,
    login_path: Option<&str>,
    home: Option<&Path>,
) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for p in [our_path, login_path].into_iter().flatten() {
        dirs.extend(std::env::split_paths(p));
    }
    if let Some(h) = home {
        for sub in [
            ".local/bin",
            ".npm-global/bin",
            ".bun/bin",
            ".cargo/bin",
            ".deno/bin",
            ".volta/bin",
            "bin",
            ".opencode/bin",
            ".kimi/bin",
        ] {
            dirs.push(h.join(sub));
        }
    }
    dirs.push(PathBuf::from("/usr/local/bin"));
    let mut out: Vec<PathBuf> = Vec::new();
    for d in dirs {
        if !d.as_os_str().is_empty() && !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

/// Longest wait for the login shell to print its PATH: login files can be slow (version
/// managers rehashing); the PATH hint is not worth a hung command.
const LOGIN_SHELL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// The login shell's PATH (runs `$SHELL -lc 'printf %s "$PATH"'` with a fixed argv), or None
/// when it fails or takes longer than `LOGIN_SHELL_TIMEOUT` (2 s).
pub fn login_shell_path() -> Option<String> {
    use std::io::Read;
    let shell = std::env::var_os("SHELL")?;
    let mut child = std::process::Command::new(shell)
        .args(["-lc", "printf %s \"$PATH\""])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let deadline = std::time::Instant::now() + LOGIN_SHELL_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let mut out = String::new();
                child.stdout.take()?.read_to_string(&mut out).ok()?;
                return status.success().then_some(out);
            }
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// The folders this process would search: [`command_dirs`] from the environment.
pub fn default_command_dirs() -> Vec<PathBuf> {
    let our = std::env::var("PATH").ok();
    let login = login_shell_path();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    command_dirs(our.as_deref(), login.as_deref(), home.as_deref())
}

/// The first of `commands` found as an executable file in `dirs`.
pub fn find_command(commands: &[String], dirs: &[PathBuf]) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    for c in commands {
        for d in dirs {
            let p = d.join(c);
            if std::fs::metadata(&p)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            {
                return Some(p);
            }
        }
    }
    None
}

/// The S2.3 line for one agent, with the PATH hint for screen-rule agents.
pub fn support_line(info: &AgentInfo, dirs: &[PathBuf]) -> String {
    let mut line = info.support.line();
    if info.support.uses_screen_rules() && !info.commands.is_empty() {
        match find_command(&info.commands, dirs) {
            Some(p) => {
                let _ = write!(line, "; {} found at {}", info.commands[0], p.display());
            }
            None => {
                let _ = write!(line, "; {} not found on PATH", info.commands.join(" or "));
            }
        }
    }
    line
}

/// `rules list`: one row per agent (mark, id, name, source, version, rule count, support).
pub fn render_list(catalog: &Catalog, dirs: &[PathBuf]) -> String {
    let mut out = String::new();
    for a in catalog.agents() {
        let _ = writeln!(
            out,
            "{} {:<10} {:<14} {:>2} rules  v{:<14} {}\n    {}",
            a.mark.as_deref().unwrap_or(" "),
            a.id,
            a.name,
            a.rule_count,
            a.version.as_deref().unwrap_or("-"),
            a.source.label(),
            support_line(a, dirs)
        );
    }
    out
}

/// `rules explain ID`: the agent's rules and the override file that would replace them.
/// `None` when the id is unknown.
pub fn render_rules_explain(catalog: &Catalog, name: &str, override_dir: &Path) -> Option<String> {
    let id = catalog.resolve(name)?;
    let info = catalog.agent(id)?;
    let m = catalog.manifest(id)?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {} ({})",
        info.mark.as_deref().unwrap_or(" "),
        info.name,
        info.id
    );
    let _ = writeln!(out, "Supported by: {}", info.support.line());
    let _ = writeln!(
        out,
        "Rules from: {} (version {})",
        info.source.label(),
        info.version.as_deref().unwrap_or("-")
    );
    if !info.aliases.is_empty() {
        let _ = writeln!(out, "Also known as: {}", info.aliases.join(", "));
    }
    if m.rules.is_empty() {
        let _ = writeln!(out, "No screen rules.");
    } else {
        let _ = writeln!(
            out,
            "{} rules (highest priority wins; no match means idle):",
            m.rules.len()
        );
        let mut rules: Vec<_> = m.rules.iter().collect();
        rules.sort_by_key(|r| std::cmp::Reverse(r.priority));
        for r in rules {
            let skip = if r.skip_state_update {
                " (keeps previous state)"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "  {:>5}  {:<8} {:<28} on {}{skip}",
                r.priority,
                r.state.as_str(),
                r.id,
                r.region
            );
        }
    }
    let _ = writeln!(
        out,
        "To replace these rules, put a manifest with id = \"{}\" in {}",
        info.id,
        override_dir.join(format!("{}.toml", info.id)).display()
    );
    Some(out)
}

/// `rules check FILE…`: `(text, all ok)`; the text has `FILE: OK` or every reason.
pub fn render_check(files: &[PathBuf]) -> (String, bool) {
    let mut out = String::new();
    let mut ok = true;
    for f in files {
        match check_file(f) {
            Ok(()) => {
                let _ = writeln!(out, "{}: OK", f.display());
            }
            Err(reasons) => {
                ok = false;
                for r in reasons {
                    let _ = writeln!(out, "{r}");
                }
            }
        }
    }
    (out, ok)
}

/// Most rule rows shown by [`render_explanation`] besides the matched ones.
const MAX_UNMATCHED_SHOWN: usize = 12;

/// The human form of an explanation: fits one screen (matched rules with excerpts first).
pub fn render_explanation(e: &Explanation) -> String {
    let mut out = String::new();
    if !e.known {
        let _ = writeln!(
            out,
            "{}: unknown agent, no rules apply (state unknown)",
            e.agent
        );
        return out;
    }
    let source = e.source.as_ref().map(|s| s.label()).unwrap_or_default();
    let why = match (&e.rule, e.fallback) {
        (Some(r), _) => format!("rule {r}"),
        (None, true) => "no rule matched, idle is the fallback".to_string(),
        (None, false) => "it has no screen rules".to_string(),
    };
    let _ = writeln!(
        out,
        "{}: {} because {} (rules: {source})",
        e.agent,
        e.state.as_str(),
        why
    );
    if e.skip_state_update {
        let _ = writeln!(out, "  the winning rule keeps the pane's previous state");
    }
    for ev in e.evidence.iter().filter(|v| v.matched) {
        let mark = if ev.winner { "=>" } else { "  " };
        let _ = writeln!(
            out,
            "{mark} {:>5} {:<8} {} on {}",
            ev.priority,
            ev.state.as_str(),
            ev.rule,
            ev.region
        );
        if let Some(x) = &ev.excerpt {
            let _ = writeln!(out, "         \"{}\"", shorten(x, 90));
        }
    }
    let unmatched: Vec<_> = e.evidence.iter().filter(|v| !v.matched).collect();
    if !unmatched.is_empty() {
        let _ = writeln!(out, "not matched:");
        for ev in unmatched.iter().take(MAX_UNMATCHED_SHOWN) {
            let absent = if ev.region_present {
                ""
            } else {
                " (region absent)"
            };
            let _ = writeln!(
                out,
                "   {:>5} {:<8} {} on {}{absent}",
                ev.priority,
                ev.state.as_str(),
                ev.rule,
                ev.region
            );
        }
        if unmatched.len() > MAX_UNMATCHED_SHOWN {
            let _ = writeln!(
                out,
                "   … and {} more",
                unmatched.len() - MAX_UNMATCHED_SHOWN
            );
        }
    }
    out
}

impl Explanation {
    /// The human form ([`render_explanation`]).
    pub fn render(&self) -> String {
        render_explanation(self)
    }

    /// The JSON form.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".to_string())
    }
}
