//! Capture rounds: which panes' screens are captured when, and what their screens say. A pane
//! that was quiet is captured a little after it writes (its redraw settles); panes that keep
//! drawing are captured at most every `capture_interval_ms`, together, on the read grid, so that
//! one wake-up reads their output and sends the captures and one more takes in the replies. The
//! daemon goes on taking in notifications while a round is in flight.

use std::time::{Duration, Instant};

use super::{min_opt, Daemon};
use crate::ids::PaneId;
use crate::tmux::connection::CommandError;
use crate::tmux::grid::Grid;
use crate::tmux::observer::Captures;

/// The screens of the round in flight, once they are all in (never, with none in flight).
pub(super) async fn captured(
    c: &mut Option<(Instant, Captures)>,
) -> Vec<(PaneId, Result<String, CommandError>)> {
    match c {
        Some((_, f)) => f.await,
        None => std::future::pending().await,
    }
}

/// Which of the dirty panes `todo` a capture round at `round` takes, and when the next round is
/// due for the rest. A pane is due `every` after the round that last captured it, rounded to the
/// nearest instant of the read grid `reads`: panes that keep drawing are captured in the same
/// rounds, on the instants their output is read at, and one reply wakes the daemon for all.
fn capture_round(
    todo: &[PaneId],
    round: Instant,
    every: Duration,
    reads: Grid,
    captured_at: impl Fn(&PaneId) -> Option<Instant>,
) -> (Vec<PaneId>, Option<Instant>) {
    let due_at = |id: &PaneId| captured_at(id).map(|t| reads.nearest(t, every));
    let (take, wait): (Vec<PaneId>, Vec<PaneId>) = todo
        .iter()
        .partition(|id| due_at(id).is_none_or(|t| t <= round));
    (take, wait.iter().filter_map(due_at).min())
}

impl Daemon {
    /// Arms a capture round for `pane`. A pane that was quiet is captured `capture_delay_ms`
    /// after its output, so that a redraw has settled. A pane that keeps drawing (captured
    /// within its last two intervals) is captured when its interval ends, on the read grid: at
    /// once if it has ended, in the wake-up that read the output.
    pub(super) fn schedule_capture(&mut self, pane: PaneId) {
        let now = Instant::now();
        let delay = Duration::from_millis(self.config.config.capture_delay_ms);
        let every = Duration::from_millis(self.config.config.capture_interval_ms);
        let due = self
            .panes
            .get(&pane)
            .and_then(|p| p.captured_at)
            .map(|t| self.pacing.reads().nearest(t, every));
        let at = match due {
            Some(d) if now < d + every => d.max(now),
            _ => self.pacing.grid.at_or_after(now + delay),
        };
        self.capture_at = min_opt(self.capture_at, Some(at));
    }

    /// Starts capturing every pane that wrote output since its last capture and has an agent
    /// ([`Daemon::on_captured`] classifies them). Other dirty panes are forgotten: nothing reads
    /// their screens.
    pub(super) fn capture_dirty(&mut self, round: Instant) {
        let Some(obs) = &mut self.observer else {
            return;
        };
        let dirty: Vec<PaneId> = obs.dirty().iter().copied().collect();
        let mut todo: Vec<PaneId> = self
            .panes
            .iter()
            .filter(|(_, p)| p.needs_capture)
            .map(|(id, _)| *id)
            .collect();
        for id in dirty {
            match self.panes.get(&id) {
                Some(p) if p.wants_capture() => todo.push(id),
                _ => obs.clear_dirty(id),
            }
        }
        todo.sort();
        todo.dedup();
        // A pane that keeps drawing is captured at most every capture_interval_ms; the rest of
        // its output waits for a later round (it stays dirty).
        let every = Duration::from_millis(self.config.config.capture_interval_ms);
        let (todo, later) = capture_round(&todo, round, every, self.pacing.reads(), |id| {
            self.panes.get(id).and_then(|p| p.captured_at)
        });
        if later.is_some() {
            self.capture_at = min_opt(self.capture_at, later);
        }
        if !todo.is_empty() {
            self.capturing = Some((round, obs.start_captures(&todo)));
        }
    }

    /// A capture round's screens arrived: classify them.
    pub(super) fn on_captured(&mut self, screens: Vec<(PaneId, Result<String, CommandError>)>) {
        let Some((round, _)) = self.capturing.take() else {
            return;
        };
        let now = Instant::now();
        for (id, r) in screens {
            let screen = match r {
                Ok(s) => s,
                Err(e) => {
                    tracing::debug!(pane = %id, error = %e, "capture failed");
                    continue;
                }
            };
            let Some(p) = self.panes.get_mut(&id) else {
                continue;
            };
            p.needs_capture = false;
            p.captured_at = Some(round);
            let fx = p.classify(now, &self.catalog, screen);
            self.on_pane_effects(id, fx);
        }
        self.flush_changes();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn panes_drawing_at_once_fall_into_the_same_rounds() {
        let e = Instant::now();
        let reads = Grid::new(e, ms(100));
        let (a, b, c) = (PaneId(1), PaneId(2), PaneId(3));
        // a was captured on a read instant, b half a period later, c never.
        let last = |id: &PaneId| match id.0 {
            1 => Some(e + ms(1000)),
            2 => Some(e + ms(1050)),
            _ => None,
        };
        let (take, next) = capture_round(&[a, b, c], e + ms(1060), ms(100), reads, last);
        assert_eq!(take, [c]);
        assert_eq!(next, Some(e + ms(1100)));
        // At that instant both are due: one round, one reply for both.
        let (take, next) = capture_round(&[a, b], e + ms(1100), ms(100), reads, last);
        assert_eq!(take, [a, b]);
        assert_eq!(next, None);
    }

    #[test]
    fn without_a_grid_the_interval_is_exact() {
        let e = Instant::now();
        let last = |_: &PaneId| Some(e);
        let (take, next) = capture_round(&[PaneId(1)], e + ms(99), ms(100), Grid::off(), last);
        assert!(take.is_empty());
        assert_eq!(next, Some(e + ms(100)));
        let (take, _) = capture_round(&[PaneId(1)], e + ms(100), ms(100), Grid::off(), last);
        assert_eq!(take, [PaneId(1)]);
    }
}
