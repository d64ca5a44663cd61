//! Re-lists of what changed only. A structural notification names the window, pane or session
//! it is about (`%unlinked-window-add @3`, `%layout-change @3`, a pipe closing on `%7`), and the
//! next re-list asks tmux for those panes (`list-panes -t @3`) instead of every pane of the
//! server (`list-panes -a`), and takes them into the inventory it has.
//!
//! Why: tmux expands each of the list's 21 fields for every pane, two of them from `/proc`.
//! Measured on a quiet tmux 3.3a server of 216 panes (200 commands in a row through a control
//! client, the server's CPU from `schedstat`): 7.5 ms a full list, 0.19 ms a list of the 40
//! sessions, 0.02 ms a command that does nothing. A server where sessions come and go (the
//! scale load: one made and one killed every 2 s) was re-listed about once a second. One
//! command per target, not one filtered `list-panes -a -f`: tmux evaluates a filter for every
//! pane of the server, 0.4 ms for each condition in it.
//!
//! What each change lists: a window added, its whole session (`list-panes -s -t @3`: with
//! `new-window -a` the session's later windows move up, and nothing says so); a window closed,
//! it, then the sessions that showed it once a list finds it gone (`renumber-windows`); a
//! rename, a layout change or a new active pane, the window; the pane the world subscription or
//! a pipe names, its window; a session's current window, the session. Sessions, clients and
//! `focus-events` are listed every time (cheap).
//!
//! Exactness: a full list names each pane under the first session (in tmux's order) that shows
//! it; a targeted list names the session tmux finds best for the window. The two agree when no
//! session is grouped and no window is linked into two sessions, so a scoped list is taken in
//! only when no session has a group and no pane it lists was known under another session or
//! window; a pane whose session the list lacks and no target covered (killed while the list was
//! on its way) asks for its window next. The list is a full one as before when something asks
//! for it (a change that names nothing, the daemon's own commands, a failed list), when there
//! are more than [`MAX_TARGETS`] targets, and when the last full list is [`FULL_EVERY`] old: a
//! safety net for what tmux tells no control client (`swap-window`, a command's new name).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::ids::{PaneId, SessionId, WindowId};
use crate::tmux::command::quote;
use crate::tmux::connection::CommandError;
use crate::tmux::inventory::{list_panes_format, parse_panes, PaneInfo, SessionInfo};

/// The longest a scoped re-list may follow the last full one.
pub const FULL_EVERY: Duration = Duration::from_secs(30);
/// The most targets one scoped re-list lists (more: a full list, which costs about as much).
pub const MAX_TARGETS: usize = 12;

/// What a structural change asks to list again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Target {
    /// A window's panes.
    Window(WindowId),
    /// Every pane of the session that shows a window (`list-panes -s -t @W`): a new window
    /// may have moved the session's others (`new-window -a`), and nothing else says so.
    SessionOf(WindowId),
    /// A pane, with the rest of its window.
    Pane(PaneId),
    /// Every pane of a session.
    Session(SessionId),
}

impl Target {
    /// The command that lists it, with the inventory's fields.
    pub fn command(&self) -> String {
        let (flags, target) = match self {
            Target::Window(w) => ("", w.to_string()),
            Target::SessionOf(w) => ("-s ", w.to_string()),
            Target::Pane(p) => ("", p.to_string()),
            Target::Session(s) => ("-s ", s.to_string()),
        };
        format!(
            "list-panes {flags}-t {} -F {}",
            quote(&target),
            quote(&list_panes_format())
        )
    }

    /// Whether its list would show `p` if `p` were still there.
    fn covers(&self, p: &PaneInfo) -> bool {
        match self {
            Target::Window(w) | Target::SessionOf(w) => p.window == *w,
            Target::Pane(id) => p.id == *id,
            Target::Session(s) => p.session == *s,
        }
    }
}

/// What the next re-list covers.
#[derive(Debug, Default)]
pub struct Scope {
    /// Everything (a change that names nothing).
    all: bool,
    targets: BTreeSet<Target>,
    /// When the last full list was taken in.
    last_full: Option<Instant>,
    /// Re-lists planned: full, scoped.
    counts: (u64, u64),
}

/// How the next re-list lists panes.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    /// `list-panes -a`.
    Full,
    /// These targets' panes only (none: sessions and clients only).
    Scoped(Vec<Target>),
}

impl Scope {
    /// A change of `target`'s panes; `None`: a change that names nothing.
    pub fn add(&mut self, target: Option<Target>) {
        match target {
            Some(t) => {
                self.targets.insert(t);
            }
            None => self.all = true,
        }
    }

    /// What the re-list starting now lists; the scope starts afresh. Full when anything asked
    /// for it, when there are no panes to scope to yet, when a session is grouped, when there
    /// are too many targets, or when the last full list is [`FULL_EVERY`] old.
    pub fn take(
        &mut self,
        now: Instant,
        panes: &BTreeMap<PaneId, PaneInfo>,
        sessions: &BTreeMap<SessionId, SessionInfo>,
    ) -> Plan {
        let all = std::mem::take(&mut self.all);
        let targets = std::mem::take(&mut self.targets);
        let full = all
            || panes.is_empty()
            || targets.len() > MAX_TARGETS
            || sessions.values().any(|s| s.group.is_some())
            || self
                .last_full
                .is_none_or(|t| now.saturating_duration_since(t) >= FULL_EVERY);
        if full {
            self.counts.0 += 1;
            Plan::Full
        } else {
            self.counts.1 += 1;
            Plan::Scoped(targets.into_iter().collect())
        }
    }

    /// Re-lists planned so far: full, scoped.
    pub fn counts(&self) -> (u64, u64) {
        self.counts
    }

    /// A full list was taken in at `now`.
    pub fn full_done(&mut self, now: Instant) {
        self.last_full = Some(now);
    }
}

/// What one target's command answered: its panes, or `None` when tmux no longer has it.
pub fn answered(
    reply: Result<Vec<String>, CommandError>,
) -> Result<Option<BTreeMap<PaneId, PaneInfo>>, CommandError> {
    match reply {
        Ok(lines) => Ok(Some(parse_panes(&lines))),
        // "can't find window: @3" (pane, session): it is gone.
        Err(CommandError::Tmux(m)) if m.contains("can't find") => Ok(None),
        Err(e) => Err(e),
    }
}

/// Why a scoped list was not taken in.
#[derive(Debug, PartialEq, Eq)]
pub enum Unmerged {
    /// It cannot be taken in exactly (a pane listed under another session or window than the
    /// inventory's, a grouped session): a full list is needed.
    Inexact,
    /// Panes of these windows, which no target covered, belong to a session the list no longer
    /// has (killed while the list was on its way; its windows' notifications come next): list
    /// those windows.
    Orphaned(Vec<WindowId>),
}

/// A scoped list taken in.
#[derive(Debug, PartialEq, Eq)]
pub struct Merged {
    /// The inventory's panes now.
    pub panes: BTreeMap<PaneId, PaneInfo>,
    /// Sessions that lost a window and that the list did not cover as a whole: with
    /// `renumber-windows` their other windows moved, so they are listed next (the one place
    /// that asks for them: the window's close can come before or after the list that finds
    /// its panes gone).
    pub shrunk: Vec<SessionId>,
}

/// The inventory's panes after a scoped list: `old`, less every pane a target covered or a
/// listed window no longer holds, plus what was listed; each pane's session name as `sessions`
/// has it.
pub fn merge(
    old: &BTreeMap<PaneId, PaneInfo>,
    sessions: &BTreeMap<SessionId, SessionInfo>,
    parts: Vec<(Target, Option<BTreeMap<PaneId, PaneInfo>>)>,
) -> Result<Merged, Unmerged> {
    if sessions.values().any(|s| s.group.is_some()) {
        return Err(Unmerged::Inexact);
    }
    let mut out = old.clone();
    let mut listed = BTreeMap::new();
    let whole: BTreeSet<SessionId> = parts
        .iter()
        .filter_map(|(t, _)| match t {
            Target::Session(s) => Some(*s),
            _ => None,
        })
        .collect();
    for (target, panes) in parts {
        out.retain(|_, p| !target.covers(p));
        for (id, p) in panes.into_iter().flatten() {
            if old
                .get(&id)
                .is_some_and(|o| o.session != p.session || o.window != p.window)
            {
                return Err(Unmerged::Inexact);
            }
            listed.insert(id, p);
        }
    }
    // Each command lists whole windows: a pane of a listed window that is not in it is gone.
    let windows: BTreeSet<WindowId> = listed.values().map(|p| p.window).collect();
    out.retain(|_, p| !windows.contains(&p.window));
    out.extend(listed);
    let mut orphaned = BTreeSet::new();
    for p in out.values_mut() {
        match sessions.get(&p.session) {
            Some(s) => p.session_name.clone_from(&s.name),
            None => {
                orphaned.insert(p.window);
            }
        }
    }
    if !orphaned.is_empty() {
        return Err(Unmerged::Orphaned(orphaned.into_iter().collect()));
    }
    let left: BTreeSet<WindowId> = out.values().map(|p| p.window).collect();
    let shrunk: BTreeSet<SessionId> = old
        .values()
        .filter(|p| !left.contains(&p.window) && !whole.contains(&p.session))
        .map(|p| p.session)
        .collect();
    Ok(Merged {
        panes: out,
        shrunk: shrunk.into_iter().collect(),
    })
}

use super::{Observed, Observer};

impl Observer {
    /// Something structural changed about `target` (`None`: about what, nothing says): the next
    /// re-list covers it, and the daemon hears of it (it asks for that re-list).
    pub(super) fn structure(&mut self, target: Option<Target>) {
        self.scope.add(target);
        self.found.push_back(Observed::Structure);
    }

    /// [`Observer::structure`], as what an event reports.
    pub(super) fn structure_of(&mut self, target: Option<Target>) -> Option<Observed> {
        self.scope.add(target);
        Some(Observed::Structure)
    }

    /// The next re-list lists every pane (the daemon changed something no notification tells
    /// of exactly, or a re-list failed).
    pub fn want_full_relist(&mut self) {
        self.scope.add(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pane(id: u32, session: u32, window: u32) -> PaneInfo {
        PaneInfo {
            id: PaneId(id),
            session: SessionId(session),
            session_name: format!("s{session}"),
            window: WindowId(window),
            window_index: 0,
            window_name: "sh".into(),
            window_active: true,
            index: 0,
            active: true,
            pid: 100 + id,
            tty: format!("/dev/pts/{id}"),
            title: String::new(),
            current_command: "sh".into(),
            current_path: "/".into(),
            width: 80,
            height: 24,
            alternate_on: false,
            dead: false,
            in_mode: false,
            pipe: false,
            pipe_mark: String::new(),
        }
    }

    fn panes(list: &[(u32, u32, u32)]) -> BTreeMap<PaneId, PaneInfo> {
        list.iter()
            .map(|&(id, s, w)| (PaneId(id), pane(id, s, w)))
            .collect()
    }

    fn sessions(ids: &[u32]) -> BTreeMap<SessionId, SessionInfo> {
        ids.iter()
            .map(|&id| {
                (
                    SessionId(id),
                    SessionInfo {
                        id: SessionId(id),
                        name: format!("s{id}"),
                        group: None,
                        attached: 0,
                    },
                )
            })
            .collect()
    }

    fn ids(p: &BTreeMap<PaneId, PaneInfo>) -> Vec<u32> {
        p.keys().map(|id| id.0).collect()
    }

    #[test]
    fn a_new_session_s_window_is_added_and_a_killed_one_s_panes_go() {
        // Session 1 (window 1: panes 1, 2) was killed; session 3 (window 5: pane 9) is new.
        let old = panes(&[(0, 0, 0), (1, 1, 1), (2, 1, 1)]);
        let parts = vec![
            (Target::Window(WindowId(1)), None),
            (Target::Session(SessionId(1)), None),
            (Target::Window(WindowId(5)), Some(panes(&[(9, 3, 5)]))),
            (Target::Pane(PaneId(9)), Some(panes(&[(9, 3, 5)]))),
        ];
        let got = merge(&old, &sessions(&[0, 3]), parts).expect("taken in");
        assert_eq!(ids(&got.panes), [0, 9]);
        assert_eq!(got.panes[&PaneId(9)].window, WindowId(5));
        // Session 1 was listed as a whole (and is gone): nothing more to ask.
        assert_eq!(got.shrunk, []);
    }

    #[test]
    fn a_window_found_gone_through_its_pane_asks_for_its_session() {
        // Window 1 of session 0 closed; the list covered its pane only (its pipe closed before
        // tmux said the window closed): session 0's other windows may have been renumbered.
        let old = panes(&[(0, 0, 0), (1, 0, 1), (2, 0, 2)]);
        let parts = vec![(Target::Pane(PaneId(1)), None)];
        let got = merge(&old, &sessions(&[0]), parts).expect("taken in");
        assert_eq!(ids(&got.panes), [0, 2]);
        assert_eq!(got.shrunk, [SessionId(0)]);
        // Listed as a whole, the session asks for nothing more.
        let parts = vec![
            (Target::Pane(PaneId(1)), None),
            (
                Target::Session(SessionId(0)),
                Some(panes(&[(0, 0, 0), (2, 0, 2)])),
            ),
        ];
        let got = merge(&old, &sessions(&[0]), parts).expect("taken in");
        assert_eq!(got.shrunk, []);
    }

    #[test]
    fn a_pane_gone_from_a_listed_window_goes_and_the_others_stay_as_listed() {
        // Window 1 had panes 1, 2, 3; pane 2 was killed; pane 3 grew.
        let old = panes(&[(0, 0, 0), (1, 0, 1), (2, 0, 1), (3, 0, 1)]);
        let mut listed = panes(&[(1, 0, 1), (3, 0, 1)]);
        listed.get_mut(&PaneId(3)).expect("pane").width = 90;
        let got = merge(
            &old,
            &sessions(&[0]),
            vec![(Target::Pane(PaneId(1)), Some(listed))],
        )
        .expect("taken in");
        assert_eq!(ids(&got.panes), [0, 1, 3]);
        assert_eq!(got.panes[&PaneId(3)].width, 90);
        assert_eq!(got.shrunk, [], "no window closed");
    }

    #[test]
    fn panes_no_target_covers_are_kept_as_they_were_with_their_session_s_new_name() {
        let mut old = panes(&[(0, 0, 0), (1, 1, 1)]);
        old.get_mut(&PaneId(1)).expect("pane").title = "kept".into();
        let mut s = sessions(&[0, 1]);
        s.get_mut(&SessionId(1)).expect("session").name = "renamed".into();
        let got = merge(&old, &s, vec![]).expect("taken in").panes;
        assert_eq!(got[&PaneId(1)].title, "kept");
        assert_eq!(got[&PaneId(1)].session_name, "renamed");
    }

    #[test]
    fn what_a_scoped_list_cannot_tell_exactly_asks_for_a_full_one() {
        let old = panes(&[(0, 0, 0), (1, 1, 1)]);
        // A pane listed under another session (a window linked into two sessions).
        let moved = vec![(Target::Window(WindowId(1)), Some(panes(&[(1, 0, 1)])))];
        assert_eq!(
            merge(&old, &sessions(&[0, 1]), moved),
            Err(Unmerged::Inexact)
        );
        // A grouped session.
        let mut grouped = sessions(&[0, 1]);
        grouped.get_mut(&SessionId(1)).expect("session").group = Some("g".into());
        assert_eq!(merge(&old, &grouped, vec![]), Err(Unmerged::Inexact));
    }

    #[test]
    fn a_pane_whose_session_went_while_the_list_was_on_its_way_asks_for_its_window() {
        // Session 1 was killed after the re-list's targets were chosen: no target covers its
        // window 1, and the sessions listed lack it.
        let old = panes(&[(0, 0, 0), (1, 1, 1), (2, 1, 1)]);
        assert_eq!(
            merge(&old, &sessions(&[0]), vec![]),
            Err(Unmerged::Orphaned(vec![WindowId(1)]))
        );
    }

    #[test]
    fn the_plan_is_full_first_then_scoped_until_something_asks_for_all() {
        let t0 = Instant::now();
        let (p, s) = (panes(&[(0, 0, 0)]), sessions(&[0]));
        let mut scope = Scope::default();
        scope.add(Some(Target::Window(WindowId(3))));
        assert_eq!(scope.take(t0, &p, &s), Plan::Full, "no full list yet");
        scope.full_done(t0);
        scope.add(Some(Target::Window(WindowId(3))));
        scope.add(Some(Target::Pane(PaneId(4))));
        scope.add(Some(Target::Window(WindowId(3))));
        assert_eq!(
            scope.take(t0, &p, &s),
            Plan::Scoped(vec![Target::Window(WindowId(3)), Target::Pane(PaneId(4))])
        );
        assert_eq!(scope.take(t0, &p, &s), Plan::Scoped(vec![]), "taken");
        scope.add(None);
        assert_eq!(scope.take(t0, &p, &s), Plan::Full);
        for i in 0..=MAX_TARGETS as u32 {
            scope.add(Some(Target::Pane(PaneId(i))));
        }
        assert_eq!(scope.take(t0, &p, &s), Plan::Full, "too many targets");
        assert_eq!(
            scope.take(t0 + FULL_EVERY, &p, &s),
            Plan::Full,
            "safety net"
        );
        assert_eq!(
            scope.take(t0, &BTreeMap::new(), &s),
            Plan::Full,
            "nothing to scope to"
        );
    }

    #[test]
    fn each_target_s_command_names_it_quoted() {
        let w = Target::Window(WindowId(3)).command();
        assert!(w.starts_with("list-panes -t @3 -F '#{session_id}"), "{w}");
        assert!(Target::SessionOf(WindowId(3))
            .command()
            .starts_with("list-panes -s -t @3 -F "));
        let s = Target::Session(SessionId(2)).command();
        // Bare, tmux would expand `$2` as an environment variable.
        assert!(s.starts_with("list-panes -s -t '$2' -F "), "{s}");
        assert!(Target::Pane(PaneId(7))
            .command()
            .starts_with("list-panes -t %7 -F "));
    }

    #[test]
    fn a_target_tmux_cannot_find_is_gone_and_other_errors_fail_the_list() {
        let gone = answered(Err(CommandError::Tmux("can't find window: @3".into())));
        assert_eq!(gone.expect("gone is an answer"), None);
        assert!(answered(Err(CommandError::Closed)).is_err());
        assert!(answered(Err(CommandError::Tmux("unknown flag -Z".into()))).is_err());
    }
}
