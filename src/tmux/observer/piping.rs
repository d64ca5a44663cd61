//! Which panes are read through their pipe ([`crate::tmux::pipe`]) and which through their
//! session's control client, and the control clients' output switch to match.
//!
//! A pane's bytes come from exactly one source. A pane whose pipe was asked for (by us, or by
//! our hook when tmux made it) is read through the pipe only: the pipe holds everything the pane
//! wrote since tmux opened it, so a copy from the control client meanwhile would come twice. A
//! pane that has someone else's pipe (the person's `pipe-pane`, which ours must not replace),
//! whose pipe never came, or whose pipe tmux closed while the pane lives (someone's `pipe-pane`
//! replaced or closed ours: it is theirs from then on) is read through its control client, whose
//! output is switched on for as long as its session holds such a pane; the piped panes of that
//! session are paused in that client.
//!
//! A pane that floods and whose bytes nothing reads has our pipe held closed ([`Piping::Held`],
//! see [`super::holding`]). It is not read through its control client meanwhile.

use std::time::{Duration, Instant};

use super::{Observed, Observer, Target};
use crate::ids::{PaneId, SessionId};
use crate::tmux::connection::ConnEvent;
use crate::tmux::escape::PaneBytes;
use crate::tmux::pipe::{PipeEvent, PipeHandle, Pipes, MARK, PIPES};
use crate::tmux::tty_watch::TtyWatch;

/// How long a pipe asked for may take to be handed over before the pane is read through its
/// control client instead (a relay is one `fork` and `exec` of this binary).
pub const PIPE_WAIT: Duration = Duration::from_secs(3);
/// Pipes that never came, with none handed over at all, after which pipes are given up for
/// this server (the relay cannot run here): every pane is read through its control client.
pub const GIVE_UP_AFTER: u32 = 3;
/// Most pipes asked for and not handed over yet. A server of hundreds of panes has its pipes
/// asked for in rounds: each is a `fork` in tmux (about 2 ms) and two commands in the control
/// client's queue, and asked all at once, 600 panes made tmux busy for seconds, overflowed
/// the queue (refused commands) and outlasted [`PIPE_WAIT`]: the panes whose pipe was late went
/// to their control clients. The next round is asked when half of one is handed over.
pub const MAX_ASKED: usize = 64;
/// Most bytes held for a pane that no list has shown yet (its first output, kept until the
/// daemon knows the pane).
pub const MAX_HELD: usize = 256 * 1024;
/// The hooks that pipe a new pane before its first byte.
pub const PIPE_HOOKS: [&str; 3] = [
    "after-new-window",
    "after-split-window",
    "after-new-session",
];

/// How one pane is read.
#[derive(Debug)]
pub enum Piping {
    /// Its pipe was asked for at this instant (or our hook opened it); the hand-over is due.
    Asked(Instant),
    /// Its bytes come through its pipe.
    Live(PipeHandle),
    /// tmux closed our pipe: the pane closed (a list says so) or someone else's `pipe-pane`
    /// replaced or closed ours. `listed` counts the lists that still showed the pane since: the
    /// first may have been made before the pane closed, so only a second one decides.
    Closed {
        /// Lists taken in since the pipe closed.
        listed: u8,
    },
    /// Read through its control client.
    Client(ClientReason),
    /// Our pipe is closed on purpose while the pane floods and nothing reads its bytes; its
    /// terminal is watched for writes. Reopened when the flood is over or for a sample of it.
    Held,
}

/// Why a pane is read through its control client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientReason {
    /// It had a pipe that is not a sidecar's.
    Foreign,
    /// Its pipe was asked for and never handed over.
    Failed,
    /// Someone else's `pipe-pane` replaced or closed ours.
    Replaced,
}

/// The pipes' side of the observer.
#[derive(Debug, Default)]
pub struct PipeState {
    /// The listener; `None` in control mode, or once pipes were given up.
    pub pipes: Option<Pipes>,
    /// Each pane's source, for the panes of the inventory (and piped panes not listed yet).
    pub panes: std::collections::HashMap<PaneId, Piping>,
    /// Pipes handed over since the start.
    pub opened: u32,
    /// Pipes asked for that never came.
    pub failed: u32,
    /// The sessions whose control client has its output on.
    pub output_on: std::collections::HashSet<SessionId>,
    /// A check of the pipes asked for is scheduled.
    pub check_due: bool,
    /// Bytes of piped panes that no list has shown yet, and whether some were dropped.
    pub held: std::collections::HashMap<PaneId, (Vec<u8>, bool)>,
    /// A re-list is under way ([`Observer::start_relist`]).
    pub relisting: bool,
    /// Panes whose pipe was handed over, unlisted, while a re-list was under way: that list
    /// most likely has them (tmux made the pane before its hook piped it); if it does not,
    /// another is asked for.
    pub opened_unlisted: std::collections::HashSet<PaneId>,
    /// Listed panes whose pipe waits for a later round ([`MAX_ASKED`]).
    pub unasked: usize,
    /// The terminals of [`Piping::Held`] panes, watched for writes (made at the first hold).
    pub ttys: Option<TtyWatch>,
}

impl PipeState {
    /// Pipes asked for and not handed over yet.
    fn asking(&self) -> usize {
        self.panes
            .values()
            .filter(|p| matches!(p, Piping::Asked(_)))
            .count()
    }

    /// Whether `pane`'s bytes come (or will come) through its pipe, so that a control client's
    /// copy of them must be dropped.
    pub fn piped(&self, pane: PaneId) -> bool {
        self.pipes.is_some()
            && matches!(
                self.panes.get(&pane),
                Some(Piping::Asked(_) | Piping::Live(_) | Piping::Held)
            )
    }
}

impl Observer {
    /// Takes in what a pipe reported.
    pub(super) fn on_pipe(&mut self, ev: PipeEvent) -> Option<Observed> {
        match ev {
            PipeEvent::Opened { pane, handle } => self.pipe_opened(pane, handle),
            PipeEvent::Output {
                pane,
                serial,
                data,
                skipped,
            } => {
                let live = matches!(self.piping.panes.get(&pane), Some(Piping::Live(h)) if h.serial() == serial);
                if !live {
                    return None;
                }
                if !self.inventory.panes.contains_key(&pane) {
                    // A pane our hook piped before any list had it: what it writes first is
                    // kept for when the daemon knows it.
                    let (held, dropped) = self.piping.held.entry(pane).or_default();
                    if held.len() + data.len() > MAX_HELD {
                        held.clear();
                        *dropped = true;
                    }
                    held.extend_from_slice(&data[data.len().saturating_sub(MAX_HELD)..]);
                    return None;
                }
                let output = Observed::Output {
                    pane,
                    data: PaneBytes::Raw(data),
                };
                if skipped > 0 {
                    // In this order, whoever takes them: [`Observer::next`] reports `found` first.
                    self.found.push_back(output);
                    self.found.push_back(Observed::Skipped(pane));
                    return None;
                }
                Some(output)
            }
            PipeEvent::Closed { pane, serial } => {
                let p = self.piping.panes.get_mut(&pane)?;
                if !matches!(p, Piping::Live(h) if h.serial() == serial) {
                    return None;
                }
                *p = Piping::Closed { listed: 0 };
                tracing::trace!(%pane, "structure: pipe closed");
                self.structure_of(Some(Target::Pane(pane)))
            }
            PipeEvent::Check => {
                self.piping.check_due = false;
                let now = Instant::now();
                let (mut late, mut waiting) = (false, false);
                for p in self.piping.panes.values() {
                    if let Piping::Asked(at) = p {
                        let due = now.duration_since(*at) >= PIPE_WAIT;
                        late |= due;
                        waiting |= !due;
                    }
                }
                // A pipe asked for after this check was scheduled is not due yet: another check.
                if waiting {
                    self.schedule_pipe_check();
                }
                // The re-list that follows gives late panes to their control clients.
                if late {
                    return self.structure_of(None);
                }
                None
            }
        }
    }

    fn pipe_opened(&mut self, pane: PaneId, handle: PipeHandle) -> Option<Observed> {
        // A hand-over after pipes were given up: let it go.
        self.piping.pipes.as_ref()?;
        match self.piping.panes.get(&pane) {
            None | Some(Piping::Asked(_) | Piping::Live(_)) => {}
            Some(Piping::Closed { .. } | Piping::Client(_) | Piping::Held) => {
                // Late, or after the pane went to its control client, whose copy would overlap
                // what the pipe holds: let it go (the handle closes our end), and close it in
                // tmux when it is ours for sure.
                if matches!(
                    self.piping.panes.get(&pane),
                    Some(Piping::Client(ClientReason::Failed))
                ) {
                    if let Ok(c) = self.any_connection() {
                        c.send(format!("pipe-pane -t {pane}"));
                    }
                }
                return None;
            }
        }
        tracing::debug!(%pane, serial = handle.serial(), "pane pipe handed over");
        self.piping.opened += 1;
        self.piping.panes.insert(pane, Piping::Live(handle));
        if self.piping.unasked > 0 && self.piping.asking() <= MAX_ASKED / 2 {
            // The next round.
            self.sync_pipes();
        }
        let session = self.inventory.panes.get(&pane).map(|p| p.session);
        match session {
            // A pane our hook piped before any list had it.
            None if self.piping.relisting => {
                self.piping.opened_unlisted.insert(pane);
                None
            }
            None => {
                tracing::trace!(%pane, "structure: pipe of a pane not listed yet");
                self.structure_of(Some(Target::Pane(pane)))
            }
            Some(s) => {
                self.pause_in_client(pane, s);
                None
            }
        }
    }

    /// The re-list under way was taken in, or failed: a pane piped meanwhile that it does not
    /// show asks for another.
    pub fn relist_done(&mut self) {
        self.piping.relisting = false;
        let inventory = &self.inventory;
        let missing: Vec<PaneId> = self
            .piping
            .opened_unlisted
            .drain()
            .filter(|id| !inventory.panes.contains_key(id))
            .collect();
        for pane in missing {
            tracing::trace!(%pane, "structure: a pane piped during the re-list is not in it");
            self.structure(Some(Target::Pane(pane)));
        }
    }

    /// A piped pane of a session whose client takes output is paused there (its copy would be
    /// dropped anyway).
    fn pause_in_client(&self, pane: PaneId, session: SessionId) {
        self.in_client(pane, session, "pause");
    }

    /// Sends `refresh-client -A PANE:ACTION` to the client of `session` if it takes output.
    fn in_client(&self, pane: PaneId, session: SessionId, action: &str) {
        let Some(cover) = self.inventory.covering_session(session) else {
            return;
        };
        if !self.piping.output_on.contains(&cover) {
            return;
        }
        if let Some(c) = self.conns.get(&cover).filter(|c| c.is_open()) {
            c.send(format!(
                "refresh-client -A {}",
                crate::tmux::command::quote(&format!("{pane}:{action}"))
            ));
        }
    }

    /// After a re-list: pipes for the panes that lack one, the panes that go to their control
    /// clients, and the clients' output switch. Nothing in control mode.
    pub(super) fn sync_pipes(&mut self) {
        let Some(pipes) = &self.piping.pipes else {
            return;
        };
        let now = Instant::now();
        let token = pipes.token().to_string();
        let inventory = &self.inventory;
        let ttys = &mut self.piping.ttys;
        self.piping.panes.retain(|id, p| {
            let keep = inventory.panes.contains_key(id) || matches!(p, Piping::Live(_));
            if !keep {
                if let Some(t) = ttys.as_mut() {
                    t.unwatch(*id);
                }
            }
            keep
        });
        // Bytes held for panes the list now has go out first, in order.
        let listed: Vec<PaneId> = self
            .piping
            .held
            .keys()
            .filter(|id| inventory.panes.contains_key(id))
            .copied()
            .collect();
        for id in listed {
            if let Some((data, lost)) = self.piping.held.remove(&id) {
                if lost {
                    self.found.push_back(Observed::Lost(id));
                }
                self.found.push_back(Observed::Output {
                    pane: id,
                    data: PaneBytes::Raw(data),
                });
            }
        }
        let panes = &self.piping.panes;
        self.piping
            .held
            .retain(|id, _| matches!(panes.get(id), Some(Piping::Live(_))));
        let mut asked = false;
        let mut asking = self.piping.asking();
        let mut unasked = 0;
        let mut lines: Vec<String> = Vec::new();
        // Panes that were piped and go to their client now: paused there, if it takes output.
        let mut resume: Vec<(PaneId, SessionId)> = Vec::new();
        for (id, info) in &self.inventory.panes {
            let next = match self.piping.panes.get(id) {
                None if info.dead => None,
                None if !info.pipe || (!info.pipe_mark.is_empty() && info.pipe_mark != token) => {
                    if asking >= MAX_ASKED {
                        unasked += 1;
                        continue;
                    }
                    asking += 1;
                    // No pipe, or one an earlier sidecar left: ours now.
                    lines.push(pipes.open_command(*id));
                    lines.push(pipes.mark_command(*id));
                    asked = true;
                    Some(Piping::Asked(now))
                }
                // Our hook's: the hand-over is on its way.
                None if info.pipe_mark == token => Some(Piping::Asked(now)),
                None => {
                    tracing::info!(pane = %id, "the pane has a pipe of its own (pipe-pane): reading it through its control client");
                    Some(Piping::Client(ClientReason::Foreign))
                }
                Some(Piping::Asked(at)) if now.duration_since(*at) >= PIPE_WAIT => {
                    tracing::debug!(pane = %id, "pane pipe not handed over in time: reading it through its control client");
                    self.piping.failed += 1;
                    resume.push((*id, info.session));
                    Some(Piping::Client(ClientReason::Failed))
                }
                Some(Piping::Closed { listed: 0 }) => {
                    // This list may be older than the close: ask for another, of this pane.
                    self.scope.add(Some(Target::Pane(*id)));
                    self.found.push_back(Observed::Structure);
                    Some(Piping::Closed { listed: 1 })
                }
                Some(Piping::Closed { .. }) => {
                    tracing::info!(pane = %id, "another pipe-pane replaced or closed ours: reading the pane through its control client");
                    if info.pipe_mark == token {
                        lines.push(format!("set-option -pu -t {id} {MARK}"));
                    }
                    resume.push((*id, info.session));
                    Some(Piping::Client(ClientReason::Replaced))
                }
                Some(_) => None,
            };
            if let Some(n) = next {
                self.piping.panes.insert(*id, n);
            }
        }
        if unasked > 0 {
            tracing::debug!(unasked, "pipes left for a later round");
        }
        self.piping.unasked = unasked;
        if let Ok(c) = self.any_connection() {
            for l in lines {
                c.send(l);
            }
        }
        // A client that takes output already has these panes paused; one that does not is
        // switched on below, which starts every pane afresh.
        for (pane, session) in resume {
            self.in_client(pane, session, "continue");
        }
        if self.piping.opened == 0 && self.piping.failed >= GIVE_UP_AFTER {
            self.give_up_pipes();
            return;
        }
        if asked
            || self
                .piping
                .panes
                .values()
                .any(|p| matches!(p, Piping::Asked(_)))
        {
            self.schedule_pipe_check();
        }
        self.sync_outputs();
    }

    /// No pipe ever came: every pane is read through its control client from now on.
    fn give_up_pipes(&mut self) {
        let socket = self
            .piping
            .pipes
            .as_ref()
            .map(|p| p.socket().display().to_string());
        tracing::warn!(
            socket = socket.as_deref().unwrap_or(""),
            "pane pipes are not handed over (the relay cannot run?): reading every pane through the control clients"
        );
        if let Ok(c) = self.any_connection() {
            for hook in PIPE_HOOKS {
                c.send(format!("set-hook -gu {hook}[{}]", super::HOOK_INDEX));
            }
        }
        self.piping.pipes = None;
        self.piping.ttys = None;
        for p in self.piping.panes.values_mut() {
            *p = Piping::Client(ClientReason::Failed);
        }
        self.sync_outputs();
    }

    /// Wakes the observer once the pipes asked for are due.
    pub(super) fn schedule_pipe_check(&mut self) {
        if self.piping.check_due {
            return;
        }
        self.piping.check_due = true;
        let (tx, timer) = (self.tx.clone(), self.pacing.timer.clone());
        let at = Instant::now() + PIPE_WAIT + Duration::from_millis(50);
        tokio::spawn(async move {
            timer.sleep_until(at).await;
            let _ = tx.send((PIPES, ConnEvent::Pipe(PipeEvent::Check))).await;
        });
    }

    /// Switches each control client's output on while its session holds a pane read through
    /// it, off otherwise (pipe mode only: in control mode every client takes output).
    pub(super) fn sync_outputs(&mut self) {
        if self.piping.pipes.is_none() && self.piping.panes.is_empty() {
            return;
        }
        let mut wanted = std::collections::HashSet::new();
        for (id, info) in &self.inventory.panes {
            let through_client = match self.piping.panes.get(id) {
                Some(Piping::Client(_)) => true,
                Some(_) => false,
                None => self.piping.pipes.is_none(),
            };
            if through_client {
                if let Some(s) = self.inventory.covering_session(info.session) {
                    wanted.insert(s);
                }
            }
        }
        self.piping.output_on.retain(|s| self.conns.contains_key(s));
        for (s, conn) in &self.conns {
            let on = self.piping.output_on.contains(s);
            if wanted.contains(s) && !on {
                tracing::debug!(session = %s, "control client output on");
                conn.send("refresh-client -f '!no-output'");
                // Switching output on starts every pane afresh: pause the piped ones again.
                for (id, info) in &self.inventory.panes {
                    if self.piping.piped(*id)
                        && self.inventory.covering_session(info.session) == Some(*s)
                    {
                        conn.send(format!(
                            "refresh-client -A {}",
                            crate::tmux::command::quote(&format!("{id}:pause"))
                        ));
                    }
                }
            } else if !wanted.contains(s) && on {
                tracing::debug!(session = %s, "control client output off");
                conn.send("refresh-client -f no-output");
            }
        }
        self.piping.output_on = wanted
            .into_iter()
            .filter(|s| self.conns.contains_key(s))
            .collect();
    }

    /// The commands that install our pipe hooks (pipe mode only).
    pub(super) fn pipe_hook_commands(&self) -> Vec<String> {
        let Some(pipes) = &self.piping.pipes else {
            return Vec::new();
        };
        let cmd = crate::tmux::command::quote(&pipes.hook_command());
        PIPE_HOOKS
            .iter()
            .map(|hook| format!("set-hook -g {hook}[{}] {cmd}", super::HOOK_INDEX))
            .collect()
    }

    /// The commands that take our pipes and hooks away: the hooks, and each live pipe closed
    /// and unmarked.
    pub(super) fn pipe_uninstall_commands(&self) -> Vec<String> {
        if self.piping.pipes.is_none() {
            return Vec::new();
        }
        let mut out: Vec<String> = PIPE_HOOKS
            .iter()
            .map(|hook| format!("set-hook -gu {hook}[{}]", super::HOOK_INDEX))
            .collect();
        for (id, p) in &self.piping.panes {
            match p {
                Piping::Live(_) | Piping::Asked(_) => out.extend(Pipes::close_commands(*id)),
                // No pipe of ours to close (a `pipe-pane` of the person's since must stay).
                Piping::Held => out.push(format!("set-option -pu -t {id} {MARK}")),
                _ => {}
            }
        }
        out
    }

    /// How `pane`'s bytes reach us, in words (`explain`): `pipe`, or `control client` and why.
    pub fn output_source(&self, pane: PaneId) -> &'static str {
        match self.piping.panes.get(&pane) {
            Some(Piping::Live(_)) => "pipe",
            Some(Piping::Asked(_)) => "pipe (being opened)",
            Some(Piping::Closed { .. }) => "pipe (closed by tmux)",
            Some(Piping::Held) => "pipe (held closed: the pane floods)",
            Some(Piping::Client(ClientReason::Foreign)) => {
                "control client (the pane has a pipe-pane of its own)"
            }
            Some(Piping::Client(ClientReason::Failed)) => "control client (its pipe never came)",
            Some(Piping::Client(ClientReason::Replaced)) => {
                "control client (another pipe-pane replaced ours)"
            }
            None if self.piping.pipes.is_some() => "pipe (not asked yet)",
            None => "control client",
        }
    }

    /// How many panes are read through their pipes, and how many through control clients.
    pub fn pipe_counts(&self) -> (usize, usize) {
        let live = self
            .piping
            .panes
            .values()
            .filter(|p| matches!(p, Piping::Live(_) | Piping::Held))
            .count();
        let client = self.inventory.panes.len().saturating_sub(live);
        (live, client)
    }
}
