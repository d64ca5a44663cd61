//! `skill setup`: gives Claude Code and Codex a skill that teaches them to drive the other panes
//! (find the other agents, ask one, wait for it, read its answer: `agents`, `send`, `wait`,
//! `read`, `start`) and a `SessionStart` hook (`skill hook`) that tells them which pane they are
//! in and which agents are around. Run only by the person; detection never needs it (S2.1).
//!
//! - [`target`]: where each agent keeps its files.
//! - [`content`]: the skill's text and the hook's command line.
//! - [`json`], [`hooks_json`]: the hook merged into `settings.json` / `hooks.json`, key order
//!   kept; [`codex_trust`] (with [`sha256`]): Codex's record that the hook is trusted, in
//!   `config.toml`, edited keeping the person's text.
//! - [`plan`]: what would change, computed without writing; [`apply`]: doing it, or printing it
//!   (`--dry-run`, with [`diff`]).
//! - [`hook`]: what the hook prints.

pub mod apply;
pub mod codex_trust;
pub mod content;
pub mod diff;
pub mod hook;
pub mod hooks_json;
pub mod json;
pub mod plan;
pub mod sha256;
pub mod target;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use clap::Subcommand;

use target::{Agent, Target};

/// `skill` subcommands.
#[derive(Debug, Subcommand)]
pub enum SkillAction {
    /// Give Claude Code and Codex the skill and the SessionStart hook (merged into their
    /// settings; a copy of each changed file is kept; running it again changes nothing).
    Setup(SetupArgs),
    /// What the SessionStart hook prints: this pane ($TMUX_PANE) and the agents in the others.
    Hook,
}

/// `skill setup` arguments.
#[derive(Debug, clap::Args)]
pub struct SetupArgs {
    /// Remove exactly what setup added (a settings file nothing else changed gets its old bytes
    /// back).
    #[arg(long)]
    pub uninstall: bool,
    /// Print the changes, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Only this agent (default: each whose folder exists: ~/.claude or $CLAUDE_CONFIG_DIR,
    /// ~/.codex or $CODEX_HOME).
    #[arg(long, value_enum)]
    pub agent: Option<Agent>,
}

/// Runs a `skill` subcommand.
pub async fn run(cli: &crate::cli::Cli, action: &SkillAction) -> anyhow::Result<()> {
    match action {
        SkillAction::Setup(args) => setup(args),
        SkillAction::Hook => {
            let me = std::env::var("TMUX_PANE").ok();
            let daemon = hook::ask(cli).await;
            print!("{}", hook::render(me.as_deref(), &daemon));
            Ok(())
        }
    }
}

/// `skill setup`.
pub fn setup(args: &SetupArgs) -> anyhow::Result<()> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| anyhow::anyhow!("HOME is not set: cannot find the agents' folders"))?;
    let bin = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot find this program's path for the hook: {e}"))?;
    let all = Agent::ALL.map(|a| Target::find(a, |k| std::env::var_os(k), &home));
    let (targets, skipped) = choose(args.agent, &all, |p| p.is_dir())?;
    let read = |p: &Path| apply::read_file(p);
    let mut sections = Vec::new();
    for t in &targets {
        let s = if args.uninstall {
            plan::uninstall(t, &bin, &read)?
        } else {
            plan::install(t, &bin, &read)?
        };
        sections.push(s);
    }
    if !args.dry_run {
        for s in &sections {
            apply::apply(s)?;
        }
    }
    print!("{}", apply::describe(&sections, args.dry_run));
    for s in skipped {
        println!("{s}");
    }
    let changed = sections.iter().any(|s| !s.changes.is_empty());
    if args.dry_run {
        println!("Dry run: nothing was written.");
    } else if changed && !args.uninstall {
        println!(
            "Agents get the skill and the hook in the sessions they start from now on \
             (`thinkterm-sidecar skill setup --uninstall` takes them out again)."
        );
    }
    Ok(())
}

/// The agents to set up: the one named, or each whose folder exists; and a line for each left
/// out. Fails when none is named and neither folder exists.
pub fn choose(
    agent: Option<Agent>,
    all: &[Target],
    exists: impl Fn(&Path) -> bool,
) -> anyhow::Result<(Vec<Target>, Vec<String>)> {
    if let Some(a) = agent {
        return Ok((
            all.iter().filter(|t| t.agent == a).cloned().collect(),
            Vec::new(),
        ));
    }
    let (found, missing): (Vec<&Target>, Vec<&Target>) = all.iter().partition(|t| exists(&t.dir));
    if found.is_empty() {
        let dirs: Vec<String> = all.iter().map(|t| t.dir.display().to_string()).collect();
        anyhow::bail!(
            "found neither agent's folder ({}): name one with --agent claude or --agent codex",
            dirs.join(", ")
        );
    }
    let skipped = missing
        .iter()
        .map(|t| {
            format!(
                "{}: left out, {} does not exist (--agent {} sets it up anyway)",
                t.agent.name(),
                t.dir.display(),
                match t.agent {
                    Agent::Claude => "claude",
                    Agent::Codex => "codex",
                }
            )
        })
        .collect();
    Ok((found.into_iter().cloned().collect(), skipped))
}
