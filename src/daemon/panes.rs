//! What the daemon keeps per pane between notifications: its foreground job and identity, the
//! last screen and verdict, and the pane's state machine ([`Tracker`]). Converts what the
//! probes and parsers found into the tracker's inputs.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::pane::{Foreground as FgInput, PaneEffect, PaneInput, ScreenVerdict, Tracker};
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

/// Converts tracker instants to unix milliseconds.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    at: Instant,
    ms: u64,
}

impl Clock {
    /// Anchored now.
    pub fn new() -> Self {
        Clock {
            at: Instant::now(),
            ms: unix_ms(),
        }
    }

    /// The unix time of an instant.
    pub fn ms(&self, t: Instant) -> u64 {
        match t.checked_duration_since(self.at) {
            Some(d) => self.ms + d.as_millis() as u64,
            None => self
                .ms
                .saturating_sub(self.at.duration_since(t).as_millis() as u64),
        }
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
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
    /// Bytes of output seen (for diagnostics).
    pub output_bytes: u64,
    /// Capture at the next capture round even without new output.
    pub needs_capture: bool,
    /// The last screen captured.
    pub screen: String,
    /// The last verdict of the screen rules (what `explain` shows).
    pub verdict: Option<Verdict>,
    /// The title the program sent itself (None until it sends one).
    pub osc_title: Option<String>,
    /// The last OSC 9;4 progress payload the program sent.
    pub osc_progress: Option<String>,
    /// The pane's state machine.
    pub tracker: Tracker,
}

impl PaneEntry {
    /// A new entry (not yet probed).
    pub fn new(pid: u32, now: Instant) -> Self {
        PaneEntry {
            pid,
            fg: Foreground::default(),
            identity: Identity::Other,
            output_bytes: 0,
            needs_capture: false,
            screen: String::new(),
            verdict: None,
            osc_title: None,
            osc_progress: None,
            tracker: Tracker::new(now),
        }
    }

    /// Reads the foreground job again, identifies it and tells the tracker.
    pub fn probe(
        &mut self,
        now: Instant,
        table: &IdentityTable,
        detection: bool,
    ) -> Vec<PaneEffect> {
        self.fg = foreground::probe(self.pid);
        let identity = if detection {
            table.identify(&self.fg.procs)
        } else {
            Identity::Other
        };
        if identity != self.identity {
            tracing::debug!(pid = self.pid, ?identity, "pane identity");
            self.identity = identity;
            self.verdict = None;
            // S9.4: what the previous program sent never reaches the next one's rules.
            self.osc_title = None;
            self.osc_progress = None;
        }
        let input = FgInput {
            agent: self.agent().map(str::to_string),
            pid: self.fg.tpgid,
            observable: !matches!(self.identity, Identity::ProcessLess { .. }),
            at_shell: self.fg.at_shell,
        };
        self.tracker.on_input(now, PaneInput::Foreground(input))
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

    /// Classifies a freshly captured screen and tells the tracker.
    pub fn classify(&mut self, now: Instant, catalog: &Catalog, screen: String) -> Vec<PaneEffect> {
        self.screen = screen;
        self.reclassify(now, catalog)
    }

    /// Classifies the last screen again (rules or title changed).
    pub fn reclassify(&mut self, now: Instant, catalog: &Catalog) -> Vec<PaneEffect> {
        let Some(agent) = self.agent() else {
            return Vec::new();
        };
        self.verdict = catalog.classify(agent, &self.snapshot());
        let input = self.verdict.as_ref().map(|v| ScreenVerdict {
            state: match v.state {
                RuleState::Unknown => None,
                s => s.agent_state(),
            },
            rule: v.rule.clone(),
            fallback: v.fallback,
            skip_state_update: v.skip_state_update,
        });
        self.tracker.on_input(now, PaneInput::Screen(input))
    }

    /// Output arrived.
    pub fn on_output(&mut self, data: &[u8]) {
        self.output_bytes += data.len() as u64;
    }

    /// The agent the process probe identified.
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
        let st = self.tracker.status();
        let agent = st.agent.as_deref().or(self.agent());
        let rules = agent.map(|a| catalog.explain(a, &self.snapshot()));
        serde_json::json!({
            "agent": agent,
            "state": st.state.map(|s| s.as_str()).unwrap_or("unknown"),
            "source": st.source,
            "explanation_text": rules.as_ref().map(|e| e.render()),
            "explanation": rules,
            "foreground": self.fg.procs,
            "at_shell": self.fg.at_shell,
            "process_less": matches!(self.identity, Identity::ProcessLess { .. }),
        })
    }
}
