//! Builds the `Snapshot` reply (what `agents --json` prints) from the inventory and the panes.

use std::collections::HashMap;

use super::panes::PaneEntry;
use crate::clock::Now;
use crate::ids::{PaneId, WindowId};
use crate::ipc::schema::{
    ClientRow, MachineRow, PaneRow, PaneShows, Reply, StateSource, WindowMark, WindowRow,
    SCHEMA_VERSION,
};
use crate::process::identify::Identity;
use crate::rules::Catalog;
use crate::tmux::inventory::Inventory;

/// What the snapshot says of machines: this computer's name (its rows carry it), the rows of
/// connected machines (already named), and the machines list.
pub struct Machines<'a> {
    /// This computer's name.
    pub local: &'a str,
    /// Connected machines' panes.
    pub panes: Vec<PaneRow>,
    /// Connected machines' windows.
    pub windows: Vec<WindowRow>,
    /// This computer and each connected machine.
    pub list: Vec<MachineRow>,
}

/// What this computer's windows and panes show: each window's mark (its own, or a nested
/// machine's), what a pane running ssh into a connected machine's tmux shows there, and the
/// people's tmux clients.
pub struct Shown<'a> {
    /// A window's mark.
    pub mark: &'a dyn Fn(WindowId) -> WindowMark,
    /// A pane's nested link.
    pub shows: &'a dyn Fn(PaneId) -> Option<PaneShows>,
    /// This server's people's clients.
    pub clients: Vec<ClientRow>,
}

/// The snapshot of everything now.
pub fn build(
    now: Now,
    shown: Shown<'_>,
    windows: Vec<WindowRow>,
    inv: Option<&Inventory>,
    panes: &HashMap<PaneId, PaneEntry>,
    catalog: &Catalog,
    machines: Machines<'_>,
) -> Reply {
    let mut rows = Vec::new();
    if let Some(inv) = inv {
        for p in inv.panes.values() {
            let entry = panes.get(&p.id);
            let st = entry.map(|e| e.tracker.status());
            let agent = st.and_then(|s| s.agent.clone());
            rows.push(PaneRow {
                pane: p.id,
                window: p.window,
                session: p.session,
                session_name: p.session_name.clone(),
                window_index: p.window_index,
                window_name: p.window_name.clone(),
                pane_index: p.index,
                title: shown_title(entry.and_then(|e| e.signals.title()), &p.title),
                active: p.active,
                window_active: p.window_active,
                current_path: p.current_path.clone(),
                current_command: p.current_command.clone(),
                fg_pid: entry.and_then(|e| e.fg.leader()).map(|l| l.pid),
                fg_process: entry.and_then(|e| e.fg_name()),
                fg_argv: entry
                    .and_then(|e| e.fg.leader())
                    .map(|l| l.argv.clone())
                    .unwrap_or_default(),
                process_less: entry
                    .is_some_and(|e| matches!(e.identity, Identity::ProcessLess { .. })),
                agent_name: agent
                    .as_deref()
                    .and_then(|a| catalog.agent(a))
                    .map(|i| i.name.clone())
                    .or(agent.clone()),
                agent_mark: agent
                    .as_deref()
                    .and_then(|a| catalog.agent(a))
                    .and_then(|i| i.mark.clone()),
                agent_version: entry
                    .filter(|_| agent.is_some())
                    .and_then(|e| e.agent_version.clone()),
                unrecognised: agent.is_some()
                    && entry.is_some_and(|e| e.drift.unrecognised().is_some()),
                agent,
                state: st.and_then(|s| s.state),
                unseen_result: st.is_some_and(|s| s.unseen_result),
                source: st.map(|s| s.source).unwrap_or(StateSource::None),
                rule: st.and_then(|s| s.rule.clone()),
                message: st.and_then(|s| s.report.msg.clone()),
                report_title: st.and_then(|s| s.report.title.clone()),
                kind: st.and_then(|s| s.report.kind),
                progress: st.and_then(|s| s.report.progress),
                subtasks: st.map(|s| s.report.subtasks.clone()).unwrap_or_default(),
                since_ms: st.map(|s| now.unix_ms_of(s.since)).unwrap_or(0),
                window_mark: (shown.mark)(p.window),
                machine: Some(machines.local.to_string()),
                shows: (shown.shows)(p.id),
            });
        }
    }
    rows.sort_by(|a, b| {
        (a.session, a.window_index, a.pane_index).cmp(&(b.session, b.window_index, b.pane_index))
    });
    rows.extend(machines.panes);
    let mut windows: Vec<WindowRow> = windows
        .into_iter()
        .map(|mut w| {
            w.machine = Some(machines.local.to_string());
            w
        })
        .collect();
    windows.extend(machines.windows);
    Reply::Snapshot {
        schema: SCHEMA_VERSION,
        panes: rows,
        windows,
        machines: machines.list,
        clients: shown.clients,
    }
}

/// The title to show: what the program sent, else tmux's unless it is only tmux's default (the
/// host name), which says nothing about the pane.
fn shown_title(sent: Option<&str>, tmux_title: &str) -> String {
    if let Some(t) = sent {
        return t.to_string();
    }
    if is_default_title(tmux_title) {
        String::new()
    } else {
        tmux_title.to_string()
    }
}

/// Whether a pane title is only what tmux gives a pane before its program sets one: the host
/// name (whole or up to its first dot).
pub(super) fn is_default_title(tmux_title: &str) -> bool {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let host = HOST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap_or_default()
            .trim()
            .to_string()
    });
    let short = host.split('.').next().unwrap_or(host);
    tmux_title == host || tmux_title == short
}
