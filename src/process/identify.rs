//! Which agent a process is, from its name and argv: directly (`claude`), through interpreters
//! and wrappers (`node …/node_modules/@openai/codex/bin/codex.js`, `sh -c`, nix `.foo-wrapped`),
//! and which programs hide the process behind them (ssh, mosh, nested tmux, serial consoles).
//!
//! The name table is data ([`IdentitySpec`]); the rules catalog builds it from the manifests'
//! `[identity]` sections, and [`IdentityTable::builtin`] holds the defaults for the seed's agents.

use regex::Regex;

/// How one agent is recognised from its process.
#[derive(Clone, Debug)]
pub struct IdentitySpec {
    /// The agent's id (the manifest `id`).
    pub agent: String,
    /// Executable names (`comm`, or the last path segment of `argv[0]` or of a script argument).
    pub process_names: Vec<String>,
    /// Regexes matched against the whole argv joined by single spaces.
    pub argv_patterns: Vec<Regex>,
    /// Substrings of a path in argv that identify an installed package
    /// (`node_modules/@openai/codex`).
    pub package_paths: Vec<String>,
}

impl IdentitySpec {
    /// A spec from plain names and package paths (no argv patterns).
    pub fn simple(agent: &str, names: &[&str], packages: &[&str]) -> Self {
        IdentitySpec {
            agent: agent.to_string(),
            process_names: names.iter().map(|s| s.to_string()).collect(),
            argv_patterns: Vec::new(),
            package_paths: packages.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// One process of a pane's foreground job, as read from procfs.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcInfo {
    /// Process id.
    pub pid: u32,
    /// `/proc/PID/comm` (at most 15 bytes, set by the kernel or the program).
    pub comm: String,
    /// `/proc/PID/cmdline`, split at NULs.
    pub argv: Vec<String>,
}

/// What is known about the program in a pane's foreground.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Identity {
    /// A known agent, found in this process.
    Agent {
        /// The agent id.
        agent: String,
        /// The process that matched.
        pid: u32,
    },
    /// A program that hides what runs behind it (ssh, mosh, nested multiplexer, serial tool):
    /// only screen fingerprints and reports can tell what runs there.
    ProcessLess {
        /// The hiding program's name.
        via: String,
    },
    /// Something else (a shell, an editor, `sleep`): no agent.
    Other,
}

/// Programs whose panes show another machine's or another multiplexer's processes.
pub const PROCESS_LESS: &[&str] = &[
    "ssh",
    "mosh-client",
    "mosh",
    "et",
    "etclient",
    "tmux",
    "screen",
    "minicom",
    "picocom",
    "cu",
    "telnet",
    "autossh",
];

/// Interpreters and launchers whose real program is in an argument.
const LAUNCHERS: &[&str] = &[
    "node", "nodejs", "bun", "deno", "python", "python3", "npx", "bunx", "pnpm", "uv", "uvx",
    "env", "sh", "bash", "dash", "zsh", "fish",
];

/// The agent lookup table.
#[derive(Clone, Debug, Default)]
pub struct IdentityTable {
    specs: Vec<IdentitySpec>,
}

impl IdentityTable {
    /// A table from specs; earlier specs win ties.
    pub fn new(specs: Vec<IdentitySpec>) -> Self {
        IdentityTable { specs }
    }

    /// The defaults for the seed's agents (S2), used until manifests provide their own.
    pub fn builtin() -> Self {
        IdentityTable::new(vec![
            IdentitySpec::simple(
                "claude",
                &["claude"],
                &["node_modules/@anthropic-ai/claude-code"],
            ),
            IdentitySpec::simple("codex", &["codex"], &["node_modules/@openai/codex"]),
            IdentitySpec::simple("copilot", &["copilot"], &["node_modules/@github/copilot"]),
            IdentitySpec::simple("cursor", &["cursor-agent", "cursor"], &[]),
            IdentitySpec::simple(
                "pi",
                &["pi"],
                &["node_modules/@mariozechner/pi-coding-agent"],
            ),
            IdentitySpec::simple("opencode", &["opencode"], &["node_modules/opencode-ai"]),
            IdentitySpec::simple(
                "kimi",
                &["kimi", "Kimi", "Kimi Code", "kimi-cli"],
                &["kimi_cli"],
            ),
            IdentitySpec::simple("gemini", &["gemini"], &["node_modules/@google/gemini-cli"]),
            IdentitySpec::simple("soul", &["soul"], &[]),
            IdentitySpec::simple("omp", &["omp"], &[]),
        ])
    }

    /// The specs, in order.
    pub fn specs(&self) -> &[IdentitySpec] {
        &self.specs
    }

    /// Identifies the foreground job: `procs` in order of precedence (the job's leader first,
    /// then its other members and their descendants). The first process that names a known
    /// agent decides; otherwise a process-less program anywhere in the job decides.
    pub fn identify(&self, procs: &[ProcInfo]) -> Identity {
        for p in procs {
            if let Some(agent) = self.match_process(p) {
                return Identity::Agent {
                    agent: agent.to_string(),
                    pid: p.pid,
                };
            }
        }
        for p in procs {
            if let Some(name) = candidate_names(p)
                .into_iter()
                .find(|n| PROCESS_LESS.contains(&n.as_str()))
            {
                return Identity::ProcessLess { via: name };
            }
        }
        Identity::Other
    }

    /// The agent id one process names, if any.
    pub fn match_process(&self, p: &ProcInfo) -> Option<&str> {
        let names = candidate_names(p);
        let joined = p.argv.join(" ");
        for spec in &self.specs {
            if names
                .iter()
                .any(|n| spec.process_names.iter().any(|s| s == n))
            {
                return Some(&spec.agent);
            }
            if !spec.package_paths.is_empty()
                && p.argv
                    .iter()
                    .any(|a| spec.package_paths.iter().any(|pp| a.contains(pp.as_str())))
            {
                return Some(&spec.agent);
            }
            if spec.argv_patterns.iter().any(|re| re.is_match(&joined)) {
                return Some(&spec.agent);
            }
        }
        None
    }
}

/// The name a process goes by: `argv[0]`'s last segment (unwrapped), else comm.
pub fn program_name(p: &ProcInfo) -> String {
    match p.argv.first() {
        // Login shells show as `-bash`.
        Some(a0) if !a0.is_empty() => unwrap_name(basename(a0).trim_start_matches('-')).to_string(),
        _ => unwrap_name(&p.comm).to_string(),
    }
}

/// Names under which a process could be known: comm, argv[0], and when argv[0] is a launcher,
/// its script argument (or for `sh -c`, the first word of the command string).
fn candidate_names(p: &ProcInfo) -> Vec<String> {
    let mut out = vec![unwrap_name(&p.comm).to_string()];
    let Some(a0) = p.argv.first() else { return out };
    let mut name0 = unwrap_name(basename(a0)).to_string();
    // Login shells show as `-bash`.
    if let Some(stripped) = name0.strip_prefix('-') {
        name0 = stripped.to_string();
    }
    out.push(name0.clone());
    if is_launcher(&name0) {
        let mut args = p.argv[1..].iter();
        while let Some(arg) = args.next() {
            if arg == "-c" {
                if let Some(cmd) = args.next() {
                    if let Some(first) = cmd.split_whitespace().next() {
                        out.push(unwrap_name(basename(first)).to_string());
                    }
                }
                break;
            }
            if arg.starts_with('-') {
                continue;
            }
            let b = unwrap_name(basename(arg));
            out.push(b.to_string());
            // `codex.js` → `codex`
            if let Some((stem, _)) = b.rsplit_once('.') {
                out.push(stem.to_string());
            }
            if !is_launcher(b) {
                break;
            }
        }
    }
    out
}

fn is_launcher(name: &str) -> bool {
    LAUNCHERS.contains(&name) || name.starts_with("python3.")
}

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// nix wraps programs as `.foo-wrapped` (sometimes twice).
fn unwrap_name(name: &str) -> &str {
    let mut n = name;
    while let Some(inner) = n.strip_prefix('.').and_then(|s| s.strip_suffix("-wrapped")) {
        n = inner;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc(comm: &str, argv: &[&str]) -> ProcInfo {
        ProcInfo {
            pid: 1,
            comm: comm.into(),
            argv: argv.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn agent(t: &IdentityTable, p: ProcInfo) -> Option<String> {
        match t.identify(&[p]) {
            Identity::Agent { agent, .. } => Some(agent),
            _ => None,
        }
    }

    #[test]
    fn identifies_direct_wrapped_and_interpreted_agents() {
        let t = IdentityTable::builtin();
        assert_eq!(
            agent(&t, proc("claude", &["claude"])).as_deref(),
            Some("claude")
        );
        assert_eq!(
            agent(
                &t,
                proc(
                    "node",
                    &["node", "/x/node_modules/@openai/codex/bin/codex.js"]
                )
            )
            .as_deref(),
            Some("codex")
        );
        assert_eq!(
            agent(
                &t,
                proc("node", &["node", "/tmp/agents/node_modules/.bin/codex"])
            )
            .as_deref(),
            Some("codex")
        );
        assert_eq!(
            agent(&t, proc(".pi-wrapped", &["/nix/store/x/bin/.pi-wrapped"])).as_deref(),
            Some("pi")
        );
        assert_eq!(
            agent(&t, proc("sh", &["sh", "-c", "opencode --foo"])).as_deref(),
            Some("opencode")
        );
        assert_eq!(
            agent(&t, proc("Kimi Code", &["Kimi Code"])).as_deref(),
            Some("kimi")
        );
        assert_eq!(
            agent(&t, proc("bun", &["bun", "x", "--bun", "gemini"])).as_deref(),
            None
        );
        assert_eq!(agent(&t, proc("bash", &["-bash"])), None);
        assert_eq!(agent(&t, proc("sleep", &["sleep", "100"])), None);
        // A file merely named like an agent, edited in vim, is not the agent.
        assert_eq!(agent(&t, proc("vim", &["vim", "codex.md"])), None);
    }

    #[test]
    fn process_less_programs_are_recognised() {
        let t = IdentityTable::builtin();
        assert_eq!(
            t.identify(&[proc("ssh", &["ssh", "host"])]),
            Identity::ProcessLess { via: "ssh".into() }
        );
        assert_eq!(
            t.identify(&[proc("mosh-client", &["mosh-client", "-#", "x"])]),
            Identity::ProcessLess {
                via: "mosh-client".into()
            }
        );
        // A script named ssh runs as `bash /path/ssh`: comm is the script's name.
        assert_eq!(
            t.identify(&[proc("ssh", &["/bin/bash", "/tmp/bin/ssh", "host"])]),
            Identity::ProcessLess { via: "ssh".into() }
        );
        assert_eq!(t.identify(&[proc("bash", &["bash"])]), Identity::Other);
    }
}
