//! Pipes held closed while their pane floods (`daemon::flood`): a pane that nothing reads (no
//! agent, report or `THINKTERM_AGENT`) and that writes faster than the flood limit has our pipe
//! closed ([`Piping::Held`]) while it floods, so that tmux writes its bytes nowhere, and opened
//! again when the flood is over or for one of the gate's samples. Whether it wrote meanwhile
//! (and so whether the flood goes on) comes from its terminal ([`crate::tmux::tty_watch`]),
//! drained when the daemon asks ([`Observer::held_wrote`]). A pane
//! read through its control client has its copy paused there instead ([`Observer::set_output`]).

use std::time::Instant;

use super::piping::Piping;
use super::Observer;
use crate::ids::PaneId;
use crate::tmux::tty_watch::TtyWatch;

impl Observer {
    /// Holds `pane`'s pipe closed while it floods and nothing reads its bytes (see the module
    /// docs); its terminal is watched for writes from now on. Returns false, and changes
    /// nothing, when the pane is not read through a live pipe of ours or its terminal cannot be
    /// watched (the pane then keeps its pipe).
    pub fn hold_pipe(&mut self, pane: PaneId) -> bool {
        if !matches!(self.piping.panes.get(&pane), Some(Piping::Live(_))) {
            return false;
        }
        let Some(tty) = self
            .inventory
            .panes
            .get(&pane)
            .map(|p| std::path::PathBuf::from(&p.tty))
            .filter(|t| t.is_absolute())
        else {
            return false;
        };
        if self.any_connection().is_err() {
            return false;
        }
        if self.piping.ttys.is_none() {
            match TtyWatch::new() {
                Ok(t) => self.piping.ttys = Some(t),
                Err(e) => {
                    tracing::debug!(error = %e, "cannot watch terminals for writes: a flooding pane keeps its pipe");
                    return false;
                }
            }
        }
        let Some(ttys) = self.piping.ttys.as_mut() else {
            return false;
        };
        if let Err(e) = ttys.watch(pane, &tty) {
            tracing::debug!(%pane, tty = %tty.display(), error = %e, "cannot watch the pane's terminal: it keeps its pipe");
            return false;
        }
        if let Ok(c) = self.any_connection() {
            c.send(format!("pipe-pane -t {pane}"));
        }
        // Dropping the handle stops its reader; tmux's close of the pipe is expected.
        self.piping.panes.insert(pane, Piping::Held);
        true
    }

    /// Opens `pane`'s held pipe again (the flood is over, a sample of it, or its bytes may
    /// matter now) and stops watching its terminal. A `pipe-pane` of someone else's made
    /// meanwhile is left alone: the pipe then never comes, and the pane goes to its control
    /// client as any pipe that never came.
    pub fn reopen_pipe(&mut self, pane: PaneId) {
        if !matches!(self.piping.panes.get(&pane), Some(Piping::Held)) {
            return;
        }
        if let Some(t) = self.piping.ttys.as_mut() {
            t.unwatch(pane);
        }
        let Some(pipes) = &self.piping.pipes else {
            return;
        };
        let line = pipes.reopen_command(pane);
        if let Ok(c) = self.any_connection() {
            c.send(line);
        }
        self.piping
            .panes
            .insert(pane, Piping::Asked(Instant::now()));
        self.schedule_pipe_check();
    }

    /// The flood gate's pause (`on` false) or resume of `pane` (`daemon::flood`): a piped pane's
    /// pipe is held closed and opened again; a pane read through its control client has its
    /// copy paused there. Returns false when nothing was paused (a pipe still being opened, or
    /// one that cannot be held).
    pub fn flood_output(&mut self, pane: PaneId, on: bool) -> bool {
        match self.piping.panes.get(&pane) {
            Some(Piping::Live(_)) if !on => self.hold_pipe(pane),
            Some(Piping::Held) if on => {
                self.reopen_pipe(pane);
                true
            }
            _ if self.piping.piped(pane) => false,
            _ => {
                self.set_output(pane, on);
                true
            }
        }
    }

    /// The panes whose pipe is held closed that wrote to their terminal since the last call
    /// (their bytes do not come; see [`crate::tmux::tty_watch`]).
    pub fn held_wrote(&mut self) -> Vec<PaneId> {
        self.piping
            .ttys
            .as_mut()
            .map(TtyWatch::drain)
            .unwrap_or_default()
    }

    /// Whether `pane`'s pipe is held closed with its terminal watched: whether it wrote is
    /// known ([`Observer::held_wrote`]) though its bytes do not come.
    pub fn held(&self, pane: PaneId) -> bool {
        matches!(self.piping.panes.get(&pane), Some(Piping::Held))
            && self.piping.ttys.as_ref().is_some_and(|t| t.watches(pane))
    }
}
