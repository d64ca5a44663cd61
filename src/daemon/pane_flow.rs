//! How a pane's events flow through the daemon: output and structure from the observer,
//! probe answers, captured screens, flood pauses; each turned into the pane's state machine's
//! inputs, and the state machine's effects into the rollup, the status line and the event bus.

use std::time::{Duration, Instant};

use super::core::Daemon;
use super::flood::FloodAction;
use super::panes::PaneEntry;
use super::prober::{Answer, Probed};
use super::redraw::GateAction;
use super::screen_model::{Checked, CursorState, ScreenModel};
use crate::clock::Now;
use crate::ids::PaneId;
use crate::ipc::schema::{Reply, StateEvent};
use crate::pane::{PaneChange, PaneEffect};
use crate::process::foreground;
use crate::process::identify::program_name;
use crate::rules::drift::{Drift, DriftConfig};
use crate::thread::RollupInput;
use crate::tmux::escape::PaneBytes;
use crate::tmux::observer::{Captured, Observed};

/// A respawned pane's new program is taken to have started this much before its start time
/// says (`/proc` counts it in clock ticks of 10 ms).
const RESPAWN_MARGIN: Duration = Duration::from_millis(20);

impl Daemon {
    /// What the observer saw.
    pub(super) fn on_observed(&mut self, now: Now, o: Observed) {
        match o {
            Observed::Output { pane, data } => {
                let detection = self.config.config.agent_status_detection;
                let size = self.pane_size(pane);
                let Some(p) = self.panes.get_mut(&pane) else {
                    return;
                };
                let out = p.on_output(now, &data, detection);
                let wants = p.wants_capture();
                let modelled = wants && self.config.config.screen_model_check_ms > 0;
                match (&data, modelled) {
                    (PaneBytes::Raw(raw), true) => {
                        if p.model.is_none() {
                            p.model = size.map(|(rows, cols)| ScreenModel::new(rows, cols));
                        }
                        if let Some(m) = &mut p.model {
                            m.feed(raw, out.frame_began, p.sync.is_open());
                        }
                    }
                    // Bytes the model cannot follow (a control client's copy can be paused).
                    _ => p.model = None,
                }
                // The redraw gate pauses a control client's copy; a piped pane has none (its
                // bytes cost tmux one write, and never hold up a capture's reply). The flood
                // gate holds a piped pane's pipe closed instead (`Observer::hold_pipe`).
                let (flood, redraw) = if data.is_piped() {
                    (p.flood.on_output(now.at, data.len(), p.unread()), None)
                } else {
                    let flood = p.flood.on_output(now.at, data.len(), p.unread());
                    let limit = self.config.config.redraw_pause_kib.saturating_mul(1024);
                    let redraw = if p.redraw_only() {
                        p.redraw.on_output(data.len(), true, limit)
                    } else {
                        // Bytes sent before a pause took effect carried a signal: read them all.
                        p.redraw.release()
                    };
                    (flood, redraw)
                };
                if let Some(a) = flood {
                    self.flood_action(pane, a);
                }
                if let Some(a) = redraw {
                    self.redraw_action(pane, a);
                }
                self.on_pane_effects(now, pane, out.effects);
                if out.probe {
                    self.request_probe(now, pane);
                }
                for note in out.notes {
                    self.program_note(now, pane, note);
                }
                if wants {
                    let every = self.model_check_every();
                    if self.panes[&pane].model_serves(now.at, every) {
                        self.captures.want_served(pane, now.at);
                    } else {
                        self.captures.want(pane, now.at);
                    }
                }
            }
            Observed::Structure => self.link.relist_soon(now.at),
            Observed::Clients => self.start_clients(),
            Observed::Title(_) => {}
            Observed::Command(pane) => {
                self.prober.settled(pane);
                self.check_respawn(now, pane);
                // Another program: whatever it writes may matter.
                if let Some(a) = self.panes.get_mut(&pane).and_then(|p| p.flood.release()) {
                    self.flood_action(pane, a);
                }
                if let Some(a) = self.panes.get_mut(&pane).and_then(|p| p.redraw.release()) {
                    self.redraw_action(pane, a);
                }
                self.request_probe(now, pane);
            }
            Observed::Paused(_) => {}
            Observed::Lost(pane) => {
                // Bytes of its pipe were dropped: a sequence may be half open, and the screen
                // may have changed unseen.
                if let Some(p) = self.panes.get_mut(&pane) {
                    p.output_skipped();
                    if let Some(m) = &mut p.model {
                        m.lost();
                    }
                    if p.wants_capture() {
                        self.captures.want(pane, now.at);
                    }
                }
            }
            Observed::Skipped(pane) => {
                // Text left out of a flood: the screen changed unseen (the sequences came).
                if let Some(m) = self.panes.get_mut(&pane).and_then(|p| p.model.as_mut()) {
                    m.lost();
                }
                if self.panes.get(&pane).is_some_and(|p| p.wants_capture()) {
                    self.captures.want(pane, now.at);
                }
            }
            Observed::Continued(pane) => {
                // Output was dropped while paused: look at the screen again (unless a capture
                // round resumed it: its capture is on the way).
                if let Some(p) = self.panes.get_mut(&pane) {
                    p.output_skipped();
                    if let Some(m) = &mut p.model {
                        m.lost();
                    }
                    if !p.redraw.take_resumed() && p.wants_capture() {
                        self.captures.want(pane, now.at);
                    }
                }
            }
            Observed::ServerGone => self.server_gone(now),
        }
    }

    /// A pane's size as the last list showed it, rows and columns.
    pub(super) fn pane_size(&self, pane: PaneId) -> Option<(u16, u16)> {
        let i = self.inventory()?.panes.get(&pane)?;
        let clamp = |n: u32| u16::try_from(n).unwrap_or(u16::MAX);
        Some((clamp(i.height), clamp(i.width)))
    }

    /// A pane whose first process changed (`respawn-pane -k`) is a new pane: what the old
    /// program left (state, reports, identity) goes.
    pub(super) fn check_respawn(&mut self, now: Now, pane: PaneId) {
        let Some(pid) = self
            .inventory()
            .and_then(|i| i.panes.get(&pane))
            .map(|p| p.pid)
        else {
            return;
        };
        if self.panes.get(&pane).is_some_and(|p| p.pid != pid) {
            tracing::debug!(%pane, pid, "pane respawned");
            let old = self.panes.remove(&pane);
            self.captures.forget(pane);
            self.pacing.quick.set(pane, false);
            self.rollup(now, RollupInput::PaneGone(pane));
            self.add_pane(now, pane, pid);
            // What the new program reported before we knew it ran: the bytes that came since
            // it started (a clock tick early: its start is counted in ticks).
            let replay = match (&old, foreground::age(pid)) {
                (Some(o), Some(age)) => now
                    .at
                    .checked_sub(age + RESPAWN_MARGIN)
                    .map_or_else(Vec::new, |since| o.recent.since(since)),
                _ => Vec::new(),
            };
            let detection = self.config.config.agent_status_detection;
            for bytes in replay {
                tracing::debug!(%pane, len = bytes.len(), "a report sent before the respawn was seen");
                let Some(p) = self.panes.get_mut(&pane) else {
                    break;
                };
                // Its notifications were shown already; its states are the new entry's.
                let out = p.on_output(now, &PaneBytes::Raw(bytes), detection);
                self.on_pane_effects(now, pane, out.effects);
            }
            if old.is_some_and(|p| p.flood.is_paused() || p.redraw.is_paused()) {
                // The new program's output is read from its first byte.
                self.flood_action(pane, FloodAction::Resume);
            }
        }
    }

    /// Adds entries for new panes (probing them), drops closed ones, renews respawned ones.
    pub(super) fn sync_panes(&mut self, now: Now) {
        let Some(inv) = self.inventory() else { return };
        let gone: Vec<PaneId> = self
            .panes
            .keys()
            .filter(|id| !inv.panes.contains_key(id))
            .copied()
            .collect();
        let found: Vec<PaneId> = inv.panes.keys().copied().collect();
        for id in gone {
            self.panes.remove(&id);
            self.prober.settled(id);
            self.captures.forget(id);
            self.pacing.quick.set(id, false);
            self.notifier.forget_pane(id);
            self.rollup(now, RollupInput::PaneGone(id));
        }
        for id in found {
            if self.panes.contains_key(&id) {
                self.check_respawn(now, id);
                let size = self.pane_size(id);
                if let (Some(m), Some((rows, cols))) =
                    (self.panes.get_mut(&id).and_then(|p| p.model.as_mut()), size)
                {
                    m.resize(rows, cols);
                }
            } else if let Some(pid) = self
                .inventory()
                .and_then(|i| i.panes.get(&id))
                .map(|p| p.pid)
            {
                self.add_pane(now, id, pid);
            }
        }
    }

    pub(super) fn add_pane(&mut self, now: Now, pane: PaneId, pid: u32) {
        let limit = self.config.config.flood_pause_kib_s.saturating_mul(1024);
        let mut entry = PaneEntry::new(pid, now.at, limit);
        entry.drift = Drift::new(DriftConfig {
            unmatched_for: Duration::from_secs(self.config.config.drift_after_s),
            ..DriftConfig::default()
        });
        self.panes.insert(pane, entry);
        self.request_probe(now, pane);
    }

    /// Asks the probe thread about a pane's foreground.
    pub(super) fn request_probe(&mut self, now: Now, pane: PaneId) {
        if let Some(p) = self.panes.get(&pane) {
            self.prober.request(pane, p.pid, now.at);
        }
    }

    /// What the probe threads sent.
    pub(super) fn on_probe_answer(&mut self, now: Now, answer: Answer) {
        match answer {
            Answer::Probed(p) => self.on_probed(now, p),
            Answer::Versions {
                pane,
                pid,
                versions,
            } => {
                if let Some(p) = self.panes.get_mut(&pane).filter(|p| p.pid == pid) {
                    p.apply_versions(&versions);
                }
            }
        }
    }

    /// A probe's answer.
    fn on_probed(&mut self, now: Now, probed: Probed) {
        self.prober.answered(probed.pane);
        let pane = probed.pane;
        let detection = self.config.config.agent_status_detection;
        let tmux_title = self
            .inventory()
            .and_then(|i| i.panes.get(&pane))
            .map(|i| i.title.clone())
            .filter(|t| !t.is_empty() && !super::snapshot::is_default_title(t));
        let tmux_command = self
            .inventory()
            .and_then(|i| i.panes.get(&pane))
            .map(|i| i.current_command.clone())
            .filter(|c| !c.is_empty());
        let Some(p) = self.panes.get_mut(&pane).filter(|p| p.pid == probed.pid) else {
            return;
        };
        // tmux can name the program of a pane's first process (`respawn-pane 'node x.js'`)
        // before that process has `exec`ed it: ask again. (A job's name in tmux is never ahead of
        // its process, and tmux's name is as old as the last list.)
        match (tmux_command, probed.fg.leader().map(program_name)) {
            (Some(tmux), Some(seen)) if tmux != seen && probed.fg.at_shell => {
                tracing::debug!(%pane, tmux, seen, "the probe saw another program than tmux names");
                self.prober.disagreed(pane, probed.pid, now.at);
            }
            _ => self.prober.settled(pane),
        }
        let before = p.agent().map(str::to_string);
        let fx = p.apply_probe(
            now,
            probed,
            &self.rules.identities,
            detection,
            tmux_title.as_deref(),
        );
        let identified = p.agent().is_some() && p.agent() != before.as_deref();
        // An agent's pipe is read on the fine grid while it draws (`QuickPanes`).
        self.pacing.quick.set(pane, p.wants_capture());
        let release = if p.unread() { None } else { p.flood.release() };
        // No longer an agent whose bytes are only redraws: read them all from now on.
        let redraw = if p.redraw_only() {
            None
        } else {
            p.redraw.release()
        };
        if identified {
            // A newly identified agent: look at its screen now.
            self.captures.want(pane, now.at);
        }
        if let Some(a) = release {
            self.flood_action(pane, a);
        }
        if let Some(a) = redraw {
            self.redraw_action(pane, a);
        }
        self.on_pane_effects(now, pane, fx);
    }

    /// Probes every pane; unless `full` (the rules changed), an idle shell whose job did not
    /// change costs one `stat` read (see [`PaneEntry::unchanged`]).
    pub(super) fn probe_all(&mut self, now: Now, full: bool) {
        let ids: Vec<PaneId> = self.panes.keys().copied().collect();
        for id in ids {
            if full
                || self
                    .panes
                    .get_mut(&id)
                    .is_some_and(|p| !p.unchanged(now.at, true))
            {
                self.request_probe(now, id);
            }
        }
    }

    /// Pauses or resumes our copy of an agent pane's redraws (see [`super::redraw`]). A paused
    /// pane keeps its capture: that capture resumes it.
    pub(super) fn redraw_action(&mut self, pane: PaneId, action: GateAction) {
        let on = action == GateAction::Resume;
        tracing::debug!(%pane, on, "redraw gate: output copy {}", if on { "resumed" } else { "paused" });
        if let Some(obs) = &self.link.observer {
            obs.set_output(pane, on);
        }
        if on {
            if let Some(p) = self.panes.get_mut(&pane) {
                p.output_skipped();
            }
        }
    }

    /// Panes whose pipe is held closed while they flood and that wrote since the last call
    /// count as having written at `at` (the terminal notes' wait for a still window, the flood
    /// gates' look at whether a flood goes on, and each slow tick, which keeps the kernel's
    /// queue of their events short).
    pub(super) fn take_held_writes(&mut self, at: Instant) {
        let wrote = self
            .link
            .observer
            .as_mut()
            .map(|o| o.held_wrote())
            .unwrap_or_default();
        for id in wrote {
            if let Some(p) = self.panes.get_mut(&id) {
                p.wrote_unseen(at);
                p.flood.on_wrote();
            }
        }
    }

    /// Pauses or resumes our copy of a pane's output, or holds its pipe closed and opens it
    /// again (see [`super::flood`]). A pause that cannot be made (a pipe whose terminal cannot
    /// be watched) lets the gate go: the pane is read as before.
    pub(super) fn flood_action(&mut self, pane: PaneId, action: FloodAction) {
        let on = action == FloodAction::Resume;
        tracing::debug!(%pane, on, "flooding pane: output copy {}", if on { "resumed" } else { "paused" });
        let done = match &mut self.link.observer {
            Some(obs) => obs.flood_output(pane, on),
            None => false,
        };
        if !on && !done {
            if let Some(p) = self.panes.get_mut(&pane) {
                p.flood.release();
            }
            return;
        }
        if on {
            // What was skipped may have left a sequence half open.
            if let Some(p) = self.panes.get_mut(&pane) {
                p.output_skipped();
            }
        } else {
            self.captures.forget(pane);
        }
    }

    /// Acts on what a pane's state machine returned.
    pub(super) fn on_pane_effects(&mut self, now: Now, pane: PaneId, fx: Vec<PaneEffect>) {
        for effect in fx {
            match effect {
                PaneEffect::Changed(change) => {
                    self.changed = true;
                    self.rollup_pane(now, pane, change.new.clone());
                    if change.is_transition() {
                        self.emit_event(now, pane, &change);
                    }
                }
                PaneEffect::ProgramExited { pid } => {
                    tracing::debug!(pane = %pane, pid, "program left the pane");
                    // S7.4: working/blocked reports end with their program.
                    if let Some(p) = self.panes.get_mut(&pane) {
                        let fx = p.end_ongoing(now.at);
                        self.on_pane_effects(now, pane, fx);
                    }
                }
            }
        }
    }

    pub(super) fn emit_event(&mut self, now: Now, pane: PaneId, change: &PaneChange) {
        let Some(info) = self.inventory().and_then(|i| i.panes.get(&pane)) else {
            return;
        };
        let new = &change.new;
        let ev = StateEvent {
            time_ms: now.unix_ms_of(new.since),
            pane,
            window: info.window,
            session: info.session,
            session_name: info.session_name.clone(),
            window_name: info.window_name.clone(),
            agent: new.agent.clone().or(change.old.agent.clone()),
            old: change.old.state,
            new: new.state,
            source: new.source,
            rule: new.rule.clone(),
            message: new.report.msg.clone(),
            kind: new.report.kind,
            progress: new.report.progress,
            window_mark: self.shown_mark(info.window),
            machine: Some(self.machines.local_name.clone()),
        };
        tracing::debug!(pane = %pane, old = ?ev.old, new = ?ev.new, source = ?ev.source, "state change");
        self.bus.event(&Reply::Event(ev), true);
    }

    /// A capture round's screens arrived: classify them.
    pub(super) fn on_captured(&mut self, now: Now, screens: Vec<Captured>) {
        let mut captured = Vec::with_capacity(screens.len());
        for Captured {
            pane: id,
            screen,
            title,
            cursor,
        } in screens
        {
            let screen = match screen {
                Ok(s) => s,
                Err(e) => {
                    tracing::debug!(pane = %id, error = %e, "capture failed");
                    continue;
                }
            };
            let Some(p) = self.panes.get_mut(&id) else {
                continue;
            };
            captured.push(id);
            if let Some(t) = title {
                let fx = p.title_read(now.at, &t, super::snapshot::is_default_title(&t));
                self.on_pane_effects(now, id, fx);
            }
            let Some(p) = self.panes.get_mut(&id) else {
                continue;
            };
            if let Some(m) = &mut p.model {
                let cursor = cursor.as_deref().and_then(CursorState::parse);
                let checked = m.check(now.at, &screen, cursor);
                if checked != Checked::Matched {
                    tracing::debug!(pane = %id, ?checked, "the screen model differed from the capture");
                }
            }
            let fx = p.classify(now.at, id, &self.rules.catalog, screen);
            self.on_pane_effects(now, id, fx);
        }
        tracing::trace!(?captured, "captures arrived");
        self.captures.finish(captured);
    }

    /// How long a verified screen model serves looks before a capture checks it.
    pub(super) fn model_check_every(&self) -> Duration {
        Duration::from_millis(self.config.config.screen_model_check_ms)
    }

    /// The panes of a capture round whose verified screen model serves the look: each is
    /// classified now, from its model, and has the capture that checks the model scheduled.
    /// Returns the others, to capture.
    pub(super) fn serve_models(&mut self, now: Now, round: &[PaneId]) -> Vec<PaneId> {
        let every = self.model_check_every();
        let mut rest = Vec::with_capacity(round.len());
        let mut served = Vec::new();
        for &id in round {
            let Some(p) = self.panes.get_mut(&id) else {
                rest.push(id);
                continue;
            };
            let Some(m) = p.model.as_mut().filter(|m| m.serves(now.at, every)) else {
                rest.push(id);
                continue;
            };
            // Inside a synchronized update, the last whole frame; the screen as it is once the
            // hold ends, if the update has not ended by then.
            let held = p.sync.frame_until(now.at);
            let (screen, due) = (m.serve(held.is_some()), m.check_due(every));
            if let Some(at) = held {
                self.captures.want_at(id, at);
            }
            let fx = p.classify(now.at, id, &self.rules.catalog, screen);
            self.on_pane_effects(now, id, fx);
            if let Some(at) = due {
                self.captures.check_at(id, at);
            }
            served.push(id);
        }
        self.captures.served(&served);
        rest
    }
}
