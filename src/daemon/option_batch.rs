//! Status-line options that no person's client shows, held back and sent together. tmux answers
//! every `set-option` by redrawing every attached client whole (`options_push_changes` →
//! `server_redraw_client`), so a mark changing in a session nobody looks at still costs the
//! person's terminal a full screen. tmux runs the commands of one read in one turn of its loop and
//! redraws once after them: options sent together cost one redraw. So the options of windows,
//! panes and sessions no client shows wait here (the latest value of each), and go out at most
//! [`BATCH_EVERY`] after the first of them (at the read grid's instant at or after it, where the
//! daemon wakes anyway while agents draw), or with the next spinner frame (a redraw anyway), or
//! at once when a person's client comes to show something else. An option that is sent at once
//! (it became visible) drops its waiting value, so an older value never follows a newer one.
//!
//! Pure: it takes `now` and answers with the commands to send.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::status_line::Argv;
use crate::tmux::grid::Grid;

/// The longest an option nobody sees waits. A person never sees it late (it goes at once when
/// their client comes to show it); what reads it otherwise (a script's `show-options`, a
/// choose-tree format) may. Each batch costs tmux a redraw of every client (about 0.9 ms on
/// the 50-pane load, whose four agents in sessions nobody looks at changed state 24 times a
/// minute): at 1 s nearly every change was a batch of its own.
pub const BATCH_EVERY: Duration = Duration::from_secs(5);

/// The options waiting, by what they set (the command without its value).
#[derive(Debug)]
pub struct OptionBatch {
    pending: BTreeMap<Argv, Argv>,
    due: Option<Instant>,
    /// The grid their deadline lands on.
    grid: Grid,
}

/// What an option command sets: everything but its value.
fn key(argv: &Argv) -> Argv {
    argv[..argv.len().saturating_sub(1)].to_vec()
}

impl OptionBatch {
    /// Nothing waiting; deadlines land on `grid`.
    pub fn new(grid: Grid) -> Self {
        OptionBatch {
            pending: BTreeMap::new(),
            due: None,
            grid,
        }
    }

    /// Holds `argv` back (replacing a waiting value of the same option).
    pub fn defer(&mut self, argv: Argv, now: Instant) {
        self.pending.insert(key(&argv), argv);
        let grid = self.grid;
        self.due
            .get_or_insert_with(|| grid.at_or_after(now + BATCH_EVERY));
    }

    /// `argv` is sent at once: a waiting value of the same option is dropped.
    pub fn sent(&mut self, argv: &Argv) {
        self.pending.remove(&key(argv));
        if self.pending.is_empty() {
            self.due = None;
        }
    }

    /// When the waiting options are due.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.due
    }

    /// Everything waiting, to send now.
    pub fn take(&mut self) -> Vec<Argv> {
        self.due = None;
        std::mem::take(&mut self.pending).into_values().collect()
    }

    /// Forgets everything (another tmux server).
    pub fn reset(&mut self) {
        *self = OptionBatch::new(self.grid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(target: &str, value: &str) -> Argv {
        ["set-option", "-w", "-t", target, "@thinkterm_mark", value]
            .map(String::from)
            .to_vec()
    }

    #[test]
    fn the_latest_value_of_each_option_waits_at_most_a_batch_period() {
        let t = Instant::now();
        let mut b = OptionBatch::new(Grid::off());
        assert_eq!(b.next_deadline(), None);
        b.defer(set("@1", "running"), t);
        b.defer(set("@2", "idle"), t + Duration::from_millis(300));
        b.defer(set("@1", "attention"), t + Duration::from_millis(600));
        // Due a period after the first, not pushed back by later ones.
        assert_eq!(b.next_deadline(), Some(t + BATCH_EVERY));
        let sent = b.take();
        assert_eq!(sent, vec![set("@1", "attention"), set("@2", "idle")]);
        assert_eq!(b.next_deadline(), None);
        assert!(b.take().is_empty());
    }

    #[test]
    fn an_option_sent_at_once_drops_its_waiting_value() {
        let t = Instant::now();
        let mut b = OptionBatch::new(Grid::off());
        b.defer(set("@1", "running"), t);
        b.defer(set("@2", "idle"), t);
        // @1 became visible and was sent with a newer value: the older one must not follow.
        b.sent(&set("@1", "attention"));
        assert_eq!(b.take(), vec![set("@2", "idle")]);
        b.defer(set("@3", "done"), t);
        b.sent(&set("@3", "idle"));
        assert_eq!(b.next_deadline(), None, "nothing left to wait for");
        b.defer(set("@4", "done"), t);
        b.reset();
        assert!(b.take().is_empty());
    }

    #[test]
    fn the_batch_goes_out_at_the_grid_instant_at_or_after_its_period() {
        let t = Instant::now();
        let grid = Grid::new(t, Duration::from_millis(150));
        let mut b = OptionBatch::new(grid);
        b.defer(set("@1", "running"), t + Duration::from_millis(10));
        // 5.01 s is between the instants 4.95 and 5.1 s: the later one.
        assert_eq!(b.next_deadline(), Some(t + Duration::from_millis(5100)));
        b.reset();
        b.defer(set("@1", "idle"), t + Duration::from_millis(50));
        assert_eq!(
            b.next_deadline(),
            Some(t + Duration::from_millis(5100)),
            "the grid outlives a reset"
        );
    }
}
