//! The daemon's panes by id, with the earliest deadline of each kept in order, so that a wake-up
//! finds the next deadline and the panes due without walking every pane.
//!
//! A pane's deadlines (its tracker's debounce, its flood gate's hold, the look its output asked
//! for) change only when the pane is changed, and every change goes through this map: a pane
//! handed out mutably ([`PaneMap::get_mut`], [`PaneMap::insert`]) is marked, and its deadline is
//! computed again before the next question about deadlines. Reads go through `Deref` to the
//! map itself. Measured on the load benchmark's scale run before this: the walk of 216 panes'
//! deadlines at each of about 100 wake-ups a second was 4 % of the daemon's CPU.

use std::collections::{BTreeSet, HashMap};
use std::ops::Deref;
use std::time::Instant;

use super::panes::PaneEntry;
use crate::ids::PaneId;
use crate::tmux::grid::Grid;

/// The panes, and when each is next due.
#[derive(Debug)]
pub struct PaneMap {
    /// The grid pipes are read on, where the looks that a pane's writing asks for land
    /// ([`PaneEntry::look_due`]).
    grid: Grid,
    map: HashMap<PaneId, PaneEntry>,
    /// Each pane's earliest deadline as last computed (panes with one only)...
    due: HashMap<PaneId, Instant>,
    /// ... and the same in order.
    order: BTreeSet<(Instant, PaneId)>,
    /// Panes changed since their deadline was computed (may repeat).
    changed: Vec<PaneId>,
}

impl Deref for PaneMap {
    type Target = HashMap<PaneId, PaneEntry>;

    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

/// A pane's earliest deadline.
fn deadline(p: &PaneEntry, grid: Grid) -> Option<Instant> {
    [
        p.tracker.next_deadline(),
        p.flood.next_deadline(),
        p.look_due(grid),
    ]
    .into_iter()
    .flatten()
    .min()
}

impl Default for PaneMap {
    fn default() -> PaneMap {
        PaneMap::new(Grid::off())
    }
}

impl PaneMap {
    /// No panes yet; their looks land on `grid`.
    pub fn new(grid: Grid) -> PaneMap {
        PaneMap {
            grid,
            map: HashMap::new(),
            due: HashMap::new(),
            order: BTreeSet::new(),
            changed: Vec::new(),
        }
    }

    /// When `pane`'s output asks for a look at its foreground ([`PaneEntry::look_due`]).
    pub fn look_due(&self, pane: &PaneId) -> Option<Instant> {
        self.map.get(pane)?.look_due(self.grid)
    }

    /// The pane, to change (its deadline is computed again before the next question).
    pub fn get_mut(&mut self, id: &PaneId) -> Option<&mut PaneEntry> {
        let p = self.map.get_mut(id)?;
        self.changed.push(*id);
        Some(p)
    }

    /// Adds or replaces a pane; returns the one replaced.
    pub fn insert(&mut self, id: PaneId, entry: PaneEntry) -> Option<PaneEntry> {
        self.changed.push(id);
        self.map.insert(id, entry)
    }

    /// Removes a pane.
    pub fn remove(&mut self, id: &PaneId) -> Option<PaneEntry> {
        if let Some(at) = self.due.remove(id) {
            self.order.remove(&(at, *id));
        }
        self.map.remove(id)
    }

    /// Removes every pane.
    pub fn clear(&mut self) {
        self.map.clear();
        self.due.clear();
        self.order.clear();
        self.changed.clear();
    }

    /// The earliest deadline of any pane.
    pub fn next_deadline(&mut self) -> Option<Instant> {
        self.refresh();
        self.order.first().map(|(at, _)| *at)
    }

    /// The panes with a deadline at or before `t`, earliest first.
    pub fn due(&mut self, t: Instant) -> Vec<PaneId> {
        self.refresh();
        self.order
            .iter()
            .take_while(|(at, _)| *at <= t)
            .map(|(_, id)| *id)
            .collect()
    }

    /// Computes the deadlines of the panes changed since.
    fn refresh(&mut self) {
        for id in std::mem::take(&mut self.changed) {
            let now = self.map.get(&id).and_then(|p| deadline(p, self.grid));
            let was = match now {
                Some(at) => self.due.insert(id, at),
                None => self.due.remove(&id),
            };
            if was != now {
                if let Some(at) = was {
                    self.order.remove(&(at, id));
                }
                if let Some(at) = now {
                    self.order.insert((at, id));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pane::PaneInput;
    use std::time::Duration;

    /// A pane changed through the map is due at its new deadline; one removed is not; the
    /// earliest comes first; what the walk of every pane would find, the index finds.
    #[test]
    fn deadlines_follow_every_change_made_through_the_map() {
        let t0 = Instant::now();
        let mut m = PaneMap::new(Grid::new(t0, Duration::from_micros(87_500)));
        let walk = |m: &PaneMap, t: Instant| {
            let mut v: Vec<(Instant, PaneId)> = m
                .values()
                .zip(m.keys())
                .filter_map(|(p, id)| deadline(p, m.grid).filter(|d| *d <= t).map(|d| (d, *id)))
                .collect();
            v.sort();
            v.into_iter().map(|(_, id)| id).collect::<Vec<_>>()
        };
        for i in 0..3 {
            m.insert(PaneId(i), PaneEntry::new(100 + i, t0, 0));
        }
        let base = m.next_deadline();
        let far = t0 + Duration::from_secs(3600);
        assert_eq!(m.due(far), walk(&m, far));

        // Output asks for a look a moment later: the pane is due then, and first.
        let later = t0 + Duration::from_millis(5);
        m.get_mut(&PaneId(1)).unwrap().wrote_unseen(later);
        let look = m.look_due(&PaneId(1)).expect("a look is due");
        assert_eq!(m.next_deadline(), Some(base.map_or(look, |b| b.min(look))));
        assert!(m.due(look).contains(&PaneId(1)));
        assert_eq!(m.due(look), walk(&m, look));
        assert!(
            !m.due(look - Duration::from_millis(1)).contains(&PaneId(1)),
            "not before its deadline"
        );

        // Its look done, the deadline moves on (or goes).
        m.get_mut(&PaneId(1))
            .unwrap()
            .look_after_output(look + Duration::from_millis(200));
        assert_eq!(m.due(far), walk(&m, far));

        // A tick of every tracker is seen too.
        for i in 0..3 {
            let p = m.get_mut(&PaneId(i)).unwrap();
            p.tracker.on_input(later, PaneInput::Tick);
        }
        assert_eq!(m.due(far), walk(&m, far));

        // A removed pane is never due.
        m.get_mut(&PaneId(2)).unwrap().wrote_unseen(later);
        m.remove(&PaneId(2));
        assert!(!m.due(far).contains(&PaneId(2)));
        assert_eq!(m.due(far), walk(&m, far));

        m.clear();
        assert_eq!(m.next_deadline(), None);
        assert!(m.due(far).is_empty());
    }
}
