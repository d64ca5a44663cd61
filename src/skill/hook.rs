//! `skill hook`: what the `SessionStart` hook prints, which both agents add to the model's
//! context: the pane the agent runs in (`$TMUX_PANE`) and the agents in the other panes, from
//! the daemon; said plainly when there is no daemon or no tmux. It always exits 0 and asks the
//! daemon with a 2 s limit, so that it can never hold up or break an agent's start.

use std::time::Duration;

use crate::ipc::schema::{PaneRow, Reply, Request};
use crate::ipc::Client;

use super::content::SKILL_NAME;

/// How long the hook waits for the daemon.
const ASK_LIMIT: Duration = Duration::from_secs(2);

/// At most this many other agents are listed.
const MAX_LISTED: usize = 20;

/// What the daemon said.
#[derive(Debug)]
pub enum Daemon {
    /// Its panes, and this computer's name among its machines.
    Answered {
        /// Every pane it watches.
        panes: Vec<PaneRow>,
        /// This computer's machine name (a pane on another machine is `NAME:%N`).
        local: Option<String>,
    },
    /// No daemon answers on its socket.
    Absent,
    /// It answered with something else, or too late.
    Failed(String),
}

/// Asks the daemon of the tmux server this runs in (`$TMUX`, or the `-L`/`-S` given).
pub async fn ask(cli: &crate::cli::Cli) -> Daemon {
    let sock = cli.daemon_socket();
    let talk = async {
        let Ok(mut c) = Client::connect(&sock).await else {
            return Daemon::Absent;
        };
        match c.request(&Request::Agents).await {
            Ok(Reply::Snapshot {
                panes, machines, ..
            }) => Daemon::Answered {
                panes,
                local: machines.into_iter().find(|m| m.local).map(|m| m.name),
            },
            Ok(other) => Daemon::Failed(format!("unexpected answer {other:?}")),
            Err(e) => Daemon::Failed(e.to_string()),
        }
    };
    tokio::time::timeout(ASK_LIMIT, talk)
        .await
        .unwrap_or_else(|_| Daemon::Failed(format!("no answer within {ASK_LIMIT:?}")))
}

/// The hook's text for an agent in pane `me` (`$TMUX_PANE`, None outside tmux).
pub fn render(me: Option<&str>, daemon: &Daemon) -> String {
    let mut out = String::new();
    let Some(me) = me.filter(|p| !p.is_empty()) else {
        out.push_str(
            "thinkterm-sidecar: this session does not run inside tmux ($TMUX_PANE is not set), \
             so it cannot see or drive the agents in tmux panes.\n",
        );
        return out;
    };
    let panes = match daemon {
        Daemon::Answered { panes, local } => {
            let is_local = |p: &PaneRow| p.machine.is_none() || p.machine == *local;
            let mine = panes
                .iter()
                .find(|p| is_local(p) && p.pane.to_string() == me);
            match mine {
                Some(p) => out.push_str(&format!(
                    "thinkterm-sidecar: you are in tmux pane {me} (session \"{}\", window {} \"{}\", pane {}).\n",
                    p.session_name, p.window_index, p.window_name, p.pane_index
                )),
                None => out.push_str(&format!("thinkterm-sidecar: you are in tmux pane {me}.\n")),
            }
            let others: Vec<&PaneRow> = panes
                .iter()
                .filter(|p| p.agent.is_some() && !(is_local(p) && p.pane.to_string() == me))
                .collect();
            (others, local.clone())
        }
        Daemon::Absent => {
            out.push_str(&format!(
                "thinkterm-sidecar: you are in tmux pane {me}. No thinkterm-sidecar daemon runs for \
                 this tmux server, so the other agents are not known; the person can start it with \
                 `thinkterm-sidecar run --detach`.\n"
            ));
            return out;
        }
        Daemon::Failed(why) => {
            out.push_str(&format!(
                "thinkterm-sidecar: you are in tmux pane {me}. The thinkterm-sidecar daemon did not \
                 list the other agents ({why}); try `thinkterm-sidecar agents`.\n"
            ));
            return out;
        }
    };
    let (others, local) = panes;
    if others.is_empty() {
        out.push_str("No other agent runs in this tmux server's panes now.\n");
    } else {
        out.push_str(&format!(
            "Agents in the other panes ({} in all; `thinkterm-sidecar agents` lists every pane):\n",
            others.len()
        ));
        for p in others.iter().take(MAX_LISTED) {
            let name = match &p.machine {
                Some(m) if Some(m) != local.as_ref() => format!("{m}:{}", p.pane),
                _ => p.pane.to_string(),
            };
            let state = p.state.map(|s| s.as_str()).unwrap_or("unknown");
            out.push_str(&format!(
                "- {name}: {} {state}, session \"{}\" window {} \"{}\", in {}\n",
                p.agent.as_deref().unwrap_or("-"),
                p.session_name,
                p.window_index,
                p.window_name,
                p.current_path
            ));
        }
        if others.len() > MAX_LISTED {
            out.push_str(&format!("- … and {} more\n", others.len() - MAX_LISTED));
        }
    }
    out.push_str(&format!(
        "To ask another agent something, wait for it and read its answer, use the {SKILL_NAME} skill \
         (thinkterm-sidecar send, wait, read).\n"
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pane: &str, agent: Option<&str>, machine: Option<&str>) -> PaneRow {
        let mut v = serde_json::json!({
            "pane": pane, "window": "@1", "session": "$0", "session_name": "main",
            "window_index": 2, "window_name": "api", "pane_index": 0, "title": "",
            "active": true, "window_active": true, "current_path": "/src/api",
            "current_command": "node", "fg_pid": null, "fg_process": null, "process_less": false,
            "agent": agent, "agent_name": null, "agent_mark": null, "state": "idle",
            "source": "screen_rule", "rule": null, "message": null, "machine": machine,
            "kind": null, "progress": null, "since_ms": 0, "window_mark": "idle",
        });
        if agent.is_none() {
            v["state"] = serde_json::Value::Null;
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn names_the_pane_and_the_other_agents() {
        let d = Daemon::Answered {
            panes: vec![
                row("%3", Some("claude"), Some("here")),
                row("%5", Some("codex"), Some("here")),
                row("%6", None, Some("here")),
                row("%3", Some("claude"), Some("devbox")),
            ],
            local: Some("here".into()),
        };
        let t = render(Some("%3"), &d);
        assert!(t.starts_with("thinkterm-sidecar: you are in tmux pane %3 (session \"main\", window 2 \"api\", pane 0).\n"), "{t}");
        assert!(t.contains("(2 in all;"), "{t}");
        assert!(
            t.contains("- %5: codex idle, session \"main\" window 2 \"api\", in /src/api\n"),
            "{t}"
        );
        assert!(t.contains("- devbox:%3: claude idle"), "{t}");
        assert!(!t.contains("- %3:"), "{t}");
        assert!(!t.contains("%6"), "{t}");
        assert!(t.contains("thinkterm-agents skill"), "{t}");
    }

    #[test]
    fn says_plainly_when_alone_without_a_daemon_or_outside_tmux() {
        let alone = Daemon::Answered {
            panes: vec![row("%3", Some("claude"), None)],
            local: None,
        };
        assert!(render(Some("%3"), &alone).contains("No other agent runs"));
        let t = render(Some("%3"), &Daemon::Absent);
        assert!(
            t.contains("No thinkterm-sidecar daemon runs for this tmux server"),
            "{t}"
        );
        let t = render(None, &Daemon::Absent);
        assert!(t.contains("does not run inside tmux"), "{t}");
        let t = render(Some("%3"), &Daemon::Failed("no answer within 2s".into()));
        assert!(
            t.contains("did not list the other agents (no answer within 2s)"),
            "{t}"
        );
    }
}
