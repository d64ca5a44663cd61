//! The per-window rollup (S4): one mark per tmux window from its panes' published statuses, the
//! sidecar's own `done` record (running, then stopped while nobody looked), seen tracking, and the
//! sound and notification triggers of S6.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::ids::{PaneId, WindowId};
use crate::pane::PaneStatus;
use crate::state::WindowMark;
use crate::state::{AgentState, Sound};

/// Work shorter than this does not ring the `done` sound (S6.1).
pub const DONE_SOUND_MIN_WORK: Duration = Duration::from_secs(5);

/// An input to the rollup.
#[derive(Clone, Debug, PartialEq)]
pub enum RollupInput {
    /// A pane's published status (new pane, or changed); a pane that moved windows moves here.
    Pane {
        /// Its window.
        window: WindowId,
        /// The pane.
        pane: PaneId,
        /// Its status now.
        status: PaneStatus,
    },
    /// The pane closed.
    PaneGone(PaneId),
    /// The window closed.
    WindowGone(WindowId),
    /// Whether the window is looked at now (the current window of an attached, focused,
    /// non-control client), and its active pane. Send on every change of either.
    Looked {
        /// The window.
        window: WindowId,
        /// Looked at now.
        looked: bool,
        /// Its active pane.
        active_pane: Option<PaneId>,
    },
    /// Someone typed or clicked in the window: clears `done`.
    TypedIn(WindowId),
}

/// Why a notification may be due (S6.6; the edge decides background and throttling).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotifyReason {
    /// The window became done.
    Finished,
    /// A pane began waiting.
    Waiting,
    /// The window stopped on an error.
    Error,
}

/// What the daemon must do after a rollup input.
#[derive(Clone, Debug, PartialEq)]
pub enum RollupEffect {
    /// The window's mark changed: set `@thinkterm_mark` / `@thinkterm_icon`.
    MarkChanged {
        /// The window.
        window: WindowId,
        /// Before.
        old: WindowMark,
        /// After.
        new: WindowMark,
    },
    /// Play a sound (rings even for a looked-at window, S6.2).
    Sound {
        /// The window.
        window: WindowId,
        /// Which.
        sound: Sound,
    },
    /// A notification trigger.
    Notify {
        /// The window.
        window: WindowId,
        /// Why.
        reason: NotifyReason,
        /// The most urgent (or the waiting) pane.
        pane: Option<PaneId>,
        /// Its agent.
        agent: Option<String>,
        /// What it reported.
        message: Option<String>,
    },
    /// This pane's result was seen: call `records.mark_seen()` and feed `PaneInput::Seen`.
    MarkSeen(PaneId),
    /// The set of done windows changed: save it ([`super::persist::save`]).
    DoneSetChanged,
}

#[derive(Clone, Debug)]
struct Window {
    panes: BTreeMap<PaneId, PaneStatus>,
    mark: WindowMark,
    since: Instant,
    done: bool,
    looked: bool,
    active: Option<PaneId>,
    work_started: Option<Instant>,
    seen_sent: BTreeSet<PaneId>,
}

/// A read-only view of one window.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowView {
    /// Its mark.
    pub mark: WindowMark,
    /// When the mark last changed.
    pub since: Instant,
    /// Number of panes with an agent.
    pub agents: u32,
    /// The most urgent pane.
    pub pane: Option<PaneId>,
    /// What the most urgent pane reported.
    pub message: Option<String>,
}

/// Urgency of a pane, higher first: error, blocked, working, unseen result, idle, unknown.
fn urgency(s: &PaneStatus) -> u8 {
    match s.state {
        Some(AgentState::Error) => 5,
        Some(AgentState::Blocked) => 4,
        Some(AgentState::Working) => 3,
        _ if s.has_result() => 2,
        Some(AgentState::Idle) => 1,
        None => 0,
    }
}

impl Window {
    fn new(now: Instant) -> Self {
        Window {
            panes: BTreeMap::new(),
            mark: WindowMark::Idle,
            since: now,
            done: false,
            looked: false,
            active: None,
            work_started: None,
            seen_sent: BTreeSet::new(),
        }
    }

    fn has(&self, st: AgentState) -> bool {
        self.panes.values().any(|p| p.state == Some(st))
    }

    fn unseen_result(&self) -> bool {
        self.panes
            .iter()
            .any(|(id, p)| p.has_result() && !(self.looked && self.active == Some(*id)))
    }

    fn live_mark(&self) -> WindowMark {
        if self.has(AgentState::Error) {
            WindowMark::Error
        } else if self.has(AgentState::Blocked) {
            WindowMark::Attention
        } else if self.has(AgentState::Working) {
            WindowMark::Running
        } else if self.done || self.unseen_result() {
            WindowMark::Done
        } else {
            WindowMark::Idle
        }
    }

    fn urgent(&self) -> Option<(PaneId, &PaneStatus)> {
        self.panes
            .iter()
            .max_by_key(|(id, p)| (urgency(p), std::cmp::Reverse(**id)))
            .map(|(id, p)| (*id, p))
    }
}

/// Every window's rollup.
#[derive(Clone, Debug, Default)]
pub struct Rollup {
    windows: BTreeMap<WindowId, Window>,
    pane_window: BTreeMap<PaneId, WindowId>,
}

impl Rollup {
    /// No windows yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Marks these windows done (from the state file after a restart).
    pub fn restore_done(&mut self, now: Instant, windows: impl IntoIterator<Item = WindowId>) {
        for w in windows {
            let win = self.windows.entry(w).or_insert_with(|| Window::new(now));
            win.done = true;
            win.mark = win.live_mark();
        }
    }

    /// The windows carrying the done record now (to save).
    pub fn done_windows(&self) -> BTreeSet<WindowId> {
        let done = self.windows.iter().filter(|(_, w)| w.done);
        done.map(|(id, _)| *id).collect()
    }

    /// A window's mark (idle when unknown).
    pub fn mark(&self, window: WindowId) -> WindowMark {
        self.windows
            .get(&window)
            .map_or(WindowMark::Idle, |w| w.mark)
    }

    /// Every known window and its mark.
    pub fn marks(&self) -> impl Iterator<Item = (WindowId, WindowMark)> + '_ {
        self.windows.iter().map(|(id, w)| (*id, w.mark))
    }

    /// A view of one window.
    pub fn window(&self, window: WindowId) -> Option<WindowView> {
        let w = self.windows.get(&window)?;
        let urgent = w.urgent();
        Some(WindowView {
            mark: w.mark,
            since: w.since,
            agents: w.panes.values().filter(|p| p.agent.is_some()).count() as u32,
            pane: urgent.map(|(id, _)| id),
            message: urgent.and_then(|(_, p)| p.report.msg.clone()),
        })
    }

    /// Takes one input at `now` and returns what to do, in order.
    pub fn on_input(&mut self, now: Instant, input: RollupInput) -> Vec<RollupEffect> {
        let mut fx = Vec::new();
        let window = match input {
            RollupInput::Pane {
                window,
                pane,
                status,
            } => {
                if let Some(old_w) = self.pane_window.insert(pane, window) {
                    if old_w != window {
                        if let Some(w) = self.windows.get_mut(&old_w) {
                            w.panes.remove(&pane);
                        }
                        self.update(now, old_w, &mut fx);
                    }
                }
                let w = self
                    .windows
                    .entry(window)
                    .or_insert_with(|| Window::new(now));
                let was = w.panes.get(&pane).and_then(|p| p.state);
                if status.state == Some(AgentState::Blocked) && was != Some(AgentState::Blocked) {
                    fx.push(RollupEffect::Sound {
                        window,
                        sound: Sound::Waiting,
                    });
                    fx.push(RollupEffect::Notify {
                        window,
                        reason: NotifyReason::Waiting,
                        pane: Some(pane),
                        agent: status.agent.clone(),
                        message: status.report.msg.clone(),
                    });
                }
                if !status.has_result() {
                    w.seen_sent.remove(&pane);
                }
                w.panes.insert(pane, status);
                window
            }
            RollupInput::PaneGone(pane) => {
                let Some(window) = self.pane_window.remove(&pane) else {
                    return fx;
                };
                if let Some(w) = self.windows.get_mut(&window) {
                    w.panes.remove(&pane);
                    w.seen_sent.remove(&pane);
                }
                window
            }
            RollupInput::WindowGone(window) => {
                if let Some(w) = self.windows.remove(&window) {
                    self.pane_window.retain(|_, win| *win != window);
                    if w.done {
                        fx.push(RollupEffect::DoneSetChanged);
                    }
                }
                return fx;
            }
            RollupInput::Looked {
                window,
                looked,
                active_pane,
            } => {
                let w = self
                    .windows
                    .entry(window)
                    .or_insert_with(|| Window::new(now));
                w.looked = looked;
                w.active = active_pane;
                if looked {
                    clear_done(w, &mut fx);
                }
                window
            }
            RollupInput::TypedIn(window) => {
                if let Some(w) = self.windows.get_mut(&window) {
                    clear_done(w, &mut fx);
                }
                window
            }
        };
        self.update(now, window, &mut fx);
        fx
    }

    /// Re-derives a window's mark and fires what its change calls for.
    fn update(&mut self, now: Instant, window: WindowId, fx: &mut Vec<RollupEffect>) {
        let Some(w) = self.windows.get_mut(&window) else {
            return;
        };
        let busy = w.has(AgentState::Working) || w.has(AgentState::Blocked);
        if w.has(AgentState::Error) {
            w.work_started = None;
        } else if busy {
            w.work_started.get_or_insert(now);
        } else if let Some(start) = w.work_started.take() {
            // The work ended: working→idle.
            if now.duration_since(start) >= DONE_SOUND_MIN_WORK {
                fx.push(RollupEffect::Sound {
                    window,
                    sound: Sound::Done,
                });
            }
            if !w.looked && !w.done {
                w.done = true;
                fx.push(RollupEffect::DoneSetChanged);
            }
        }
        if w.looked {
            if let Some(active) = w.active {
                if w.panes.get(&active).is_some_and(|p| p.has_result())
                    && w.seen_sent.insert(active)
                {
                    fx.push(RollupEffect::MarkSeen(active));
                }
            }
        }
        let new = w.live_mark();
        if new != w.mark {
            let old = w.mark;
            w.mark = new;
            w.since = now;
            fx.push(RollupEffect::MarkChanged { window, old, new });
            let reason = match new {
                WindowMark::Done => Some(NotifyReason::Finished),
                WindowMark::Error => Some(NotifyReason::Error),
                _ => None,
            };
            if let Some(reason) = reason {
                let urgent = w.urgent();
                fx.push(RollupEffect::Notify {
                    window,
                    reason,
                    pane: urgent.map(|(id, _)| id),
                    agent: urgent.and_then(|(_, p)| p.agent.clone()),
                    message: urgent.and_then(|(_, p)| p.report.msg.clone()),
                });
            }
        }
    }
}

fn clear_done(w: &mut Window, fx: &mut Vec<RollupEffect>) {
    if w.done {
        w.done = false;
        fx.push(RollupEffect::DoneSetChanged);
    }
}
