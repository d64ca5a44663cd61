//! The panel's pure model: the daemon's last snapshot with events applied, the view options,
//! what is selected, expanded and open. It does no I/O except the worktree cache, which reads
//! git's files when a snapshot arrives (never while drawing). Time comes in as `now_ms`.

use std::cell::Cell;
use std::collections::HashSet;

use crate::ids::PaneId;
use crate::ipc::schema::{MachineRow, PaneRow, Reply, StateEvent, WindowMark, WindowRow};
use crate::state::AgentState;

use super::options::{ShowKind, ViewOptions};
use super::worktree::{Worktree, WorktreeCache};

/// Where a card sits in the state grouping (S5.7), most urgent first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    /// Blocked or stopped on an error.
    Attention,
    /// Working.
    Running,
    /// Finished, result not yet seen.
    Done,
    /// Ready for input.
    Idle,
    /// No state.
    Unknown,
}

impl Category {
    /// All categories in display order.
    pub const ALL: [Category; 5] = [
        Category::Attention,
        Category::Running,
        Category::Done,
        Category::Idle,
        Category::Unknown,
    ];

    /// The group heading.
    pub fn heading(self) -> &'static str {
        match self {
            Category::Attention => "Needs attention",
            Category::Running => "Running",
            Category::Done => "Done",
            Category::Idle => "Idle",
            Category::Unknown => "Unknown",
        }
    }

    /// The show checkbox that filters it (unknown cards are always shown).
    pub fn show_kind(self) -> Option<ShowKind> {
        match self {
            Category::Attention => Some(ShowKind::Attention),
            Category::Running => Some(ShowKind::Running),
            Category::Done => Some(ShowKind::Done),
            Category::Idle => Some(ShowKind::Idle),
            Category::Unknown => None,
        }
    }
}

/// The category of one pane.
pub fn category(p: &PaneRow) -> Category {
    match p.state {
        Some(AgentState::Blocked | AgentState::Error) => Category::Attention,
        Some(AgentState::Working) => Category::Running,
        _ if p.unseen_result => Category::Done,
        Some(AgentState::Idle) => Category::Idle,
        None => Category::Unknown,
    }
}

/// A card's identity: its machine (as the snapshot names it) and its pane. Pane ids of two
/// machines can be the same.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CardKey {
    /// The machine (None when the daemon names none).
    pub machine: Option<String>,
    /// The pane.
    pub pane: PaneId,
}

impl CardKey {
    /// The key of a pane's card.
    pub fn of(p: &PaneRow) -> CardKey {
        CardKey {
            machine: p.machine.clone(),
            pane: p.pane,
        }
    }
}

/// The state of the connection to the daemon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// First connection not made yet.
    Connecting,
    /// Subscribed.
    Connected,
    /// Lost; trying again.
    Reconnecting,
}

/// Which screen is showing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Screen {
    /// The cards.
    List,
    /// Needs-attention and done windows (S4.2).
    Notifications,
    /// The selected card in full (S5.10).
    Detail,
}

/// Everything the panel shows.
#[derive(Debug)]
pub struct PanelModel {
    /// Every pane of the last snapshot, events applied.
    pub panes: Vec<PaneRow>,
    /// Every window of the last snapshot, events applied.
    pub windows: Vec<WindowRow>,
    /// This computer and each connected machine.
    pub machines: Vec<MachineRow>,
    /// The view options (saved).
    pub options: ViewOptions,
    /// The pane the popup was opened from.
    pub origin: Option<PaneId>,
    /// The selected card (so it stays put when cards move).
    pub selected: Option<CardKey>,
    /// The selected row of the notifications section.
    pub notice_cursor: usize,
    /// Cards whose subtasks are unfolded.
    pub expanded: HashSet<CardKey>,
    /// The screen showing.
    pub screen: Screen,
    /// The view menu's cursor when it is open.
    pub menu: Option<usize>,
    /// A one-line message (reload result, errors).
    pub status: Option<String>,
    /// Connection state.
    pub link: Link,
    /// Whether a snapshot has arrived since the start.
    pub has_snapshot: bool,
    /// A reload was asked and its answer not yet shown.
    pub reload_pending: bool,
    /// Worktree answers per folder.
    pub worktrees: WorktreeCache,
    /// First list line shown (kept by the renderer so the view does not jump).
    pub scroll: Cell<usize>,
}

impl PanelModel {
    /// A model with no data yet.
    pub fn new(options: ViewOptions, origin: Option<PaneId>) -> Self {
        PanelModel {
            panes: Vec::new(),
            windows: Vec::new(),
            machines: Vec::new(),
            options,
            origin,
            selected: None,
            notice_cursor: 0,
            expanded: HashSet::new(),
            screen: Screen::List,
            menu: None,
            status: None,
            link: Link::Connecting,
            has_snapshot: false,
            reload_pending: false,
            worktrees: WorktreeCache::default(),
            scroll: Cell::new(0),
        }
    }

    /// Takes one message from the daemon.
    pub fn apply(&mut self, reply: Reply, now_ms: u64) {
        match reply {
            Reply::Snapshot {
                panes,
                windows,
                machines,
                ..
            } => {
                self.machines = machines;
                self.snapshot(panes, windows, now_ms)
            }
            Reply::Machine(row) => {
                if let Some(m) = self.machines.iter_mut().find(|m| m.name == row.name) {
                    *m = row;
                }
            }
            Reply::Event(e) => self.event(&e),
            Reply::Done { message } => {
                if self.reload_pending {
                    self.reload_pending = false;
                    self.status = Some(message);
                }
            }
            Reply::Error { message } => {
                self.reload_pending = false;
                self.status = Some(format!("Error: {message}"));
            }
            // A snapshot follows at once and replaces what was missed; the rest is for other
            // sidecars.
            Reply::Value { .. }
            | Reply::Lagged { .. }
            | Reply::Notify(_)
            | Reply::Sound { .. }
            | Reply::Machines { .. } => {}
        }
    }

    fn snapshot(&mut self, panes: Vec<PaneRow>, windows: Vec<WindowRow>, now_ms: u64) {
        self.panes = panes;
        self.windows = windows;
        self.has_snapshot = true;
        self.link = Link::Connected;
        let local = self.local_machine().map(str::to_string);
        for p in self
            .panes
            .iter()
            .filter(|p| is_agent(p) && !p.process_less && !remote(p, local.as_deref()))
        {
            self.worktrees.refresh(&p.current_path, now_ms);
        }
        let used: HashSet<&str> = self.panes.iter().map(|p| p.current_path.as_str()).collect();
        self.worktrees
            .retain(|path| used.contains(path.to_string_lossy().as_ref()));
        let live: HashSet<CardKey> = self.panes.iter().map(CardKey::of).collect();
        self.expanded.retain(|p| live.contains(p));
        self.fix_selection();
    }

    fn event(&mut self, e: &StateEvent) {
        let Some(p) = self
            .panes
            .iter_mut()
            .find(|p| p.pane == e.pane && p.machine == e.machine)
        else {
            return; // a pane the next snapshot will bring
        };
        p.state = e.new;
        p.source = e.source;
        p.rule = e.rule.clone();
        p.message = e.message.clone();
        p.kind = e.kind;
        p.progress = e.progress;
        p.since_ms = e.time_ms;
        p.window_mark = e.window_mark;
        if e.agent.is_some() {
            p.agent = e.agent.clone();
        }
        p.unseen_result = match e.new {
            Some(AgentState::Working | AgentState::Blocked) => false,
            _ => e.window_mark == WindowMark::Done,
        };
        if let Some(w) = self
            .windows
            .iter_mut()
            .find(|w| w.window == e.window && w.machine == e.machine)
        {
            if w.mark != e.window_mark {
                w.mark = e.window_mark;
                w.since_ms = e.time_ms;
            }
            if e.message.is_some() {
                w.message = e.message.clone();
            }
        }
        self.fix_selection();
    }

    /// Panes where an agent runs (S5.1), on the machines not hidden.
    pub fn agents(&self) -> impl Iterator<Item = &PaneRow> {
        let hidden = &self.options.hidden_machines;
        self.agents_all().filter(move |p| {
            p.machine
                .as_ref()
                .is_none_or(|m| !hidden.iter().any(|h| h == m))
        })
    }

    /// Panes where an agent runs, on every machine.
    pub fn agents_all(&self) -> impl Iterator<Item = &PaneRow> {
        self.panes.iter().filter(|p| is_agent(p))
    }

    /// A pane of this computer by id (the first with that id when no machine is named).
    pub fn pane(&self, id: PaneId) -> Option<&PaneRow> {
        let local = self.local_machine();
        self.panes
            .iter()
            .find(|p| p.pane == id && !remote(p, local))
    }

    /// A card's pane.
    pub fn card(&self, key: &CardKey) -> Option<&PaneRow> {
        self.panes
            .iter()
            .find(|p| p.pane == key.pane && p.machine == key.machine)
    }

    /// The selected card's pane, when it is still shown.
    pub fn selected_pane(&self) -> Option<&PaneRow> {
        self.selected.as_ref().and_then(|k| self.card(k))
    }

    /// This computer's name, as the snapshot gives it.
    pub fn local_machine(&self) -> Option<&str> {
        self.machines
            .iter()
            .find(|m| m.local)
            .map(|m| m.name.as_str())
    }

    /// Whether a pane is on a connected machine (not this computer).
    pub fn is_remote(&self, p: &PaneRow) -> bool {
        remote(p, self.local_machine())
    }

    /// Whether the machines section of the view menu shows (S5.8): agents are on several
    /// machines, or one is hidden.
    pub fn machines_menu(&self) -> bool {
        let mut on: Vec<&str> = self
            .agents_all()
            .filter_map(|p| p.machine.as_deref())
            .collect();
        on.sort_unstable();
        on.dedup();
        on.len() > 1 || !self.options.hidden_machines.is_empty()
    }

    /// The card to raise: the active pane of the window the popup was opened from (S5.6).
    pub fn raised(&self) -> Option<CardKey> {
        let origin = self.pane(self.origin?)?;
        self.panes
            .iter()
            .find(|p| p.window == origin.window && p.machine == origin.machine && p.active)
            .map(CardKey::of)
    }

    /// The worktree line for a pane, from the cache (S5.5): none for a pane inside ssh or on
    /// another machine.
    pub fn worktree(&self, p: &PaneRow) -> Option<&Worktree> {
        if p.process_less || self.is_remote(p) {
            return None;
        }
        self.worktrees.get(&p.current_path)
    }

    /// Needs-attention and done windows, most urgent first (S4.2).
    pub fn notifications(&self) -> Vec<&WindowRow> {
        let rank = |m: WindowMark| match m {
            WindowMark::Error => 0,
            WindowMark::Attention => 1,
            WindowMark::Done => 2,
            _ => 3,
        };
        let mut rows: Vec<&WindowRow> = self.windows.iter().filter(|w| rank(w.mark) < 3).collect();
        // Within a mark, whoever has waited longest comes first.
        rows.sort_by_key(|w| {
            (
                rank(w.mark),
                w.since_ms,
                w.session_name.clone(),
                w.window_index,
            )
        });
        rows
    }

    /// The pane to go to for a notifications row.
    pub fn notice_pane(&self, w: &WindowRow) -> Option<CardKey> {
        let pane = w.pane.or_else(|| {
            let in_window = || {
                self.panes
                    .iter()
                    .filter(|p| p.window == w.window && p.machine == w.machine)
            };
            in_window()
                .find(|p| is_agent(p))
                .or_else(|| in_window().next())
                .map(|p| p.pane)
        })?;
        Some(CardKey {
            machine: w.machine.clone(),
            pane,
        })
    }

    /// Cards shown, in display order.
    pub fn visible_cards(&self) -> Vec<CardKey> {
        super::grouping::entries(self)
            .iter()
            .filter_map(|e| match e {
                super::grouping::Entry::Card(p) => Some(CardKey::of(p)),
                _ => None,
            })
            .collect()
    }

    /// Moves the selection by `delta` cards (or rows in the notifications section).
    pub fn move_selection(&mut self, delta: isize) {
        if self.screen == Screen::Notifications {
            let n = self.notifications().len();
            self.notice_cursor = step(self.notice_cursor, delta, n);
            return;
        }
        let cards = self.visible_cards();
        let at = self
            .selected
            .as_ref()
            .and_then(|s| cards.iter().position(|c| c == s))
            .unwrap_or(0);
        self.selected = cards.get(step(at, delta, cards.len())).cloned();
    }

    /// Keeps the selection on a shown card: first the raised card, else the first one.
    pub fn fix_selection(&mut self) {
        let cards = self.visible_cards();
        if self.selected.as_ref().is_some_and(|s| cards.contains(s)) {
            return;
        }
        self.selected = self
            .raised()
            .filter(|r| cards.contains(r))
            .or_else(|| cards.first().cloned());
        let n = self.notifications().len();
        self.notice_cursor = self.notice_cursor.min(n.saturating_sub(1));
    }

    /// Folds or unfolds the selected card's subtasks.
    pub fn toggle_subtasks(&mut self) {
        if let Some(id) = self.selected.clone() {
            if !self.expanded.remove(&id) {
                self.expanded.insert(id);
            }
        }
    }

    /// Whether something on screen moves (a spinner or a shimmer): only then a timer runs.
    pub fn animating(&self) -> bool {
        let working = |p: &PaneRow| p.state == Some(AgentState::Working);
        match self.screen {
            Screen::List => self
                .visible_cards()
                .iter()
                .filter_map(|id| self.card(id))
                .any(working),
            Screen::Detail => self.selected_pane().is_some_and(working),
            Screen::Notifications => false,
        }
    }
}

/// Whether `p` is on another machine than `local` (this computer's name).
pub fn remote(p: &PaneRow, local: Option<&str>) -> bool {
    match (&p.machine, local) {
        (Some(m), Some(l)) => m != l,
        _ => false,
    }
}

/// Whether an agent was recognised in this pane.
pub fn is_agent(p: &PaneRow) -> bool {
    p.agent.is_some() || p.agent_name.is_some()
}

fn step(at: usize, delta: isize, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let max = len as isize - 1;
    (at as isize + delta).clamp(0, max) as usize
}
