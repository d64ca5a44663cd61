//! The world subscription: with pane pipes, one control client watches the whole server. tmux
//! tells a control client of some changes only when they happen in its own session (a pane's
//! layout or size, the active pane of a window) and evaluates pane subscriptions only for its
//! own session's panes, so the observer subscribes, on a window of its one client, to a format
//! that loops over every session, window and pane (`#{S:#{W:#{P:…}}}`): each pane's id, first
//! process, current command, whether it is active, and its size. tmux expands it once a second
//! (as it does every subscription) and says so when the text changes; [`diff`] tells which
//! panes' commands changed and whether anything else did.
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
    let f = [
        "#{pane_id}",
        "#{pane_pid}",
        "#{pane_active}#{window_active}",
        "#{pane_width}x#{pane_height}",
        "#{pane_current_command}",
    ]
    .join(&SEP.to_string());
    format!("#{{S:#{{W:#{{P:{f}{RS}}}}}}}")
}

/// One pane's facts in the world text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaneFacts {
    /// Its first process.
    pub pid: u32,
    /// `pane_current_command`.
    pub command: String,
}

/// What the world text says: each pane's process facts, and the rest (which panes, where,
/// active, sizes) as one text to compare.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct World {
    /// Per pane.
    pub panes: BTreeMap<PaneId, PaneFacts>,
    /// Everything but the processes, in tmux's order.
    pub shape: String,
}

/// Reads the world text; unreadable records are skipped.
pub fn parse(value: &str) -> World {
    let mut w = World::default();
    for rec in value.split(RS).filter(|r| !r.is_empty()) {
        let f: Vec<&str> = rec.splitn(5, SEP).collect();
        let [id, pid, flags, size, command] = f[..] else {
            continue;
        };
        let Some(pane) = PaneId::parse(id) else {
            continue;
        };
        w.shape.push_str(id);
        w.shape.push(' ');
        w.shape.push_str(flags);
        w.shape.push(' ');
        w.shape.push_str(size);
        w.shape.push(RS);
        w.panes.insert(
            pane,
            PaneFacts {
                pid: pid.parse().unwrap_or(0),
                command: command.to_string(),
            },
        );
    }
    w
}

/// What changed from `old` to `new`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Panes whose first process or current command changed (panes in both).
    pub commands: Vec<PaneId>,
    /// Panes came or went, moved, changed size or active state.
    pub structure: bool,
}

/// Compares two world texts.
pub fn diff(old: &World, new: &World) -> Changes {
    let commands = new
        .panes
        .iter()
        .filter(|(id, f)| old.panes.get(id).is_some_and(|o| o != *f))
        .map(|(id, _)| *id)
        .collect();
    Changes {
        commands,
        structure: old.shape != new.shape,
    }
}

/// Whether `panes` (the inventory, as of the last list) already shows what the world text
/// shows of every pane: the same panes, each as active and of the same size. A structural change
/// that a re-list made since has already taken in needs no other.
pub fn agrees_with(world: &World, panes: &BTreeMap<PaneId, PaneInfo>) -> bool {
    let mut seen = 0;
    for rec in world.shape.split(RS).filter(|r| !r.is_empty()) {
        let mut f = rec.split(' ');
        let (Some(id), Some(flags), Some(size)) = (f.next(), f.next(), f.next()) else {
            return false;
        };
        let Some(p) = PaneId::parse(id).and_then(|id| panes.get(&id)) else {
            return false;
        };
        let want = format!("{}{}", u8::from(p.active), u8::from(p.window_active));
        if flags != want || size != format!("{}x{}", p.width, p.height) {
            return false;
        }
        seen += 1;
    }
    // A pane listed under several (grouped) sessions comes once per session: then the counts
    // differ, and the re-list decides.
    seen == panes.len()
}

use super::{Observed, Observer};
use crate::tmux::inventory::PaneInfo;

impl Observer {
    /// The world subscription's text changed: commands that changed are reported (and the
    /// inventory updated), anything else is a structural change. The first text is compared
    /// with the inventory.
    pub(super) fn on_world(&mut self, value: &str) {
        let new = parse(value);
        let (commands, structure) = match &self.world {
            Some(old) => {
                let c = diff(old, &new);
                (c.commands, c.structure)
            }
            None => {
                let changed = new
                    .panes
                    .iter()
                    .filter(|(id, f)| {
                        self.inventory
                            .panes
                            .get(id)
                            .is_some_and(|p| p.pid != f.pid || p.current_command != f.command)
                    })
                    .map(|(id, _)| *id)
                    .collect();
                (changed, false)
            }
        };
        for id in commands {
            if let (Some(p), Some(f)) = (self.inventory.panes.get_mut(&id), new.panes.get(&id)) {
                p.pid = f.pid;
                p.current_command.clone_from(&f.command);
                self.found.push_back(Observed::Command(id));
            }
        }
        if structure && !agrees_with(&new, &self.inventory.panes) {
            tracing::trace!("structure: world");
            self.found.push_back(Observed::Structure);
        }
        self.world = Some(new);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(recs: &[[&str; 5]]) -> String {
        recs.iter()
            .map(|r| format!("{}{RS}", r.join(&SEP.to_string())))
            .collect()
    }

    #[test]
    fn the_format_loops_over_every_pane_of_every_session() {
        let f = format();
        assert!(f.starts_with("#{S:#{W:#{P:#{pane_id}"), "{f}");
        assert!(f.ends_with("#{pane_current_command}\u{241E}}}}"), "{f}");
    }

    #[test]
    fn a_command_change_names_its_pane_and_a_new_pane_is_structure() {
        let a = parse(&text(&[
            ["%1", "10", "11", "80x24", "bash"],
            ["%2", "20", "01", "80x24", "claude"],
        ]));
        assert_eq!(a.panes[&PaneId(2)].command, "claude");
        let b = parse(&text(&[
            ["%1", "10", "11", "80x24", "sleep"],
            ["%2", "20", "01", "80x24", "claude"],
        ]));
        assert_eq!(
            diff(&a, &b),
            Changes {
                commands: vec![PaneId(1)],
                structure: false
            }
        );
        let respawned = parse(&text(&[
            ["%1", "10", "11", "80x24", "bash"],
            ["%2", "21", "01", "80x24", "claude"],
        ]));
        assert_eq!(diff(&a, &respawned).commands, vec![PaneId(2)]);
        let more = parse(&text(&[
            ["%1", "10", "11", "80x24", "bash"],
            ["%2", "20", "01", "80x24", "claude"],
            ["%3", "30", "00", "80x24", "bash"],
        ]));
        assert_eq!(
            diff(&a, &more),
            Changes {
                commands: vec![],
                structure: true
            }
        );
        let moved = parse(&text(&[
            ["%1", "10", "01", "80x24", "bash"],
            ["%2", "20", "11", "40x24", "claude"],
        ]));
        assert!(diff(&a, &moved).structure);
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
        let w = parse(&text(&[
            ["%1", "10", "11", "80x24", "bash"],
            ["%2", "20", "10", "40x24", "claude"],
        ]));
        let inv = |lines: &[String]| crate::tmux::inventory::parse_panes(lines);
        assert!(agrees_with(
            &w,
            &inv(&[listed(1, 1, 1, 80, 24), listed(2, 0, 1, 40, 24)])
        ));
        // Sizes, active flags, panes missing or more: the inventory is behind.
        for panes in [
            vec![listed(1, 1, 1, 80, 24), listed(2, 0, 1, 80, 24)],
            vec![listed(1, 1, 1, 80, 24), listed(2, 1, 1, 40, 24)],
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
    fn a_command_with_the_separator_or_garbage_records_do_not_confuse_it() {
        let w = parse(&format!(
            "junk{RS}%x{SEP}1{SEP}11{SEP}1x1{SEP}a{RS}{}",
            text(&[["%4", "40", "11", "80x24", "we␟ird"]])
        ));
        assert_eq!(w.panes.len(), 1);
        assert_eq!(w.panes[&PaneId(4)].command, "we␟ird");
    }
}
