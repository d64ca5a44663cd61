//! When the daemon looks at a pane's foreground between probes: a cheap look
//! ([`crate::process::foreground::Look`]: the first process's `stat` and children, the job
//! leader's `stat`)
//! tells whether a full probe could find anything new, and output asks for one a moment after
//! it, not too often. With pipes this is how a program started in a pane of any session is
//! seen (tmux's world subscription no longer reads every pane's command:
//! `tmux::observer::world`).

use std::time::Instant;

use super::{program, PaneEntry};
use crate::tmux::grid::Grid;

/// Output leads to a look at the foreground of a pane where an agent runs at most this often
/// (an agent draws all the time it works; what follows it is a shell's prompt). An agent that
/// exits after two seconds without drawing (the person quits it at its prompt) is looked at at
/// once; one that exits while it draws is seen gone within this. Every 1 s, these looks cost the
/// daemon about 0.05 % of a core on the 50-pane load (twins: 2 s took 0.026 ± 0.003 % off).
pub const LOOK_EVERY_AGENT: std::time::Duration = std::time::Duration::from_secs(2);
/// ... and of any other pane at most this often (a shell being typed into: the line's Enter
/// starts a program).
pub const LOOK_EVERY: std::time::Duration = std::time::Duration::from_millis(250);
/// How long after output its look comes, at the soonest: the shell echoes a typed command line
/// before it starts the program, and a script `exec`s its interpreter after it starts.
pub const LOOK_AFTER_OUTPUT: std::time::Duration = std::time::Duration::from_millis(100);

impl PaneEntry {
    /// A cheap look at the pane ([`crate::process::foreground::look`] through its kept files:
    /// two or three `pread`s): true when a full probe could find nothing new, because the
    /// foreground job, its leader's name and the first process's children are those seen last,
    /// and either this is not the `slow` timer or the pane's first process itself is in the
    /// foreground (another member of a job can `exec` a program, so the slow timer probes
    /// programs fully). A pane with a `THINKTERM_AGENT` value is always probed: its authority
    /// depends on time.
    pub fn unchanged(&mut self, now: Instant, slow: bool) -> bool {
        if self.looked_at.is_none() || self.signals.user_var().is_some() {
            return false;
        }
        let look = self.look_files.look(self.pid);
        let same = (!slow || self.fg.at_shell || self.fg.tpgid.is_none()) && look == self.look;
        if look.tpgid != self.fg.tpgid {
            // Another job: the old program's value goes now, before the probe answers.
            let after = look.tpgid.filter(|t| *t != self.pid);
            self.program_seen(program(&self.fg), after);
        }
        if same {
            self.looked_at = Some(now);
        }
        same
    }

    /// When output asks for a look at the foreground ([`Self::look_after_output`]):
    /// [`LOOK_AFTER_OUTPUT`] after the first output since the last look; while the pane keeps
    /// writing, at most every [`Self::look_every`]. A program started in a pane is seen this
    /// way, whatever session shows it: its shell echoed the line that started it, or it drew
    /// its screen. Output after that long a quiet is looked after at once, however recent the
    /// last look. Either way at the next instant of `grid`, the grid pipes are read on: the
    /// look then shares the wake-up of the reads (on the 50-pane load, looks at their own
    /// instants were a sixth of the daemon's wake-ups).
    pub fn look_due(&self, grid: Grid) -> Option<Instant> {
        let first = self.unlooked_output? + LOOK_AFTER_OUTPUT;
        Some(grid.at_or_after(match self.looked_at {
            Some(t) if !self.burst_began => first.max(t + self.look_every()),
            _ => first,
        }))
    }

    /// How often output leads to a look: [`LOOK_EVERY_AGENT`] where an agent (or another
    /// machine) is read, or a `THINKTERM_AGENT` value stands (its look is always a full probe),
    /// [`LOOK_EVERY`] elsewhere.
    pub(super) fn look_every(&self) -> std::time::Duration {
        if self.wants_capture() || self.signals.user_var().is_some() {
            LOOK_EVERY_AGENT
        } else {
            LOOK_EVERY
        }
    }

    /// The look output asked for, at `now` (its [`Self::look_due`]): true when a full probe is
    /// needed. Output that came too short a time before it to be covered asks for the next.
    pub fn look_after_output(&mut self, now: Instant) -> bool {
        let probe = !self.unchanged(now, false);
        self.looked_at = Some(now);
        self.burst_began = false;
        self.unlooked_output = self.last_output.filter(|t| *t + LOOK_AFTER_OUTPUT > now);
        probe
    }
}
