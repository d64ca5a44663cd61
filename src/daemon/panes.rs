//! What the daemon keeps per pane between notifications: its foreground job and identity, and
//! when its state last changed.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::process::foreground::{self, Foreground};
use crate::process::identify::{program_name, Identity, IdentityTable};
use crate::rules::{Catalog, RuleState, Snapshot, Verdict};

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
    /// Capture at the next capture round even without new output.
    pub needs_capture: bool,
    /// The last screen captured.
    pub screen: String,
    /// The last verdict of the screen rules.
    pub verdict: Option<Verdict>,
    /// The title the program sent itself (None until it sends one).
    pub osc_title: Option<String>,
    /// The last OSC 9;4 progress payload the program sent.
    pub osc_progress: Option<String>,
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
            needs_capture: false,
            screen: String::new(),
            verdict: None,
            osc_title: None,
            osc_progress: None,
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
            self.verdict = None;
            // S9.4: what the previous program sent never reaches the next one's rules.
            self.osc_title = None;
            self.osc_progress = None;
        }
        changed
    }

    /// Whether new output should lead to a capture (an agent runs here).
    pub fn wants_capture(&self) -> bool {
        self.agent().is_some()
    }

    /// The snapshot the rules see.
    pub fn snapshot(&self) -> Snapshot<'_> {
        Snapshot {
            screen: &self.screen,
            osc_title: self.osc_title.as_deref(),
            osc_progress: self.osc_progress.as_deref(),
        }
    }

    /// Classifies a freshly captured screen.
    pub fn classify(&mut self, catalog: &Catalog, screen: String) {
        self.screen = screen;
        let Some(agent) = self.agent() else { return };
        let verdict = catalog.classify(agent, &self.snapshot());
        let old = self.verdict.as_ref().map(|v| v.state);
        if let Some(v) = &verdict {
            if v.skip_state_update {
                return;
            }
        }
        if verdict.as_ref().map(|v| v.state) != old {
            self.since_ms = unix_ms();
        }
        self.verdict = verdict;
    }

    /// The state from the screen rules (None: unknown).
    pub fn screen_state(&self) -> Option<crate::state::AgentState> {
        self.verdict.as_ref().and_then(|v| match v.state {
            RuleState::Unknown => None,
            s => s.agent_state(),
        })
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
    pub fn explain(&self, catalog: &Catalog) -> serde_json::Value {
        let rules = self.agent().map(|a| catalog.explain(a, &self.snapshot()));
        serde_json::json!({
            "agent": self.agent(),
            "state": self.screen_state().map(|s| s.as_str()).unwrap_or("unknown"),
            "explanation_text": rules.as_ref().map(|e| e.render()),
            "explanation": rules,
            "foreground": self.fg.procs,
            "at_shell": self.fg.at_shell,
            "process_less": matches!(self.identity, Identity::ProcessLess { .. }),
        })
    }
}
