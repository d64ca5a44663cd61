//! `events`: the daemon's state changes as lines or JSON, as they happen.

use crate::ipc::schema::{Reply, Request};

use super::{connect, Cli};

/// `events`.
pub async fn events(cli: &Cli, json: bool) -> anyhow::Result<()> {
    let mut c = connect(cli).await?;
    // This computer's name: its events are printed without it.
    let local = match c.request(&Request::Machines).await {
        Ok(Reply::Machines { machines }) => machines.into_iter().find(|m| m.local).map(|m| m.name),
        _ => None,
    };
    c.send(&Request::Events).await?;
    while let Some(reply) = c.next().await? {
        if let Reply::Machine(m) = &reply {
            if json {
                println!("{}", serde_json::to_string(&reply)?);
            } else if m.reachable {
                println!("# {} is reachable", m.name);
            } else {
                println!(
                    "# {} is unreachable: {}",
                    m.name,
                    m.reason.as_deref().unwrap_or("no answer")
                );
            }
            continue;
        }
        if let Reply::Lagged { dropped } = reply {
            // The stream fell behind: say so, and print what holds now (the snapshot that
            // follows), so that a reader never acts on a silent gap.
            if json {
                println!("{}", serde_json::to_string(&reply)?);
            } else {
                println!("# {dropped} events dropped: this reader was too slow");
            }
            continue;
        }
        if let Reply::Snapshot { .. } = reply {
            if json {
                println!("{}", serde_json::to_string(&reply)?);
            }
            continue;
        }
        if let Reply::Event(e) = reply {
            if json {
                println!("{}", serde_json::to_string(&e)?);
            } else {
                let st = |s: Option<crate::state::AgentState>| {
                    s.map(|s| s.as_str()).unwrap_or("unknown")
                };
                let machine = match &e.machine {
                    Some(m) if local.as_ref() != Some(m) => format!("{m}/"),
                    _ => String::new(),
                };
                println!(
                    "{} {machine}{}:{} {} {} {} -> {}  {}",
                    e.time_ms,
                    e.session_name,
                    e.window_name,
                    e.pane,
                    e.agent.as_deref().unwrap_or("-"),
                    st(e.old),
                    st(e.new),
                    e.message.unwrap_or_default()
                );
            }
        }
    }
    Ok(())
}
