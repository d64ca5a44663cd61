//! The status line: the tmux user options the sidecar sets for `#{…}` formats, and the one owner
//! of what was last set (so an unchanged value is never sent twice), of the spinner's frame and
//! of when the next frame is due. Pure: it answers with tmux commands (as argument vectors) for
//! the daemon to send, and takes `now` where time matters.
//!
//! Options: per pane [`PANE_STATE`], per window [`WINDOW_MARK`] and [`WINDOW_ICON`], per
//! session [`SESSION_SUMMARY`].
//!
//! A window shows the defaults until it has something else to show: `idle` from the global
//! window option ([`StatusLine::defaults`]), an empty icon and summary from no option at all.
//! Every `set-option` makes tmux redraw every client and size every window again, so setting
//! each window's idle values one by one cost a server of 600 windows 1,200 of them at start
//! (seconds of tmux's time, and more than a control client's command queue holds).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::ids::{PaneId, SessionId, WindowId};
use crate::state::{AgentState, WindowMark};
use crate::thread::icon::{self, IconStyle};
use crate::tmux::grid::Grid;

/// Per pane: `idle|working|blocked|error`, empty when unknown.
pub const PANE_STATE: &str = "@thinkterm_state";
/// Per window: `attention|error|running|done|idle`.
pub const WINDOW_MARK: &str = "@thinkterm_mark";
/// Per window: a styled glyph (a spinner frame while running).
pub const WINDOW_ICON: &str = "@thinkterm_icon";
/// Per session: `1✗ 2! 1~ 3✓`.
pub const SESSION_SUMMARY: &str = "@thinkterm_summary";

/// A tmux command as its argument vector.
pub type Argv = Vec<String>;

/// How the status line is drawn (from the config).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusLineConfig {
    /// Set options at all.
    pub enabled: bool,
    /// Animate the running icon.
    pub spinner: bool,
    /// Time between spinner frames.
    pub spinner_every: Duration,
}

/// What was last set, and the spinner.
#[derive(Debug)]
pub struct StatusLine {
    config: StatusLineConfig,
    style: IconStyle,
    marks: HashMap<WindowId, WindowMark>,
    icons: HashMap<WindowId, String>,
    summaries: HashMap<SessionId, String>,
    frame: usize,
    next_frame: Option<Instant>,
}

fn set(scope: &str, target: String, name: &str, value: &str) -> Argv {
    let mut argv = vec!["set-option".to_string()];
    if !scope.is_empty() {
        argv.push(scope.to_string());
    }
    argv.extend([
        "-t".to_string(),
        target,
        name.to_string(),
        value.to_string(),
    ]);
    argv
}

fn unset(scope: &str, target: String, name: &str) -> Argv {
    let mut argv = vec!["set-option".to_string()];
    if !scope.is_empty() {
        argv.push(scope.to_string());
    }
    argv.extend(["-u".to_string(), "-t".to_string(), target, name.to_string()]);
    argv
}

impl StatusLine {
    /// Nothing set yet.
    pub fn new(config: StatusLineConfig) -> Self {
        StatusLine {
            config,
            style: IconStyle::default(),
            marks: HashMap::new(),
            icons: HashMap::new(),
            summaries: HashMap::new(),
            frame: 0,
            next_frame: None,
        }
    }

    /// A new configuration (a reload).
    pub fn configure(&mut self, config: StatusLineConfig) {
        self.config = config;
    }

    /// Forgets what was set (a new tmux server: everything is set again).
    pub fn reset(&mut self) {
        self.marks.clear();
        self.icons.clear();
        self.summaries.clear();
        self.next_frame = None;
    }

    /// Forgets a closed window.
    pub fn forget_window(&mut self, window: WindowId) {
        self.marks.remove(&window);
        self.icons.remove(&window);
    }

    /// The commands that give every window its idle mark by default (sent on attaching, before
    /// any other option).
    pub fn defaults(&self) -> Vec<Argv> {
        if !self.config.enabled {
            return Vec::new();
        }
        vec![vec![
            "set-option".to_string(),
            "-gw".to_string(),
            WINDOW_MARK.to_string(),
            WindowMark::Idle.as_str().to_string(),
        ]]
    }

    /// The lists that show options an earlier sidecar left (killed before it could clear
    /// them): each window's, session's and pane's values as formats see them.
    pub fn leftover_queries() -> [String; 3] {
        let f =
            |fields: &[&str]| crate::tmux::command::quote(&crate::tmux::command::format_of(fields));
        [
            format!(
                "list-windows -a -F {}",
                f(&["window_id", WINDOW_MARK, WINDOW_ICON])
            ),
            format!("list-sessions -F {}", f(&["session_id", SESSION_SUMMARY])),
            format!("list-panes -a -F {}", f(&["pane_id", PANE_STATE])),
        ]
    }

    /// The commands that remove what the answers to [`StatusLine::leftover_queries`] show
    /// beyond the defaults, so that every window, session and pane shows them.
    pub fn leftover_unsets(windows: &[String], sessions: &[String], panes: &[String]) -> Vec<Argv> {
        let sep = crate::tmux::command::SEP;
        let mut out = Vec::new();
        for l in windows {
            let f: Vec<&str> = l.split(sep).collect();
            if let [id, mark, icon] = f[..] {
                if let Some(w) = WindowId::parse(id) {
                    if !(mark.is_empty() || mark == WindowMark::Idle.as_str()) || !icon.is_empty() {
                        out.push(unset("-w", w.to_string(), WINDOW_MARK));
                        out.push(unset("-w", w.to_string(), WINDOW_ICON));
                    }
                }
            }
        }
        for l in sessions {
            if let Some((id, summary)) = l.split_once(sep) {
                if let (Some(s), false) = (SessionId::parse(id), summary.is_empty()) {
                    out.push(unset("", s.to_string(), SESSION_SUMMARY));
                }
            }
        }
        for l in panes {
            if let Some((id, state)) = l.split_once(sep) {
                if let (Some(p), false) = (PaneId::parse(id), state.is_empty()) {
                    out.push(unset("-p", p.to_string(), PANE_STATE));
                }
            }
        }
        out
    }

    /// The command that shows a pane's state.
    pub fn pane_state(&self, pane: PaneId, state: Option<AgentState>) -> Option<Argv> {
        self.config.enabled.then(|| {
            set(
                "-p",
                pane.to_string(),
                PANE_STATE,
                state.map(AgentState::as_str).unwrap_or(""),
            )
        })
    }

    /// The commands that show a window's mark and icon, for what changed since last set.
    pub fn window(&mut self, window: WindowId, mark: WindowMark) -> Vec<Argv> {
        let mut out = Vec::new();
        if !self.config.enabled {
            return out;
        }
        let frame = if self.config.spinner { self.frame } else { 0 };
        let icon = icon::window_icon(mark, frame, &self.style);
        // A window not set yet shows the defaults.
        if self.marks.insert(window, mark).unwrap_or(WindowMark::Idle) != mark {
            out.push(set("-w", window.to_string(), WINDOW_MARK, mark.as_str()));
        }
        if self.icons.get(&window).map_or("", String::as_str) != icon {
            out.push(set("-w", window.to_string(), WINDOW_ICON, &icon));
            self.icons.insert(window, icon);
        }
        out
    }

    /// The commands that show each session's summary, for those that changed.
    pub fn summaries(
        &mut self,
        per_session: impl IntoIterator<Item = (SessionId, Vec<WindowMark>)>,
    ) -> Vec<Argv> {
        let mut out = Vec::new();
        if !self.config.enabled {
            return out;
        }
        for (session, marks) in per_session {
            let s = icon::summary(marks);
            if self.summaries.get(&session).map_or("", String::as_str) != s {
                out.push(set("", session.to_string(), SESSION_SUMMARY, &s));
                self.summaries.insert(session, s);
            }
        }
        out
    }

    /// Arms or disarms the spinner: a frame is due while some window runs. Frames land on the
    /// read grid (the interval rounded to it): no wake-up of their own.
    pub fn schedule(&mut self, now: Instant, reads: Grid, running: bool) {
        if running && self.config.spinner && self.config.enabled {
            let at = reads.nearest(now, self.config.spinner_every);
            self.next_frame.get_or_insert(at);
        } else {
            self.next_frame = None;
        }
    }

    /// When the next spinner frame is due.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.next_frame
    }

    /// The next spinner frame: new icons for the running windows (marks and summaries stay).
    pub fn frame(&mut self, running: &[WindowId]) -> Vec<Argv> {
        self.next_frame = None;
        self.frame = self.frame.wrapping_add(1);
        running
            .iter()
            .flat_map(|w| self.window(*w, WindowMark::Running))
            .collect()
    }

    /// The commands that remove every option the sidecar set on these panes, windows and
    /// sessions (on shutdown).
    pub fn clear_all(
        panes: impl IntoIterator<Item = PaneId>,
        windows: impl IntoIterator<Item = WindowId>,
        sessions: impl IntoIterator<Item = SessionId>,
    ) -> Vec<Argv> {
        let mut out: Vec<Argv> = panes
            .into_iter()
            .map(|p| unset("-p", p.to_string(), PANE_STATE))
            .collect();
        for w in windows {
            out.push(unset("-w", w.to_string(), WINDOW_MARK));
            out.push(unset("-w", w.to_string(), WINDOW_ICON));
        }
        for s in sessions {
            out.push(unset("", s.to_string(), SESSION_SUMMARY));
        }
        out.push(vec![
            "set-option".to_string(),
            "-gwu".to_string(),
            WINDOW_MARK.to_string(),
        ]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(enabled: bool, spinner: bool) -> StatusLine {
        StatusLine::new(StatusLineConfig {
            enabled,
            spinner,
            spinner_every: Duration::from_millis(200),
        })
    }

    fn names(cmds: &[Argv]) -> Vec<&str> {
        cmds.iter()
            .map(|a| a[a.len() - 2].as_str())
            .collect::<Vec<_>>()
    }

    #[test]
    fn each_option_is_sent_only_when_it_changed() {
        let mut s = line(true, true);
        let w = WindowId(1);
        let first = s.window(w, WindowMark::Attention);
        assert_eq!(names(&first), [WINDOW_MARK, WINDOW_ICON]);
        assert_eq!(
            first[0],
            ["set-option", "-w", "-t", "@1", WINDOW_MARK, "attention"]
        );
        assert!(s.window(w, WindowMark::Attention).is_empty());
        let sums = s.summaries([(SessionId(0), vec![WindowMark::Attention, WindowMark::Idle])]);
        assert_eq!(sums[0], ["set-option", "-t", "$0", SESSION_SUMMARY, "1!"]);
        assert!(s
            .summaries([(SessionId(0), vec![WindowMark::Attention])])
            .is_empty());
        s.reset();
        assert_eq!(
            s.window(w, WindowMark::Attention).len(),
            2,
            "set again after reset"
        );
        assert_eq!(
            s.pane_state(PaneId(4), Some(AgentState::Blocked)),
            Some(
                ["set-option", "-p", "-t", "%4", PANE_STATE, "blocked"]
                    .map(String::from)
                    .to_vec()
            )
        );
    }

    #[test]
    fn the_spinner_turns_on_the_grid_while_something_runs() {
        let e = Instant::now();
        let reads = Grid::new(e, Duration::from_millis(100));
        let mut s = line(true, true);
        let w = WindowId(2);
        s.window(w, WindowMark::Running);
        s.schedule(e, reads, true);
        assert_eq!(s.next_deadline(), Some(e + Duration::from_millis(200)));
        let frame = s.frame(&[w]);
        assert_eq!(
            names(&frame),
            [WINDOW_ICON],
            "a frame changes the icon only"
        );
        assert_eq!(s.next_deadline(), None);
        s.schedule(e, reads, false);
        assert_eq!(s.next_deadline(), None);
        let mut still = line(true, false);
        still.schedule(e, reads, true);
        assert_eq!(still.next_deadline(), None, "spinner off: no frames");
    }

    #[test]
    fn disabled_sets_nothing_and_clearing_names_every_option() {
        let mut s = line(false, true);
        assert!(s.window(WindowId(1), WindowMark::Done).is_empty());
        assert!(s.pane_state(PaneId(1), None).is_none());
        let mut clear = StatusLine::clear_all([PaneId(1)], [WindowId(2)], [SessionId(3)]);
        assert_eq!(
            clear.pop(),
            Some(
                ["set-option", "-gwu", WINDOW_MARK]
                    .map(String::from)
                    .to_vec()
            ),
            "the global default goes last"
        );
        assert!(clear.iter().all(|a| a.contains(&"-u".to_string())));
        assert_eq!(names(&clear), ["%1", "@2", "@2", "$3"]);
        let last: Vec<&str> = clear
            .iter()
            .map(|a| a.last().map_or("", |s| s.as_str()))
            .collect();
        assert_eq!(
            last,
            [PANE_STATE, WINDOW_MARK, WINDOW_ICON, SESSION_SUMMARY]
        );
        assert!(s.defaults().is_empty(), "disabled: no default either");
    }

    #[test]
    fn a_window_shows_the_defaults_until_it_has_something_else_to_show() {
        let mut s = line(true, true);
        assert_eq!(
            s.defaults(),
            [["set-option", "-gw", WINDOW_MARK, "idle"]
                .map(String::from)
                .to_vec()]
        );
        let w = WindowId(5);
        assert!(
            s.window(w, WindowMark::Idle).is_empty(),
            "idle is the default"
        );
        assert!(s
            .summaries([(SessionId(1), vec![WindowMark::Idle])])
            .is_empty());
        assert_eq!(
            names(&s.window(w, WindowMark::Done)),
            [WINDOW_MARK, WINDOW_ICON]
        );
        let back = s.window(w, WindowMark::Idle);
        assert_eq!(
            back[0],
            ["set-option", "-w", "-t", "@5", WINDOW_MARK, "idle"]
        );
        assert_eq!(back[1], ["set-option", "-w", "-t", "@5", WINDOW_ICON, ""]);
    }

    #[test]
    fn what_an_earlier_sidecar_left_is_cleared_and_nothing_else() {
        let sep = crate::tmux::command::SEP;
        let row = |f: &[&str]| f.join(&sep.to_string());
        let windows = [
            row(&["@1", "", ""]),
            row(&["@2", "idle", ""]),
            row(&["@3", "done", "#[fg=green]●"]),
            row(&["@4", "idle", "x"]),
        ];
        let sessions = [row(&["$0", ""]), row(&["$1", "1✓"])];
        let panes = [row(&["%0", ""]), row(&["%7", "blocked"])];
        let unsets = StatusLine::leftover_unsets(&windows, &sessions, &panes);
        let targets: Vec<&str> = unsets.iter().map(|a| a[a.len() - 2].as_str()).collect();
        assert_eq!(targets, ["@3", "@3", "@4", "@4", "$1", "%7"]);
        assert!(unsets.iter().all(|a| a.contains(&"-u".to_string())));
        assert!(StatusLine::leftover_queries()
            .iter()
            .all(|q| q.contains("#{@thinkterm_")));
    }
}
