//! What the tmux server holds: sessions, windows, panes and clients, parsed from one
//! `list-sessions` / `list-panes -a` / `list-clients` round and kept current between rounds by
//! subscription changes (titles; with the control clients, current commands; with pipes, first
//! processes). Structural notifications trigger a new round.

use std::collections::BTreeMap;

use super::command::{format_of, SEP};
use crate::ids::{PaneId, SessionId, WindowId};

/// One session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    /// Id.
    pub id: SessionId,
    /// Name.
    pub name: String,
    /// Group name, for grouped sessions (they share windows).
    pub group: Option<String>,
    /// Number of attached clients (control clients included).
    pub attached: u32,
}

/// One pane, with its window and session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaneInfo {
    /// Pane id.
    pub id: PaneId,
    /// Session (the first one listing it, for grouped sessions).
    pub session: SessionId,
    /// Session name.
    pub session_name: String,
    /// Window id.
    pub window: WindowId,
    /// Window index in the session.
    pub window_index: u32,
    /// Window name.
    pub window_name: String,
    /// Whether the window is its session's current window.
    pub window_active: bool,
    /// Pane index in the window.
    pub index: u32,
    /// Whether it is the window's active pane.
    pub active: bool,
    /// The pid of the pane's first process (usually the shell).
    pub pid: u32,
    /// The pane's tty.
    pub tty: String,
    /// The title (tmux's: the host name until a program sets one).
    pub title: String,
    /// `pane_current_command`.
    pub current_command: String,
    /// `pane_current_path`.
    pub current_path: String,
    /// Width in cells.
    pub width: u32,
    /// Height in cells.
    pub height: u32,
    /// Alternate screen on.
    pub alternate_on: bool,
    /// The pane's program exited (remain-on-exit).
    pub dead: bool,
    /// In a mode (copy mode ...).
    pub in_mode: bool,
    /// The pane has a pipe (`pipe-pane`): ours, an earlier sidecar's or the person's.
    pub pipe: bool,
    /// The pipe's mark (`@thinkterm_pipe`): the token of the sidecar that opened it, empty for
    /// a pipe of the person's.
    pub pipe_mark: String,
}

/// The parts of `#{client_flags}` that matter here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientFlags {
    /// `attached`: it is attached to a session.
    pub attached: bool,
    /// `focused`: its terminal reported focus (meaningful only with `focus-events on`).
    pub focused: bool,
    /// `control-mode`: a control-mode client, not a person's terminal.
    pub control_mode: bool,
}

impl ClientFlags {
    /// Parses tmux's comma-separated `#{client_flags}` (`attached,focused,UTF-8`); unknown words
    /// are ignored.
    pub fn parse(s: &str) -> Self {
        let mut f = ClientFlags::default();
        for word in s.split(',').map(str::trim) {
            match word {
                "attached" => f.attached = true,
                "focused" => f.focused = true,
                "control-mode" => f.control_mode = true,
                _ => {}
            }
        }
        f
    }
}

/// One client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientInfo {
    /// `client_name`.
    pub name: String,
    /// `client_tty`.
    pub tty: String,
    /// `client_pid`.
    pub pid: u32,
    /// Its session.
    pub session: Option<SessionId>,
    /// Its current window.
    pub window: Option<WindowId>,
    /// That window's active pane.
    pub pane: Option<PaneId>,
    /// `client_flags`, parsed: attached, focused (as far as tmux knows), control mode (like
    /// ours: never a person looking).
    pub flags: ClientFlags,
    /// `client_activity`, unix seconds.
    pub activity: u64,
    /// `client_written`: bytes tmux has written to the client's terminal.
    pub written: u64,
    /// `client_termname`: the client's `TERM`.
    pub termname: String,
    /// `client_termtype`: what its terminal answered to tmux's version query (may be empty).
    pub termtype: String,
}

const SESSION_FIELDS: &[&str] = &[
    "session_id",
    "session_name",
    "session_group",
    "session_attached",
];
const PANE_FIELDS: &[&str] = &[
    "session_id",
    "session_name",
    "window_id",
    "window_index",
    "window_active",
    "pane_id",
    "pane_index",
    "pane_active",
    "pane_pid",
    "pane_tty",
    "pane_current_command",
    "pane_width",
    "pane_height",
    "alternate_on",
    "pane_dead",
    "pane_in_mode",
    "window_name",
    "pane_current_path",
    "pane_pipe",
    "@thinkterm_pipe",
    "pane_title",
];
const CLIENT_FIELDS: &[&str] = &[
    "client_name",
    "client_tty",
    "client_pid",
    "session_id",
    "window_id",
    "pane_id",
    "client_flags",
    "client_control_mode",
    "client_activity",
    "client_written",
    "client_termname",
    "client_termtype",
];

/// The `list-sessions` command line.
pub fn list_sessions_command() -> String {
    format!("list-sessions -F '{}'", format_of(SESSION_FIELDS))
}

/// The `list-panes -a` command line.
pub fn list_panes_command() -> String {
    format!("list-panes -a -F '{}'", list_panes_format())
}

/// The format of a pane's line in a list of panes ([`parse_panes`] reads it).
pub fn list_panes_format() -> String {
    format_of(PANE_FIELDS)
}

/// The `list-clients` command line.
pub fn list_clients_command() -> String {
    format!("list-clients -F '{}'", format_of(CLIENT_FIELDS))
}

/// Everything the server holds, as of the last listing.
#[derive(Clone, Debug, Default)]
pub struct Inventory {
    /// Sessions by id.
    pub sessions: BTreeMap<SessionId, SessionInfo>,
    /// Panes by id (grouped sessions de-duplicated: one entry per pane).
    pub panes: BTreeMap<PaneId, PaneInfo>,
    /// Clients, in tmux's order.
    pub clients: Vec<ClientInfo>,
    /// tmux reports terminal focus (`focus-events on`): "focused" means something.
    pub focus_events: bool,
}

fn fields(line: &str, n: usize) -> Option<Vec<&str>> {
    let f: Vec<&str> = line.splitn(n, SEP).collect();
    (f.len() == n).then_some(f)
}

fn flag(s: &str) -> bool {
    s == "1"
}

/// Parses `list-sessions` output.
pub fn parse_sessions(body: &[String]) -> BTreeMap<SessionId, SessionInfo> {
    let mut out = BTreeMap::new();
    for line in body {
        let Some(f) = fields(line, SESSION_FIELDS.len()) else {
            continue;
        };
        let Some(id) = SessionId::parse(f[0]) else {
            continue;
        };
        out.insert(
            id,
            SessionInfo {
                id,
                name: f[1].to_string(),
                group: (!f[2].is_empty()).then(|| f[2].to_string()),
                attached: f[3].parse().unwrap_or(0),
            },
        );
    }
    out
}

/// Parses `list-panes -a` output; a pane listed under several (grouped) sessions is kept once,
/// under the first.
pub fn parse_panes(body: &[String]) -> BTreeMap<PaneId, PaneInfo> {
    let mut out = BTreeMap::new();
    for line in body {
        let Some(f) = fields(line, PANE_FIELDS.len()) else {
            tracing::debug!(line, "unparsable list-panes line");
            continue;
        };
        let (Some(session), Some(window), Some(id)) = (
            SessionId::parse(f[0]),
            WindowId::parse(f[2]),
            PaneId::parse(f[5]),
        ) else {
            continue;
        };
        out.entry(id).or_insert_with(|| PaneInfo {
            id,
            session,
            session_name: f[1].to_string(),
            window,
            window_index: f[3].parse().unwrap_or(0),
            window_active: flag(f[4]),
            index: f[6].parse().unwrap_or(0),
            active: flag(f[7]),
            pid: f[8].parse().unwrap_or(0),
            tty: f[9].to_string(),
            current_command: f[10].to_string(),
            width: f[11].parse().unwrap_or(0),
            height: f[12].parse().unwrap_or(0),
            alternate_on: flag(f[13]),
            dead: flag(f[14]),
            in_mode: flag(f[15]),
            window_name: f[16].to_string(),
            current_path: f[17].to_string(),
            pipe: flag(f[18]),
            pipe_mark: f[19].to_string(),
            title: f[20].to_string(),
        });
    }
    out
}

/// Parses `list-clients` output.
pub fn parse_clients(body: &[String]) -> Vec<ClientInfo> {
    body.iter()
        .filter_map(|line| {
            let f = fields(line, CLIENT_FIELDS.len())?;
            let mut flags = ClientFlags::parse(f[6]);
            flags.control_mode |= flag(f[7]);
            Some(ClientInfo {
                name: f[0].to_string(),
                tty: f[1].to_string(),
                pid: f[2].parse().unwrap_or(0),
                session: SessionId::parse(f[3]),
                window: WindowId::parse(f[4]),
                pane: PaneId::parse(f[5]),
                flags,
                activity: f[8].parse().unwrap_or(0),
                written: f[9].parse().unwrap_or(0),
                termname: f[10].to_string(),
                termtype: f[11].to_string(),
            })
        })
        .collect()
}

impl Inventory {
    /// The sessions to attach a control client to: one per session group, one per ungrouped
    /// session (grouped sessions share their windows, so one client sees all their panes).
    pub fn attach_targets(&self) -> Vec<SessionId> {
        let mut groups = std::collections::HashSet::new();
        self.sessions
            .values()
            .filter(|s| match &s.group {
                Some(g) => groups.insert(g.clone()),
                None => true,
            })
            .map(|s| s.id)
            .collect()
    }

    /// The session whose control client covers `id` (itself, or its group's first session).
    pub fn covering_session(&self, id: SessionId) -> Option<SessionId> {
        let s = self.sessions.get(&id)?;
        match &s.group {
            None => Some(id),
            Some(g) => self
                .sessions
                .values()
                .find(|o| o.group.as_ref() == Some(g))
                .map(|o| o.id),
        }
    }

    /// Clients that are people (not control-mode clients such as this sidecar's).
    pub fn people(&self) -> impl Iterator<Item = &ClientInfo> {
        self.clients.iter().filter(|c| !c.flags.control_mode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(parts: &[&str]) -> String {
        parts.join(&SEP.to_string())
    }

    #[test]
    fn panes_parse_and_grouped_duplicates_collapse() {
        let a = row(&[
            "$0",
            "main",
            "@1",
            "0",
            "1",
            "%3",
            "0",
            "1",
            "4242",
            "/dev/pts/4",
            "bash",
            "80",
            "24",
            "0",
            "0",
            "0",
            "my win",
            "/home/u",
            "1",
            "0123abcd",
            "vm: title with ␟ weird",
        ]);
        let b = a.replacen("$0", "$1", 1);
        let panes = parse_panes(&[a, b, "garbage".into()]);
        assert_eq!(panes.len(), 1);
        let p = &panes[&PaneId(3)];
        assert_eq!(p.session, SessionId(0));
        assert_eq!(p.window, WindowId(1));
        assert_eq!(p.pid, 4242);
        assert_eq!(p.title, "vm: title with ␟ weird");
        assert!(p.active && p.window_active && !p.dead);
        assert!(p.pipe);
        assert_eq!(p.pipe_mark, "0123abcd");
    }

    #[test]
    fn clients_know_focus_and_control_mode() {
        let c = parse_clients(&[
            row(&[
                "/dev/pts/1",
                "/dev/pts/1",
                "10",
                "$0",
                "@1",
                "%3",
                "attached,focused,UTF-8",
                "0",
                "100",
                "5000",
                "xterm-kitty",
                "kitty(0.35.2)",
            ]),
            row(&[
                "client-9",
                "",
                "11",
                "$0",
                "@1",
                "%3",
                "attached,focused,control-mode",
                "1",
                "90",
                "0",
                "",
                "",
            ]),
        ]);
        assert!(c[0].flags.focused && !c[0].flags.control_mode);
        assert_eq!(
            (c[0].termname.as_str(), c[0].termtype.as_str()),
            ("xterm-kitty", "kitty(0.35.2)")
        );
        assert!(c[1].flags.control_mode);
        let inv = Inventory {
            clients: c,
            ..Default::default()
        };
        assert_eq!(inv.people().count(), 1);
    }

    #[test]
    fn one_attach_target_per_group() {
        let s = parse_sessions(&[
            row(&["$0", "a", "", "0"]),
            row(&["$1", "b", "g", "0"]),
            row(&["$2", "b-2", "g", "1"]),
        ]);
        let inv = Inventory {
            sessions: s,
            ..Default::default()
        };
        assert_eq!(inv.attach_targets(), vec![SessionId(0), SessionId(1)]);
        assert_eq!(inv.covering_session(SessionId(2)), Some(SessionId(1)));
    }
}
