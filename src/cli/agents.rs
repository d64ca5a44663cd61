//! `agents` and `status`: the daemon's snapshot as a table, JSON, or one status-bar line.

use crate::ipc::schema::{PaneRow, Reply, Request};
use crate::ipc::Client;

use super::{connect, Cli};

/// `agents`.
pub async fn agents(
    cli: &Cli,
    json: bool,
    attention: bool,
    machine: Option<&str>,
) -> anyhow::Result<()> {
    let mut c = connect(cli).await?;
    let reply = c.request(&Request::Agents).await?;
    let Reply::Snapshot {
        schema,
        mut panes,
        mut windows,
        machines,
        clients,
    } = reply
    else {
        anyhow::bail!("unexpected reply from the daemon: {reply:?}");
    };
    if let Some(m) = machine {
        if !machines.is_empty() && !machines.iter().any(|r| r.name == m) {
            anyhow::bail!("no machine named {m:?}");
        }
        panes.retain(|p| p.machine.as_deref() == Some(m));
        windows.retain(|w| w.machine.as_deref() == Some(m));
    }
    if attention {
        let mut ws: Vec<_> = windows
            .into_iter()
            .filter(|w| {
                w.mark < crate::ipc::schema::WindowMark::Running
                    || w.mark == crate::ipc::schema::WindowMark::Done
            })
            .collect();
        ws.sort_by_key(|w| (w.mark, std::cmp::Reverse(w.since_ms)));
        if json {
            println!(
                "{}",
                serde_json::to_string_pretty(
                    &serde_json::json!({ "schema": schema, "windows": ws, "machines": machines })
                )?
            );
        } else {
            for w in ws {
                println!(
                    "{:<9} {}:{} {}  {}",
                    w.mark.as_str(),
                    w.session_name,
                    w.window_index,
                    w.window_name,
                    w.message.unwrap_or_default()
                );
            }
        }
        return Ok(());
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "schema": schema, "panes": panes, "windows": windows, "machines": machines,
                "clients": clients
            }))?
        );
    } else {
        // The MACHINE column once there is more than this computer to tell apart.
        let local = machines.iter().find(|m| m.local).map(|m| m.name.as_str());
        print!("{}", table(&panes, machines.len() > 1, local));
        for m in machines.iter().filter(|m| !m.reachable) {
            println!(
                "# {}: unreachable ({})",
                m.name,
                m.reason.as_deref().unwrap_or("no answer")
            );
        }
    }
    Ok(())
}

fn table(panes: &[PaneRow], machines: bool, local: Option<&str>) -> String {
    let head = format!(
        "{:<16} {:<20} {:<5} {:<14} {:<10} {:<8}\n",
        "SESSION", "WINDOW", "PANE", "PROCESS", "AGENT", "STATE"
    );
    let mut out = if machines {
        format!("{:<12} {head}", "MACHINE")
    } else {
        head
    };
    for p in panes {
        if machines {
            out.push_str(&format!(
                "{:<12} ",
                trunc(p.machine.as_deref().unwrap_or("-"), 12)
            ));
        }
        let window = format!("{}:{}", p.window_index, p.window_name);
        let process = if p.process_less {
            format!("{} (remote)", p.fg_process.clone().unwrap_or_default())
        } else {
            p.fg_process
                .clone()
                .unwrap_or_else(|| p.current_command.clone())
        };
        out.push_str(&format!(
            "{:<16} {:<20} {:<5} {:<14} {:<10} {:<8}\n",
            trunc(&p.session_name, 16),
            trunc(&window, 20),
            p.pane.to_string(),
            trunc(&process, 14),
            p.agent.as_deref().unwrap_or("-"),
            state_cell(p),
        ));
    }
    for p in panes.iter().filter(|p| p.unrecognised) {
        let name = match p.machine.as_deref() {
            Some(m) if Some(m) != local => format!("{m}:{}", p.pane),
            _ => p.pane.to_string(),
        };
        out.push_str(&format!(
            "# {name}: * unrecognised, its rules do not match the screen (`thinkterm-sidecar explain {name}`)\n"
        ));
    }
    out
}

/// The STATE cell: the state, with `*` when the drift alarm says the rules no longer recognise
/// the screen (the state then comes from the fallback).
fn state_cell(p: &PaneRow) -> String {
    let state = p.state.map(|s| s.as_str()).unwrap_or("unknown");
    if p.unrecognised {
        format!("{state}*")
    } else {
        state.to_string()
    }
}

fn trunc(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// `status`: prints one line; prints nothing (and succeeds) when no daemon runs, so a status
/// bar stays clean.
pub async fn status(cli: &Cli, format: &str) -> anyhow::Result<()> {
    use crate::ipc::schema::WindowMark;
    let Ok(mut c) = Client::connect(&cli.daemon_socket()).await else {
        return Ok(());
    };
    let Reply::Snapshot { windows, .. } = c.request(&Request::Agents).await? else {
        return Ok(());
    };
    let count = |m: WindowMark| windows.iter().filter(|w| w.mark == m).count().to_string();
    let summary = crate::thread::icon::summary(windows.iter().map(|w| w.mark));
    let out = format
        .replace("{error}", &count(WindowMark::Error))
        .replace("{attention}", &count(WindowMark::Attention))
        .replace("{running}", &count(WindowMark::Running))
        .replace("{done}", &count(WindowMark::Done))
        .replace("{idle}", &count(WindowMark::Idle))
        .replace("{summary}", &summary);
    println!("{out}");
    Ok(())
}
