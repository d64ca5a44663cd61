//! What the daemon keeps per pane between notifications: its first process and foreground job,
//! its identity and version, the last screen and verdict, the drift alarm on those verdicts, its
//! escape-sequence signals and the pane's state machine ([`Tracker`]). Converts what the probes and parsers found into the tracker's inputs.
//! No I/O but the cheap look ([`PaneEntry::unchanged`]): full probes are the
//! [`super::prober`]'s, captures the [`super::capture`] scheduler's.

use std::time::Instant;

use super::flood::FloodGate;
use super::prober::Probed;
use super::recent::RecentSignals;
use super::redraw::RedrawGate;
use super::screen_model::ScreenModel;
use super::sync_update::SyncUpdate;
use super::verdict_memo::VerdictMemo;
use crate::clock::Now;
use crate::ids::PaneId;
use crate::osc::progress::Progress;
use crate::osc::records::{RecordState, Records};
use crate::osc::user_var::UserVarOutcome;
use crate::osc::{PaneSignals, ProgramNotification, PromptMark, Signal};
use crate::pane::{
    ForegroundInput, NativeProgress, PaneEffect, PaneInput, ProgressState, ReportSummary,
    ScreenVerdict, Tracker, UserVarReport,
};
use crate::process::foreground::{Foreground, Look};
use crate::process::identify::{program_name, Identity, IdentityTable};
use crate::process::look_files::LookFiles;
use crate::rules::drift::Drift;
use crate::rules::{Catalog, RuleState, Snapshot, Verdict};
use crate::state::Subtask;
use crate::tmux::escape::PaneBytes;

#[path = "pane_look.rs"]
mod look;

/// Per-pane state owned by the daemon.
#[derive(Debug)]
pub struct PaneEntry {
    /// The pane's first process.
    pub pid: u32,
    /// The last probe.
    pub fg: Foreground,
    /// What the probe found.
    pub identity: Identity,
    /// Bytes of output seen, as tmux sent them (escaped; for diagnostics).
    pub output_bytes: u64,
    /// When output was last read (tmux is then drawing it in the clients that show the pane).
    pub last_output: Option<Instant>,
    /// The last screen captured.
    pub screen: String,
    /// The last verdict of the screen rules (what `explain` shows).
    pub verdict: Option<Verdict>,
    /// The pane's state machine.
    pub tracker: Tracker,
    /// The pane's escape-sequence scanner, status-report records, user variable, title and
    /// progress (the one owner of what the program sent).
    pub signals: PaneSignals,
    /// When the foreground was last looked at (probe or cheap look).
    pub looked_at: Option<Instant>,
    /// The agent a process-less pane's screen looks like (manifest fingerprints).
    pub fingerprint: Option<String>,
    /// Pauses our copy of the output of a pane that floods and that nothing reads.
    pub flood: FloodGate,
    /// Pauses our copy of an agent pane's heavy redraws between two captures.
    pub redraw: RedrawGate,
    /// The terminal model of an agent pane read through its pipe (see `super::screen_model`).
    pub model: Option<ScreenModel>,
    /// A frame the program is drawing as a synchronized update: looks wait for its end.
    pub sync: SyncUpdate,
    /// Its bytes carried a signal other than a title (a report, a value, progress, a prompt
    /// mark, a notification): they are always read.
    bytes_matter: bool,
    /// The drift alarm: whether the agent's rules still recognise its screen.
    pub drift: Drift,
    /// The last verdict of the screen rules and what it was made from.
    memo: VerdictMemo,
    /// The running agent's version, when the probe found it.
    pub agent_version: Option<String>,
    /// The screen and title the drift alarm saw last (a hash: it counts changes).
    pub(super) drift_seen: u64,
    /// The cheap look at the last probe or look (see `unchanged`), and the files it reads.
    look: Look,
    look_files: LookFiles,
    /// The first output not yet followed by a look at the foreground (see [`Self::look_due`]).
    unlooked_output: Option<Instant>,
    /// That output came after a quiet as long as the pane's look rate (`look_every`): its look
    /// is not held to the rate.
    burst_began: bool,
    /// A `THINKTERM_AGENT` value arrived since the last look at the foreground: it belongs to
    /// the program running now, whatever that look finds.
    var_since_look: bool,
    /// A prompt mark waits for the probe that tells whether the shell is back.
    prompt_pending: bool,
    /// No probe has answered yet for this entry.
    unprobed: bool,
    /// The bytes that carried a state lately, for a respawned pane's new entry.
    pub recent: RecentSignals,
}

/// What a chunk of output asked of the daemon besides the tracker's effects.
#[derive(Debug, Default)]
pub struct OutputOutcome {
    /// The tracker's effects, in order.
    pub effects: Vec<PaneEffect>,
    /// A full probe of the foreground is needed (something else may run, or a report must be
    /// bound to the program that runs now).
    pub probe: bool,
    /// The title changed: the rules' title region must be evaluated again.
    pub title_changed: bool,
    /// Notifications the program sent itself (OSC 9, 777, 99), in order.
    pub notes: Vec<ProgramNotification>,
    /// Where in a pipe's bytes the synchronized update still open after them began, when it
    /// began in them (see `super::sync_update`).
    pub frame_began: Option<usize>,
}

/// The program in a pane's foreground (not its shell), by process group.
fn program(f: &Foreground) -> Option<u32> {
    f.tpgid.filter(|_| !f.at_shell)
}

impl PaneEntry {
    /// Whether the pane's verified screen model serves a look at `now` (checked against tmux
    /// at most `every` ago), so that no capture is needed.
    pub fn model_serves(&self, now: Instant, every: std::time::Duration) -> bool {
        self.model.as_ref().is_some_and(|m| m.serves(now, every))
    }

    /// A new entry (not yet probed); `flood_limit` in bytes per second (0: never pause).
    pub fn new(pid: u32, now: Instant, flood_limit: u64) -> Self {
        PaneEntry {
            pid,
            fg: Foreground::default(),
            identity: Identity::Other,
            output_bytes: 0,
            last_output: None,
            screen: String::new(),
            verdict: None,
            tracker: Tracker::new(now),
            signals: PaneSignals::new(),
            looked_at: None,
            fingerprint: None,
            flood: FloodGate::new(flood_limit),
            redraw: RedrawGate::default(),
            model: None,
            sync: SyncUpdate::default(),
            bytes_matter: false,
            drift: Drift::default(),
            memo: VerdictMemo::default(),
            agent_version: None,
            drift_seen: 0,
            look: Look::default(),
            look_files: LookFiles::default(),
            unlooked_output: None,
            burst_began: false,
            var_since_look: false,
            prompt_pending: false,
            unprobed: true,
            recent: RecentSignals::default(),
        }
    }

    /// Whether the pane's bytes carry only what a capture shows and its title: an agent (or a
    /// process-less program whose screen is read) that never sent a report, a value, progress,
    /// a prompt mark or a notification. Such a pane may be gated (`super::redraw`).
    pub fn redraw_only(&self) -> bool {
        self.wants_capture()
            && !self.bytes_matter
            && self.signals.records().is_empty()
            && self.signals.user_var().is_none()
            && self.signals.progress().is_none()
    }

    /// The title tmux holds for the pane, read with a capture while our copy of its output was
    /// paused (the titles it sent meanwhile did not reach us). `tmux_default`: the title is the
    /// one tmux gives a pane before its program sets one, not a title the program sent (S9.4).
    pub fn title_read(&mut self, now: Instant, title: &str, tmux_default: bool) -> Vec<PaneEffect> {
        let before = self.signals.title();
        if before == Some(title) || (before.is_none() && tmux_default) {
            return Vec::new();
        }
        self.signals.set_title(title.to_string());
        let spinner = self.signals.title_spinner();
        self.tracker.on_input(now, PaneInput::TitleSpinner(spinner))
    }

    /// Whether nothing needs this pane's bytes: no agent (nor a process-less program whose
    /// screen is read), no status report in the table and no `THINKTERM_AGENT` value.
    pub fn unread(&self) -> bool {
        !self.wants_capture()
            && self.signals.records().is_empty()
            && self.signals.user_var().is_none()
    }

    /// S3.4: the value the program that left reported never labels what comes next (unless the
    /// value arrived after the last look: then the new program sent it).
    fn program_seen(&mut self, before: Option<u32>, after: Option<u32>) {
        if before.is_some() && before != after && !self.var_since_look {
            self.signals.clear_user_var();
        }
        self.var_since_look = false;
    }

    /// The versions found for the processes of a probed job: the identified agent's, if it is
    /// among them (a later program's answer carries other pids).
    pub fn apply_versions(&mut self, versions: &[(u32, String)]) {
        if let Identity::Agent { pid, .. } = &self.identity {
            if let Some((_, v)) = versions.iter().find(|(p, _)| p == pid) {
                self.agent_version = Some(v.clone());
            }
        }
    }

    /// A probe's answer: the foreground job, identified, told to the tracker. `tmux_title`:
    /// the pane's title as tmux holds it now, unless it is tmux's default (the host name).
    ///
    /// The first answer for a pane keeps the title read from its bytes, else adopts
    /// `tmux_title` as the title its program sent: a pane that was running before the daemon
    /// started (or before its session's client attached) sent its title when we were not
    /// reading, and agents that put their state in the title (Gemini CLI's "Working…", Codex's
    /// spinner) send it again only when the state changes.
    pub fn apply_probe(
        &mut self,
        now: Now,
        probed: Probed,
        table: &IdentityTable,
        detection: bool,
        tmux_title: Option<&str>,
    ) -> Vec<PaneEffect> {
        let first = std::mem::take(&mut self.unprobed);
        let mut adopted = false;
        self.looked_at = Some(now.at);
        let before = program(&self.fg);
        self.fg = probed.fg;
        self.look = probed.look;
        self.program_seen(before, program(&self.fg));
        let identity = if detection {
            table.identify(&self.fg.procs)
        } else {
            Identity::Other
        };
        if identity != self.identity {
            tracing::debug!(pid = self.pid, ?identity, "pane identity");
            self.identity = identity;
            self.verdict = None;
            self.fingerprint = None;
            self.drift.reset();
            // Its version follows from the version thread.
            self.agent_version = None;
            // At the first answer there was no previous program for us: a title read from
            // the bytes since we started is the newest, else tmux's.
            let title = self
                .signals
                .title()
                .or(tmux_title)
                .map(str::to_string)
                .filter(|_| first && self.agent().is_some());
            // S9.4: what the previous program sent never reaches the next one's rules.
            self.signals.reset();
            if let Some(t) = title {
                self.signals.set_title(t);
                adopted = true;
            }
        }
        let mut fx = self
            .tracker
            .on_input(now.at, PaneInput::Foreground(self.fg_input()));
        if adopted {
            let spinner = self.signals.title_spinner();
            fx.extend(
                self.tracker
                    .on_input(now.at, PaneInput::TitleSpinner(spinner)),
            );
        }
        if self.signals.user_var().is_some() {
            // Authority depends on time and on whether the reporter still runs.
            fx.extend(self.feed_user_var(now));
        }
        if std::mem::take(&mut self.prompt_pending) && self.fg.at_shell {
            // An OSC 133 A prompt with the shell back in the foreground: reports end.
            fx.extend(self.end_ongoing(now.at));
        }
        fx
    }

    /// Whether new output should lead to a capture (an agent runs here).
    pub fn wants_capture(&self) -> bool {
        self.agent().is_some() || matches!(self.identity, Identity::ProcessLess { .. })
    }

    /// The snapshot the rules see: the last screen, and the title and progress the program
    /// sent, straight from its signals.
    pub fn snapshot(&self) -> Snapshot<'_> {
        Snapshot {
            screen: &self.screen,
            osc_title: self.signals.title(),
            osc_progress: self.signals.progress(),
        }
    }

    /// Classifies a freshly captured screen of pane `pane` and tells the tracker.
    pub fn classify(
        &mut self,
        now: Instant,
        pane: PaneId,
        catalog: &Catalog,
        screen: String,
    ) -> Vec<PaneEffect> {
        if self.screen != screen {
            self.screen = screen;
            self.memo.forget();
        }
        let mut fx = Vec::new();
        if matches!(self.identity, Identity::ProcessLess { .. }) {
            let found = catalog
                .fingerprint(&self.screen, self.signals.title())
                .map(str::to_string);
            if found != self.fingerprint {
                tracing::debug!(%pane, agent = ?found, "screen fingerprint behind a process-less program");
                self.fingerprint = found;
                self.verdict = None;
                self.drift.reset();
                fx.extend(
                    self.tracker
                        .on_input(now, PaneInput::Foreground(self.fg_input())),
                );
            }
        }
        fx.extend(self.reclassify(now, pane, catalog));
        fx
    }

    fn fg_input(&self) -> ForegroundInput {
        ForegroundInput {
            agent: self.agent().map(str::to_string),
            pid: self.fg.tpgid,
            observable: !matches!(self.identity, Identity::ProcessLess { .. }),
            at_shell: self.fg.at_shell,
        }
    }

    /// Classifies the last screen again (rules or title changed); the verdict is the memo's
    /// when nothing it was made from changed.
    pub fn reclassify(&mut self, now: Instant, pane: PaneId, catalog: &Catalog) -> Vec<PaneEffect> {
        // The memo is taken out for the call: the agent and the snapshot borrow the pane.
        let mut memo = std::mem::take(&mut self.memo);
        let Some(agent) = self.agent() else {
            self.memo = memo;
            return Vec::new();
        };
        let (verdict, same) = memo.verdict(catalog, agent, &self.snapshot());
        self.memo = memo;
        self.verdict = verdict;
        self.watch_drift(now, pane, same);
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

    /// The pane wrote (its bytes, if they came, are [`Self::on_output`]'s; a pipe held closed
    /// while it floods brings none): when it last wrote, and since output means something
    /// runs, a look again at what, a moment later (`look_due`).
    pub fn wrote_unseen(&mut self, now: Instant) {
        self.last_output = Some(now);
        self.unlooked_output.get_or_insert(now);
    }

    /// Output arrived: scan it for escape sequences and tell the tracker what they said.
    pub fn on_output(&mut self, now: Now, data: &PaneBytes, detection: bool) -> OutputOutcome {
        self.output_bytes += data.len() as u64;
        let quiet = self
            .last_output
            .is_none_or(|t| now.at.saturating_duration_since(t) >= self.look_every());
        self.wrote_unseen(now.at);
        self.burst_began |= quiet;
        let mut out = OutputOutcome::default();
        // Text with no ESC is not even un-escaped (see `PaneBytes::to_scan`).
        let scan = data.to_scan(self.signals.is_idle());
        if self.wants_capture() {
            // All of a pipe's bytes: a mark cut by the read continues in text with no ESC.
            match (data, &scan) {
                (PaneBytes::Raw(all), _) => out.frame_began = self.sync.feed(now.at, all),
                (PaneBytes::Escaped(_), Some(from_esc)) => {
                    self.sync.feed(now.at, from_esc);
                }
                (PaneBytes::Escaped(_), None) => {}
            }
        }
        let Some(raw) = scan else {
            return out;
        };
        let title_before = self.signals.title().map(str::to_string);
        // Each report's summary right after it, so a burst of reports replays every state.
        let mut summaries = Vec::new();
        let mut signals = Vec::new();
        self.signals.feed(&raw, now.unix_s(), &mut |s, records| {
            if matches!(s, Signal::StatusReport(_)) {
                summaries.push(summarize(records));
            }
            signals.push(s);
        });
        if signals.is_empty() {
            return out;
        }
        if signals.iter().any(|s| {
            matches!(
                s,
                Signal::StatusReport(_) | Signal::UserVar(_) | Signal::Progress(_)
            )
        }) {
            self.recent.keep(now.at, raw);
        }
        let (mut var, mut progress, mut title) = (false, false, false);
        for s in &signals {
            match s {
                Signal::StatusReport(_) => {}
                Signal::ReportRejected(e) => tracing::debug!(error = %e, "status report dropped"),
                Signal::UserVar(UserVarOutcome::Ignore(_)) => {}
                Signal::UserVar(_) => var = true,
                Signal::Progress(_) => progress = true,
                Signal::Title(_) => title = true,
                Signal::PromptMark(PromptMark::A) => {
                    self.prompt_pending = true;
                    out.probe = true;
                }
                Signal::Notification(n) => out.notes.push(n.clone()),
                _ => {}
            }
            if !matches!(s, Signal::Title(_) | Signal::Bell) {
                self.bytes_matter = true;
            }
        }
        if detection {
            for summary in summaries {
                out.effects
                    .extend(self.tracker.on_input(now.at, PaneInput::Report(summary)));
            }
        }
        if var && detection {
            // Bound to the program that runs now: the probe's answer feeds it.
            self.var_since_look = true;
            out.probe = true;
        }
        if progress {
            let input = self.signals.progress().and_then(native_progress);
            out.effects
                .extend(self.tracker.on_input(now.at, PaneInput::Progress(input)));
        }
        if title {
            out.title_changed = self.signals.title() != title_before.as_deref();
            let spinner = self.signals.title_spinner();
            out.effects.extend(
                self.tracker
                    .on_input(now.at, PaneInput::TitleSpinner(spinner)),
            );
        }
        out
    }

    /// Output was skipped (tmux paused the pane, or our flood pause ended): a sequence left
    /// half open must not swallow what follows.
    pub fn output_skipped(&mut self) {
        self.signals.reset_scanner();
        self.sync.reset();
    }

    /// Tells the tracker the status report in force now.
    pub fn feed_report(&mut self, now: Instant) -> Vec<PaneEffect> {
        let summary = summarize(self.signals.records());
        self.tracker.on_input(now, PaneInput::Report(summary))
    }

    /// Tells the tracker what the `THINKTERM_AGENT` value still says.
    pub fn feed_user_var(&mut self, now: Now) -> Vec<PaneEffect> {
        let observable = !matches!(self.identity, Identity::ProcessLess { .. });
        // The reporter is alive while a program (not the shell) holds the foreground.
        let leader = !self.fg.at_shell;
        let input = match (
            self.signals.user_var(),
            self.signals
                .user_var_authority(now.unix_s(), observable, leader),
        ) {
            (Some(r), Some(a)) if a.identity => Some(UserVarReport {
                agent: r.agent.clone(),
                state: r.state,
                authoritative: a.state.is_some(),
            }),
            _ => None,
        };
        self.tracker.on_input(now.at, PaneInput::UserVar(input))
    }

    /// Ongoing reports end (the program left, or the shell's next prompt started).
    pub fn end_ongoing(&mut self, now: Instant) -> Vec<PaneEffect> {
        if self.signals.records_mut().end_ongoing() {
            self.feed_report(now)
        } else {
            Vec::new()
        }
    }

    /// The pane was looked at: results go.
    pub fn seen(&mut self, now: Instant) -> Vec<PaneEffect> {
        let mut fx = Vec::new();
        if self.signals.records_mut().mark_seen() {
            fx.extend(self.feed_report(now));
        }
        fx.extend(self.tracker.on_input(now, PaneInput::Seen));
        fx
    }

    /// The agent the process probe identified.
    pub fn agent(&self) -> Option<&str> {
        match &self.identity {
            Identity::Agent { agent, .. } => Some(agent),
            // Behind ssh, mosh or a nested multiplexer: what the screen looks like.
            Identity::ProcessLess { .. } => self.fingerprint.as_deref(),
            Identity::Other => None,
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
            "agent_version": self.agent_version,
            "state": st.state.map(|s| s.as_str()).unwrap_or("unknown"),
            "source": st.source,
            "unrecognised": agent.is_some() && self.drift.unrecognised().is_some(),
            "unrecognised_reason": self.drift.unrecognised().map(|r| r.to_string()),
            "screen": self.screen,
            "title": self.signals.title(),
            "explanation_text": rules.as_ref().map(|e| e.render()),
            "explanation": rules,
            "foreground": self.fg.procs,
            "at_shell": self.fg.at_shell,
            "process_less": matches!(self.identity, Identity::ProcessLess { .. }),
            "output_paused": self.flood.is_paused(),
            "flood_pauses": self.flood.pauses(),
            "flood_holds": self.flood.holds(),
            "redraw_pauses": self.redraw.pauses(),
            "classifications": self.memo.explain(),
            "screen_model": self.model.as_ref().map(ScreenModel::explain),
        })
    }
}

fn native_progress(p: Progress) -> Option<NativeProgress> {
    let state = match p {
        Progress::Hidden => return None,
        Progress::Normal(_) => ProgressState::Normal,
        Progress::Error(_) => ProgressState::Error,
        Progress::Indeterminate => ProgressState::Indeterminate,
        Progress::Paused(_) => ProgressState::Paused,
    };
    Some(NativeProgress {
        state,
        percent: p.percent(),
    })
}

/// The records table's answer for the program, as the tracker's input.
fn summarize(records: &Records) -> Option<ReportSummary> {
    let eff = records.effective()?;
    let mut s = ReportSummary::new(eff.state());
    s.app = eff.app.map(str::to_string);
    s.report.kind = eff.kind();
    s.report.progress = eff.progress();
    s.report.msg = eff.msg().map(str::to_string);
    s.report.title = eff.title().map(str::to_string);
    s.report.subtasks = records
        .subtasks()
        .map(|r| Subtask {
            id: r
                .id
                .as_ref()
                .map(|i| i.as_str().to_string())
                .unwrap_or_default(),
            state: r.state.agent_state(),
            done: r.state == RecordState::Done,
            msg: r.msg.clone(),
        })
        .collect();
    Some(s)
}

#[cfg(test)]
#[path = "panes_tests.rs"]
mod tests;
