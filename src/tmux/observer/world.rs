//! The world subscription: with pane pipes, one control client watches the whole server. tmux
//! tells a control client of a window's layout, and so of its panes' sizes, only when the
//! window is in the client's own session, and evaluates pane subscriptions only for its own
//! session's panes, so the observer subscribes, on a window of its one client, to a format
//! that loops over every session, window and pane (`#{S:#{W:#{P:…}}}`): each pane's id, first
//! process and size. tmux expands it once a second (as it does every subscription) and says so
//! when the text changes; [`diff`] tells which panes' first process changed (`respawn-pane`,
//! which writes nothing) and whether anything else did. Its order is tmux's walk (sessions,
//! their windows by index, their panes by index), so it also shows panes or windows that traded
//! places, which nothing tells a client of another session.
//!
//! Not in it: which pane and which window are active. tmux 3.3a sends `%window-pane-changed`
//! and `%session-window-changed` to every control client, whatever its session (checked in its
//! `control-notify.c` and on this machine), and the observer re-lists their window or session.
//! Every key costs the expansion about 1.3 µs a pane on this machine, mostly tmux looking the
//! name up in six option trees before its own table: the two flags were a third of the keys
//! (a quiet server of 496 one-pane windows: 0.48 % of a core with them, 0.33 % without).
//!
//! Not in it either: the pane's current command. tmux reads it from `/proc` for every pane at
//! every expansion, which was half of what the expansion cost (about 7.8 µs a pane, 0.2 % of a
//! core at 200 idle panes); the daemon sees a new program itself, by looking at the pane's
//! foreground after its output (`daemon::panes`). A re-list still reads tmux's name.
//!
//! A window subscription is looked up by id and skipped for a client without a session (unlike
//! session and all-panes subscriptions, which crash tmux 3.2 – 3.5a then: see the observer's
//! `sync_subscriptions`).

use std::collections::BTreeMap;

use crate::ids::PaneId;
use crate::tmux::command::SEP;

/// The subscription's name.
pub const SUB_WORLD: &str = "thinkterm_world";

/// Between two panes' records.
const RS: char = '\u{241E}';

/// The format: one record per pane (per session that shows it), fields joined with [`SEP`].
pub fn format() -> String {
    let f = ["#{pane_id}", "#{pane_pid}", "#{pane_width}x#{pane_height}"].join(&SEP.to_string());
    format!("#{{S:#{{W:#{{P:{f}{RS}}}}}}}")
}

/// What the world text says: each pane's first process, and the rest (which panes, where,
/// their sizes) as one text to compare.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct World {
    /// Each pane's first process.
    pub pids: BTreeMap<PaneId, u32>,
    /// Everything but the processes, in tmux's order.
    pub shape: String,
}

/// Reads the world text; unreadable records are skipped.
pub fn parse(value: &str) -> World {
    let mut w = World::default();
    for rec in value.split(RS).filter(|r| !r.is_empty()) {
        let f: Vec<&str> = rec.split(SEP).collect();
        let [id, pid, size] = f[..] else {
            continue;
        };
        let Some(pane) = PaneId::parse(id) else {
            continue;
        };
        w.shape.push_str(id);
        w.shape.push(' ');
        w.shape.push_str(size);
        w.shape.push(RS);
        w.pids.insert(pane, pid.parse().unwrap_or(0));
    }
    w
}

/// What changed from `old` to `new`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Panes whose first process changed (panes in both).
    pub respawned: Vec<PaneId>,
    /// Panes came or went, moved or changed size.
    pub structure: bool,
}

/// Compares two world texts.
pub fn diff(old: &World, new: &World) -> Changes {
    let respawned = new
        .pids
        .iter()
        .filter(|(id, pid)| old.pids.get(id).is_some_and(|o| o != *pid))
        .map(|(id, _)| *id)
        .collect();
    Changes {
        respawned,
        structure: old.shape != new.shape,
    }
}

/// The world text's records: each pane's id and its size, as [`parse`] kept them (in tmux's
/// order, a pane shown by several sessions once per session).
fn records(world: &World) -> impl Iterator<Item = (PaneId, &str)> {
    world.shape.split(RS).filter_map(|rec| {
        let (id, size) = rec.split_once(' ')?;
        Some((PaneId::parse(id)?, size))
    })
}

/// Whether the inventory shows `p` as large as a record says.
fn shown_as(p: &PaneInfo, size: &str) -> bool {
    size == format!("{}x{}", p.width, p.height)
}

/// The panes `panes` places otherwise than the world text's order: tmux walks each session's
/// windows by index and each window's panes by index, so within a session the inventory's
/// (window index, pane index) order is the world's. A pane swapped with another of its size
/// that is not active (`swap-pane -d`), or a window swapped with another (`swap-window`), is
/// told to no control client of another session, and only the order shows it.
fn misplaced(world: &World, panes: &BTreeMap<PaneId, PaneInfo>) -> Vec<PaneId> {
    let mut at: HashMap<PaneId, usize> = HashMap::new();
    for (i, (id, _)) in records(world).enumerate() {
        at.entry(id).or_insert(i);
    }
    let mut by_session: BTreeMap<SessionId, Vec<(u32, u32, usize, PaneId)>> = BTreeMap::new();
    for p in panes.values() {
        if let Some(&i) = at.get(&p.id) {
            let placed = (p.window_index, p.index, i, p.id);
            by_session.entry(p.session).or_default().push(placed);
        }
    }
    let mut out = Vec::new();
    for mut listed in by_session.into_values() {
        listed.sort_unstable();
        let mut walked = listed.clone();
        walked.sort_unstable_by_key(|&(_, _, i, _)| i);
        out.extend(
            listed
                .iter()
                .zip(&walked)
                .filter(|(l, w)| l.3 != w.3)
                .map(|(l, _)| l.3),
        );
    }
    out
}

/// Whether `panes` (the inventory, as of the last list) already shows what the world text
/// shows of every pane: the same panes, each of the same size and in the world's order. A
/// structural change that a re-list made since has already taken in needs no other.
pub fn agrees_with(world: &World, panes: &BTreeMap<PaneId, PaneInfo>) -> bool {
    // A pane listed under several (grouped) sessions comes once per session: then the counts
    // differ, and the re-list decides.
    records(world).count() == panes.len() && disagreeing(world, panes).is_empty()
}

/// The panes the world text shows otherwise than `panes` does (come, gone, another size or
/// place): what a re-list must cover to agree with it again. Empty when it disagrees in nothing a pane
/// can name (the panes' order, a pane shown twice).
pub fn disagreeing(world: &World, panes: &BTreeMap<PaneId, PaneInfo>) -> Vec<PaneId> {
    let mut out: std::collections::BTreeSet<PaneId> = records(world)
        .filter(|(id, size)| !panes.get(id).is_some_and(|p| shown_as(p, size)))
        .map(|(id, _)| id)
        .collect();
    out.extend(panes.keys().filter(|id| !world.pids.contains_key(id)));
    out.extend(misplaced(world, panes));
    out.into_iter().collect()
}

use super::{Observed, Observer, Target};
use crate::ids::SessionId;
use crate::tmux::inventory::PaneInfo;
use std::collections::HashMap;

impl Observer {
    /// The world subscription's text changed: a pane whose first process changed is reported
    /// (the inventory updated, and a re-list asked for, which reads tmux's name of its new
    /// program), anything else is a structural change. The first text is compared with the
    /// inventory in everything it says.
    pub(super) fn on_world(&mut self, value: &str) {
        let new = parse(value);
        let (respawned, structure) = match &self.world {
            Some(old) => {
                let c = diff(old, &new);
                (c.respawned, c.structure)
            }
            None => {
                let changed = new
                    .pids
                    .iter()
                    .filter(|(id, pid)| {
                        self.inventory.panes.get(id).is_some_and(|p| p.pid != **pid)
                    })
                    .map(|(id, _)| *id)
                    .collect();
                // The first text has nothing before it to differ from: it differs from the
                // inventory wherever the first list is behind (a pane killed or resized in a
                // session the client does not show, between the list and the first expansion).
                (changed, true)
            }
        };
        let mut targets = Vec::new();
        for id in respawned {
            if let (Some(p), Some(pid)) = (self.inventory.panes.get_mut(&id), new.pids.get(&id)) {
                p.pid = *pid;
                self.found.push_back(Observed::Command(id));
                // The re-list reads tmux's name of its new program.
                targets.push(Some(Target::Pane(id)));
            }
        }
        if structure && !agrees_with(&new, &self.inventory.panes) {
            let panes = disagreeing(&new, &self.inventory.panes);
            if panes.is_empty() {
                targets.push(None);
            }
            targets.extend(panes.into_iter().map(|id| Some(Target::Pane(id))));
        }
        if !targets.is_empty() {
            tracing::trace!(?targets, "structure: world");
            for t in targets {
                self.scope.add(t);
            }
            self.found.push_back(Observed::Structure);
        }
        self.world = Some(new);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(recs: &[[&str; 3]]) -> String {
        recs.iter()
            .map(|r| format!("{}{RS}", r.join(&SEP.to_string())))
            .collect()
    }

    #[test]
    fn the_format_loops_over_every_pane_of_every_session_and_reads_no_command() {
        let f = format();
        assert!(f.starts_with("#{S:#{W:#{P:#{pane_id}"), "{f}");
        assert!(f.ends_with("#{pane_height}\u{241E}}}}"), "{f}");
        assert!(!f.contains("command"), "{f}");
        // Which pane and window are active come by notification, to every control client.
        assert!(!f.contains("active"), "{f}");
    }

    #[test]
    fn a_new_first_process_names_its_pane_and_a_new_pane_is_structure() {
        let a = parse(&text(&[["%1", "10", "80x24"], ["%2", "20", "80x24"]]));
        assert_eq!(a.pids[&PaneId(2)], 20);
        assert_eq!(diff(&a, &a.clone()), Changes::default());
        let respawned = parse(&text(&[["%1", "10", "80x24"], ["%2", "21", "80x24"]]));
        assert_eq!(
            diff(&a, &respawned),
            Changes {
                respawned: vec![PaneId(2)],
                structure: false
            }
        );
        let more = parse(&text(&[
            ["%1", "10", "80x24"],
            ["%2", "20", "80x24"],
            ["%3", "30", "80x24"],
        ]));
        assert_eq!(
            diff(&a, &more),
            Changes {
                respawned: vec![],
                structure: true
            }
        );
        let resized = parse(&text(&[["%1", "10", "80x24"], ["%2", "20", "40x24"]]));
        assert!(diff(&a, &resized).structure);
        let swapped = parse(&text(&[["%2", "20", "80x24"], ["%1", "10", "80x24"]]));
        assert!(diff(&a, &swapped).structure);
    }

    /// A `list-panes -a` line of the inventory's fields for a pane.
    fn listed(id: u32, window_active: u8, active: u8, w: u32, h: u32) -> String {
        [
            "$0".to_string(),
            "s".into(),
            format!("@{id}"),
            "0".into(),
            window_active.to_string(),
            format!("%{id}"),
            "0".into(),
            active.to_string(),
            "10".into(),
            "/dev/pts/1".into(),
            "bash".into(),
            w.to_string(),
            h.to_string(),
            "0".into(),
            "0".into(),
            "0".into(),
            "w".into(),
            "/".into(),
            "1".into(),
            "".into(),
            "t".into(),
        ]
        .join(&SEP.to_string())
    }

    #[test]
    fn a_change_a_re_list_already_took_in_needs_no_other() {
        let w = parse(&text(&[["%1", "10", "80x24"], ["%2", "20", "40x24"]]));
        let inv = |lines: &[String]| crate::tmux::inventory::parse_panes(lines);
        assert!(agrees_with(
            &w,
            &inv(&[listed(1, 1, 1, 80, 24), listed(2, 0, 1, 40, 24)])
        ));
        // Another active pane or window is not the world's to tell: the notifications' re-lists
        // take it in.
        assert!(agrees_with(
            &w,
            &inv(&[listed(1, 0, 0, 80, 24), listed(2, 1, 1, 40, 24)])
        ));
        // Sizes, panes missing or more: the inventory is behind.
        for panes in [
            vec![listed(1, 1, 1, 80, 24), listed(2, 0, 1, 80, 24)],
            vec![listed(1, 1, 1, 80, 24)],
            vec![
                listed(1, 1, 1, 80, 24),
                listed(2, 0, 1, 40, 24),
                listed(3, 0, 1, 40, 24),
            ],
        ] {
            assert!(!agrees_with(&w, &inv(&panes)), "{panes:?}");
        }
    }

    #[test]
    fn the_panes_the_inventory_shows_otherwise_are_named_for_the_re_list() {
        let w = parse(&text(&[["%1", "10", "80x24"], ["%2", "20", "40x24"]]));
        let inv = |lines: &[String]| crate::tmux::inventory::parse_panes(lines);
        let agreeing = inv(&[listed(1, 1, 1, 80, 24), listed(2, 0, 1, 40, 24)]);
        assert_eq!(disagreeing(&w, &agreeing), []);
        // %2 resized, %1 as it was.
        let resized = inv(&[listed(1, 1, 1, 80, 24), listed(2, 0, 1, 80, 24)]);
        assert_eq!(disagreeing(&w, &resized), [PaneId(2)]);
        // %2 is new; %3 is gone.
        let behind = inv(&[listed(1, 1, 1, 80, 24), listed(3, 0, 1, 40, 24)]);
        assert_eq!(disagreeing(&w, &behind), [PaneId(2), PaneId(3)]);
    }

    /// [`listed`] with the pane in window `@window` at index `window_index`, as pane `index`.
    fn placed(id: u32, window: u32, window_index: u32, index: u32) -> String {
        let line = listed(id, 0, 0, 80, 24);
        let mut f: Vec<String> = line.split(SEP).map(str::to_string).collect();
        f[2] = format!("@{window}");
        f[3] = window_index.to_string();
        f[6] = index.to_string();
        f.join(&SEP.to_string())
    }

    #[test]
    fn panes_in_another_order_than_their_indexes_are_named_for_the_re_list() {
        let inv = |lines: &[String]| crate::tmux::inventory::parse_panes(lines);
        // Window 1 (index 0) holds %1 and %2; window 2 (index 1) holds %3.
        let known = inv(&[placed(1, 1, 0, 0), placed(2, 1, 0, 1), placed(3, 2, 1, 0)]);
        let w = |order: [&str; 3]| parse(&text(&order.map(|id| [id, "1", "80x24"])));
        let walked = w(["%1", "%2", "%3"]);
        assert!(agrees_with(&walked, &known));
        assert_eq!(disagreeing(&walked, &known), []);
        // %1 and %2 swapped places in their window: their indexes are stale.
        let swapped = w(["%2", "%1", "%3"]);
        assert!(!agrees_with(&swapped, &known));
        assert_eq!(disagreeing(&swapped, &known), [PaneId(1), PaneId(2)]);
        // The windows swapped indexes: every pane's window index is stale.
        let windows = w(["%3", "%1", "%2"]);
        assert_eq!(
            disagreeing(&windows, &known),
            [PaneId(1), PaneId(2), PaneId(3)]
        );
    }

    #[test]
    fn garbage_records_are_skipped() {
        let w = parse(&format!(
            "junk{RS}%x{SEP}1{SEP}1x1{RS}%5{SEP}1{SEP}1x1{SEP}extra{RS}{}",
            text(&[["%4", "40", "80x24"]])
        ));
        assert_eq!(w.pids.len(), 1);
        assert_eq!(w.pids[&PaneId(4)], 40);
    }
}
