//! What `thinkterm-sidecar doctor` asks the daemon: the facts only the running daemon knows
//! (which process it is, the server it watches and how, the rules it loaded and rejected, what
//! it will do for notifications and sounds, where it logs). Everything here is already in
//! memory: answering reads no file and asks tmux nothing, so the core loop is not held.
//! The rest of `doctor` runs in the client (`src/doctor/`).

use serde_json::json;

use super::core::Daemon;
use crate::ipc::schema::Reply;
use crate::rules::Source;

impl Daemon {
    /// The `doctor` request's answer (`docs/schema.md`, "doctor").
    pub(super) fn doctor(&self) -> Reply {
        let obs = self.link.observer.as_ref();
        let inv = obs.map(|o| o.inventory());
        let overrides: Vec<_> = self
            .rules
            .catalog
            .agents()
            .filter_map(|a| match &a.source {
                Source::Override(p) => Some(json!({ "id": a.id, "path": p })),
                Source::Bundled => None,
            })
            .collect();
        let rejected: Vec<_> = self
            .rules
            .rejected
            .iter()
            .map(|r| json!({ "path": r.path, "reasons": r.reasons }))
            .collect();
        let c = &self.config;
        let notifications_off = if c.sound_disabled_by_env {
            Some("THINKTERM_DISABLE_SOUND is set in the daemon's environment")
        } else if !c.config.system_notifications {
            Some("system_notifications = false in the config")
        } else {
            None
        };
        let value = json!({
            "pid": std::process::id(),
            "version": env!("CARGO_PKG_VERSION"),
            "exe": std::env::current_exe().ok(),
            "server": self.addr.socket,
            "attached": obs.is_some(),
            "server_pid": obs.and_then(|o| o.server_pid()),
            "control_clients": obs.map_or(0, |o| o.connection_count()),
            "streams": self.bus.open_streams(),
            "sessions": inv.map_or(0, |i| i.sessions.len()),
            "panes": inv.map_or(0, |i| i.panes.len()),
            "clients": inv.map_or(0, |i| i.people().count()),
            "focus_events": inv.map(|i| i.focus_events),
            "notifications": {
                "enabled": self.notifier.is_on(),
                "off_because": notifications_off,
                "bus_address": std::env::var("DBUS_SESSION_BUS_ADDRESS").ok(),
            },
            "sound": {
                "enabled": self.sound.enabled(),
                "program": self.sound.program(),
                "off_because": if c.sound_disabled_by_env {
                    Some("THINKTERM_DISABLE_SOUND is set in the daemon's environment")
                } else if !c.config.sound {
                    Some("sound = false in the config")
                } else {
                    None
                },
            },
            "rules": {
                "dir": crate::paths::rules_dir(),
                "agents": self.rules.catalog.agents().count(),
                "overrides": overrides,
                "rejected": rejected,
            },
            "config": { "path": c.path, "warnings": c.warnings },
            "machines": self
                .machines
                .machine_rows(crate::clock::Now::read(), self.started)
                .into_iter()
                .filter(|m| !m.local)
                .map(|m| json!({ "name": m.name, "reachable": m.reachable, "error": m.reason }))
                .collect::<Vec<_>>(),
            "terminal_notifications": inv
                .map(|i| {
                    i.people()
                        .filter_map(|cl| {
                            let route = self.terminal.route_for(cl)?;
                            Some(json!({
                                "client": cl.name,
                                "protocol": format!(
                                    "{}{}",
                                    route.protocol.as_str(),
                                    if route.nested { " (wrapped for the outer tmux)" } else { "" }
                                ),
                            }))
                        })
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default(),
            "unrecognised": self.unrecognised_panes(),
            "log": crate::logging::sink().map(|s| s.describe()),
        });
        Reply::Value { value }
    }
}

impl Daemon {
    /// Panes of a known agent whose rules no longer recognise the screen (the drift alarm),
    /// sorted by pane: the agent, its version when known, and why.
    fn unrecognised_panes(&self) -> Vec<serde_json::Value> {
        let mut out: Vec<_> = self
            .panes
            .iter()
            .filter_map(|(id, p)| {
                let agent = p.tracker.status().agent.clone()?;
                let why = p.drift.unrecognised()?;
                Some((
                    id.0,
                    json!({
                        "pane": id.to_string(),
                        "agent": agent,
                        "version": p.agent_version,
                        "reason": why.to_string(),
                    }),
                ))
            })
            .collect();
        out.sort_by_key(|(id, _)| *id);
        out.into_iter().map(|(_, v)| v).collect()
    }
}
