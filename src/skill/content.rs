//! What `skill setup` writes: the skill (`SKILL.md`, the same text for both agents) and the
//! hook's command line. The skill teaches the pane-driving commands (`agents`, `send`, `wait`,
//! `read`, `start`); the hook runs `thinkterm-sidecar skill hook`.

use std::path::Path;

/// The skill's name (its folder and its frontmatter `name`).
pub const SKILL_NAME: &str = "thinkterm-agents";

/// The skill's description: what the agents list to the model, and what it matches a task
/// against before it reads the rest.
pub const SKILL_DESCRIPTION: &str = "Work with the other AI coding agents running in tmux panes \
beside you (Claude Code, Codex and others) with thinkterm-sidecar - list them and their state, \
send one a prompt, wait until it has finished, read its answer, or start a new one. Use when the \
user asks you to ask, delegate to, check on, wait for or coordinate with another agent or pane.";

/// A line in every file we write, by which `--uninstall` knows it is ours.
pub const MARKER: &str = "Written by `thinkterm-sidecar skill setup`";

/// How long the agent lets the hook run, in seconds (it asks the daemon with a 2 s limit).
pub const HOOK_TIMEOUT_S: u64 = 10;

/// The hook's command line: the binary's path (quoted for a shell when it has to be), then
/// `skill hook`. Both agents run it with a shell.
pub fn hook_command(bin: &Path) -> String {
    format!("{} skill hook", shell_quote(&bin.to_string_lossy()))
}

/// Whether a hook command is one `skill setup` wrote (for any path of the binary): its program
/// is `thinkterm-sidecar` and its arguments are `skill hook`.
pub fn is_our_command(cmd: &str) -> bool {
    let Some((program, rest)) = split_program(cmd.trim()) else {
        return false;
    };
    let base = program.rsplit('/').next().unwrap_or(&program);
    base == "thinkterm-sidecar" && rest.split_whitespace().eq(["skill", "hook"])
}

/// The first word of a command (unquoting one single-quoted word) and the rest.
fn split_program(cmd: &str) -> Option<(String, &str)> {
    if let Some(body) = cmd.strip_prefix('\'') {
        // 'it'\''s' style: glue quoted pieces and escaped quotes until a space.
        let mut word = String::new();
        let mut rest = body;
        loop {
            let end = rest.find('\'')?;
            word.push_str(&rest[..end]);
            rest = &rest[end + 1..];
            if let Some(r) = rest.strip_prefix("\\''") {
                word.push('\'');
                rest = r;
            } else {
                return Some((word, rest));
            }
        }
    }
    let end = cmd.find(char::is_whitespace).unwrap_or(cmd.len());
    Some((cmd[..end].to_string(), &cmd[end..]))
}

/// `s` as one shell word: as it is when it only has safe characters, else single-quoted.
pub fn shell_quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%".contains(&b));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The skill's `SKILL.md`, naming the binary's path for an agent whose PATH lacks it.
pub fn skill_text(bin: &Path) -> String {
    let bin = bin.to_string_lossy();
    format!(
        r#"---
name: {SKILL_NAME}
description: {SKILL_DESCRIPTION}
---

<!-- {MARKER}; `thinkterm-sidecar skill setup --uninstall` removes it. -->

# Other agents in tmux panes

You run inside a tmux pane; its id is in `$TMUX_PANE` (for example `%3`). Other panes may run
other coding agents. `thinkterm-sidecar` watches every pane of the tmux server and can drive
them. If `thinkterm-sidecar` is not on your PATH, run it as `{bin}`.

A pane is named `%N`, `session:window.pane` (for example `main:2.0`), or `MACHINE:%N` for a
pane on a connected machine. States: `working`, `blocked` (waiting for a person: a permission
or a question), `idle`, `error`, `unknown`.

## Find the other agents

```sh
thinkterm-sidecar agents                 # every pane: session, window, pane, process, agent, state
thinkterm-sidecar agents --json          # the same for programs ("panes": pane, agent, state, title…)
thinkterm-sidecar agents --machine NAME  # only the panes of one machine
```

Your own pane is `$TMUX_PANE`: never send to it.

## Ask one and read its answer

```sh
thinkterm-sidecar send %5 --when-idle "Review src/parse.rs for bugs and answer with a short list."
thinkterm-sidecar wait %5 --for done --timeout 900
thinkterm-sidecar read %5 --lines 200
```

- `send PANE TEXT...` types the text literally (it is never read as key names) and then presses
  Enter; `--no-enter` leaves Enter out. `--when-idle` first waits until the pane is idle, so you
  do not type into an agent that is busy; `--timeout SECS` bounds that wait.
- `wait PANE --for STATE` blocks until the pane reaches STATE and prints the final state line
  (`%5 claude idle`). STATE is `idle`, `blocked`, `working`, `done` (it finished its work) or
  `any-change`. Exit status 0: reached; 3: `--timeout` passed; 4: the pane closed.
- `read PANE` prints the pane's visible screen as text with its agent and state; `--lines N`
  adds the last N lines of its history; `--json` gives `{{pane, agent, state, title, screen}}`.
  The screen is the other agent's own interface: its answer sits among its frames and prompts.

The other agent does not see your conversation: make each prompt complete on its own.

## Start another agent

```sh
thinkterm-sidecar start --dir /path/to/repo --name reviewer -- claude
```

It prints the new pane's id (`%12`); `--session S` picks the tmux session. Wait for it to be
ready (`thinkterm-sidecar wait %12 --for idle --timeout 120`) before you send to it.

## When something is in the way

- `wait` timed out: `read` the pane to see why. An agent that is `blocked` waits for a person
  (a permission or a question): tell the user; never answer another agent's permission prompt
  unless the user told you to.
- "no thinkterm-sidecar daemon": the watcher is not running; tell the user
  (`thinkterm-sidecar run --detach` starts it).
- Only drive the panes the user asked you to, or that you started yourself.
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hook_command_quotes_only_paths_that_need_it() {
        assert_eq!(
            hook_command(Path::new("/usr/bin/thinkterm-sidecar")),
            "/usr/bin/thinkterm-sidecar skill hook"
        );
        assert_eq!(
            hook_command(Path::new("/home/a b/it's/thinkterm-sidecar")),
            r"'/home/a b/it'\''s/thinkterm-sidecar' skill hook"
        );
    }

    #[test]
    fn our_commands_are_known_by_program_and_arguments() {
        for ours in [
            "/usr/bin/thinkterm-sidecar skill hook",
            "thinkterm-sidecar skill hook",
            r"'/home/a b/it'\''s/thinkterm-sidecar' skill hook",
            "  /opt/x/thinkterm-sidecar   skill   hook ",
        ] {
            assert!(is_our_command(ours), "{ours}");
        }
        for theirs in [
            "thinkterm-sidecar skill hook --other",
            "echo thinkterm-sidecar skill hook",
            "/usr/bin/thinkterm-sidecar agents",
            "my-thinkterm-sidecar skill hook",
            "'unterminated skill hook",
            "",
        ] {
            assert!(!is_our_command(theirs), "{theirs}");
        }
    }

    #[test]
    fn the_skill_starts_with_its_frontmatter() {
        let t = skill_text(Path::new("/usr/bin/thinkterm-sidecar"));
        let front = format!("---\nname: {SKILL_NAME}\ndescription: {SKILL_DESCRIPTION}\n---\n");
        assert!(t.starts_with(&front), "{t}");
        assert!(t.contains(MARKER));
        assert!(t.contains("run it as `/usr/bin/thinkterm-sidecar`"));
        // One line, no colon-space YAML could take for a mapping inside the value.
        assert!(!SKILL_DESCRIPTION.contains('\n'));
        assert!(!SKILL_DESCRIPTION.contains(": "));
    }
}
