//! What the daemon keeps per pane between notifications: its foreground job and identity, and
//! when its state last changed.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::process::foreground::{self, Foreground};
use crate::process::identify::{program_name, Identity, IdentityTable};

/// Unix milliseconds now.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Per-pane state owned by the daemon.
#[derive(Debug)]
pub struct PaneEntry {
    /// The pane's first process.
    pub pid: u32,
    /// The last probe.
    pub fg: Foreground,
    /// What the probe found.
    pub identity: Identity,
    /// Unix ms of the last state change.
    pub since_ms: u64,
    /// Bytes of output seen (for diagnostics).
    pub output_bytes: u64,
}

impl PaneEntry {
    /// A new entry (not yet probed).
    pub fn new(pid: u32) -> Self {
        PaneEntry {
            pid,
            fg: Foreground::default(),
            identity: Identity::Other,
            since_ms: unix_ms(),
            output_bytes: 0,
        }
    }

    /// Reads the foreground job again and identifies it. Returns whether the identity changed.
    pub fn probe(&mut self, table: &IdentityTable, detection: bool) -> bool {
        self.fg = foreground::probe(self.pid);
        let identity = if detection {
            table.identify(&self.fg.procs)
        } else {
            Identity::Other
        };
        let changed = identity != self.identity;
        if changed {
            tracing::debug!(pid = self.pid, ?identity, "pane identity");
            self.identity = identity;
            self.since_ms = unix_ms();
        }
        changed
    }

    /// Output arrived.
    pub fn on_output(&mut self, data: &[u8]) {
        self.output_bytes += data.len() as u64;
    }

    /// The identified agent.
    pub fn agent(&self) -> Option<&str> {
        match &self.identity {
            Identity::Agent { agent, .. } => Some(agent),
            _ => None,
        }
    }

    /// The foreground program's name.
    pub fn fg_name(&self) -> Option<String> {
        self.fg.leader().map(program_name)
    }

    /// A JSON explanation of what is known.
    pub fn explain(&self) -> serde_json::Value {
        serde_json::json!({
            "agent": self.agent(),
            "state": "unknown",
            "foreground": self.fg.procs,
            "at_shell": self.fg.at_shell,
            "process_less": matches!(self.identity, Identity::ProcessLess { .. }),
        })
    }
}
