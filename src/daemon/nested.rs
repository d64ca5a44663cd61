//! Nested tmux (issue 15): a local pane running `ssh devbox` into devbox's tmux is a
//! process-less pane here. When devbox is a connected machine, the local pane is linked to the
//! devbox client shown in it, and the local window's mark follows the most urgent mark of the
//! devbox session that client shows.
//!
//! The link is the ssh connection itself: devbox's daemon reports each client's
//! `SSH_CONNECTION` (`CLIENT_IP CLIENT_PORT SERVER_IP SERVER_PORT`, from the tmux client
//! process's environment), and here the `ssh` processes of a pane hold TCP sockets whose local
//! and remote ports are read from `/proc/net/tcp{,6}`. Ports that match are the same
//! connection. Reading `/proc` happens off the core loop ([`ssh_ports`] runs on a blocking
//! task), when a machine's clients change and at the slow timer.
//!
//! Owns: the links (local pane → machine, client, session), the marks last shown for linked
//! windows, and the `SSH_CONNECTION` of this server's clients (read once per client process).

use std::collections::{BTreeMap, HashMap, HashSet};

use super::core::{Daemon, Done};
use crate::clock::Now;
use crate::ids::{PaneId, WindowId};
use crate::ipc::schema::{ClientRow, PaneShows};
use crate::state::WindowMark;

/// A local pane linked to a machine's client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// The machine.
    pub machine: String,
    /// The client's name there.
    pub client: String,
    /// The session it shows.
    pub session: String,
}

/// What nested links know.
#[derive(Debug, Default)]
pub struct Nested {
    /// Local pane → what it shows.
    links: HashMap<PaneId, Link>,
    /// The mark last shown for each linked local window.
    shown: HashMap<WindowId, WindowMark>,
    /// A port scan is in flight.
    scanning: bool,
    /// Another scan was asked for while one ran.
    again: bool,
    /// This server's clients' `SSH_CONNECTION`, by client process.
    ssh_env: HashMap<u32, Option<String>>,
    /// This server's people's clients, as the snapshot lists them.
    pub clients: Vec<ClientRow>,
}

/// One `ssh` connection of a pane: (local port, remote port).
pub type Ports = (u16, u16);

impl Nested {
    /// The link of a local pane.
    pub fn link(&self, pane: PaneId) -> Option<&Link> {
        self.links.get(&pane)
    }

    /// The `SSH_CONNECTION` of this server's client process `pid`, read once.
    pub fn ssh_connection(&mut self, pid: u32) -> Option<String> {
        self.ssh_env
            .entry(pid)
            .or_insert_with(|| {
                let image = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
                image.split(|b| *b == 0).find_map(|e| {
                    let v = e.strip_prefix(b"SSH_CONNECTION=")?;
                    Some(String::from_utf8_lossy(v).into_owned())
                })
            })
            .clone()
    }

    /// Forgets client processes that are gone.
    pub fn keep_clients(&mut self, pids: &HashSet<u32>) {
        self.ssh_env.retain(|pid, _| pids.contains(pid));
    }
}

/// Matches each pane's ssh connections against the machines' clients: the first client whose
/// `SSH_CONNECTION` ports are one of the pane's connections (client port = local port, server
/// port = remote port).
pub fn match_links(
    panes: &[(PaneId, Vec<Ports>)],
    clients: &[(String, ClientRow)],
) -> HashMap<PaneId, Link> {
    let mut out = HashMap::new();
    for (pane, ports) in panes {
        let found = clients.iter().find(|(_, c)| {
            c.ssh_connection
                .as_deref()
                .and_then(parse_ssh_connection)
                .is_some_and(|pair| ports.contains(&pair))
        });
        if let Some((machine, c)) = found {
            out.insert(
                *pane,
                Link {
                    machine: machine.clone(),
                    client: c.name.clone(),
                    session: c.session_name.clone(),
                },
            );
        }
    }
    out
}

/// `CLIENT_IP CLIENT_PORT SERVER_IP SERVER_PORT` → (client port, server port).
pub fn parse_ssh_connection(s: &str) -> Option<Ports> {
    let w: Vec<&str> = s.split_whitespace().collect();
    if w.len() != 4 {
        return None;
    }
    Some((w[1].parse().ok()?, w[3].parse().ok()?))
}

/// The established TCP connections of the `ssh` processes under each pane's first process:
/// blocking `/proc` reads, for a blocking task.
pub fn ssh_ports(panes: &[(PaneId, u32)]) -> Vec<(PaneId, Vec<Ports>)> {
    let children = children_map();
    let sockets = tcp_sockets();
    panes
        .iter()
        .map(|(pane, pid)| {
            let mut ports = Vec::new();
            let mut stack = vec![*pid];
            let mut seen = HashSet::new();
            while let Some(p) = stack.pop() {
                if !seen.insert(p) {
                    continue;
                }
                if comm(p).as_deref() == Some("ssh") {
                    for inode in socket_inodes(p) {
                        if let Some(pair) = sockets.get(&inode) {
                            ports.push(*pair);
                        }
                    }
                }
                if let Some(kids) = children.get(&p) {
                    stack.extend(kids);
                }
            }
            (*pane, ports)
        })
        .collect()
}

fn comm(pid: u32) -> Option<String> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(s.trim_end().to_string())
}

/// Parent → children, from every process's `stat`.
fn children_map() -> HashMap<u32, Vec<u32>> {
    let mut map: HashMap<u32, Vec<u32>> = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return map;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: comm may hold spaces and parentheses.
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        if let Some(ppid) = after.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            map.entry(ppid).or_default().push(pid);
        }
    }
    map
}

/// The socket inodes a process holds.
fn socket_inodes(pid: u32) -> Vec<u64> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let target = std::fs::read_link(e.path()).ok()?;
            let t = target.to_str()?;
            t.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
        })
        .collect()
}

/// Established TCP connections by socket inode: (local port, remote port).
fn tcp_sockets() -> HashMap<u64, Ports> {
    let mut out = HashMap::new();
    for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(file) {
            out.extend(parse_proc_net_tcp(&text));
        }
    }
    out
}

/// The established connections of a `/proc/net/tcp` (or `tcp6`) text.
pub fn parse_proc_net_tcp(text: &str) -> Vec<(u64, Ports)> {
    let port = |addr: &str| u16::from_str_radix(addr.rsplit(':').next()?, 16).ok();
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
            if f.len() < 10 || f[3] != "01" {
                return None;
            }
            Some((f[9].parse().ok()?, (port(f[1])?, port(f[2])?)))
        })
        .collect()
}

impl Daemon {
    /// The mark a window shows: its own, or the most urgent mark of a connected machine's
    /// session shown in one of its panes (nested tmux), whichever is more urgent.
    pub(super) fn shown_mark(&self, window: WindowId) -> WindowMark {
        let own = self.windows.rollup.mark(window);
        self.nested
            .shown
            .get(&window)
            .map_or(own, |linked| own.min(*linked))
    }

    /// The local windows a nested link marks.
    pub(super) fn nested_windows(&self) -> Vec<WindowId> {
        self.nested.shown.keys().copied().collect()
    }

    /// What a linked pane shows, for its row.
    pub(super) fn pane_shows(&self, pane: PaneId) -> Option<PaneShows> {
        let l = self.nested.link(pane)?;
        Some(PaneShows {
            machine: l.machine.clone(),
            session: l.session.clone(),
            mark: self.machines.session_mark(&l.machine, &l.session),
        })
    }

    /// Scans the local panes running ssh for their connections (off the loop), when a
    /// connected machine has a client that came over ssh.
    pub(super) fn start_nested_scan(&mut self) {
        if self.machines.ssh_clients().is_empty() {
            if !self.nested.links.is_empty() {
                self.nested.links.clear();
                self.nested_marks(Now::read());
            }
            return;
        }
        if self.nested.scanning {
            self.nested.again = true;
            return;
        }
        let Some(inv) = self.inventory() else { return };
        let panes: Vec<(PaneId, u32)> = inv.panes.values().map(|p| (p.id, p.pid)).collect();
        self.nested.scanning = true;
        self.tasks.push(Box::pin(async move {
            let found = tokio::task::spawn_blocking(move || ssh_ports(&panes))
                .await
                .unwrap_or_default();
            Done::Nested(found)
        }));
    }

    /// A scan came back: the links, and the marks they bring.
    pub(super) fn on_nested_scan(&mut self, now: Now, found: Vec<(PaneId, Vec<Ports>)>) {
        self.nested.scanning = false;
        let links = match_links(&found, &self.machines.ssh_clients());
        if links != self.nested.links {
            for (pane, l) in &links {
                if self.nested.links.get(pane) != Some(l) {
                    tracing::info!(%pane, machine = %l.machine, session = %l.session, client = %l.client, "pane shows a connected machine's tmux");
                }
            }
            self.nested.links = links;
            self.changed = true;
        }
        self.nested_marks(now);
        if std::mem::take(&mut self.nested.again) {
            self.start_nested_scan();
        }
    }

    /// Recomputes the marks linked windows take from their machines, and sets the status
    /// line of each window whose mark changed.
    pub(super) fn nested_marks(&mut self, now: Now) {
        let Some(inv) = self.inventory() else { return };
        let mut marks: BTreeMap<WindowId, WindowMark> = BTreeMap::new();
        for (pane, l) in &self.nested.links {
            let Some(window) = inv.panes.get(pane).map(|p| p.window) else {
                continue;
            };
            let m = self.machines.session_mark(&l.machine, &l.session);
            let e = marks.entry(window).or_insert(m);
            *e = (*e).min(m);
        }
        let mut touched: Vec<WindowId> = self
            .nested
            .shown
            .keys()
            .filter(|w| !marks.contains_key(w))
            .copied()
            .collect();
        for (w, m) in &marks {
            if self.nested.shown.get(w) != Some(m) {
                touched.push(*w);
            }
        }
        self.nested.shown = marks.into_iter().collect();
        if touched.is_empty() {
            return;
        }
        for w in touched {
            self.refresh_window_options(now, w);
        }
        self.changed = true;
    }

    /// Lists this server's people's clients again, with how each came (for a follower's
    /// nested link), after a client list; a change is news for followers.
    pub(super) fn update_client_rows(&mut self) {
        let rows = self.client_rows();
        if rows != self.nested.clients {
            self.nested.clients = rows;
            self.changed = true;
        }
    }

    fn client_rows(&mut self) -> Vec<ClientRow> {
        let Some(inv) = self.link.observer.as_ref().map(|o| o.inventory()) else {
            return Vec::new();
        };
        let people: Vec<(String, u32, Option<String>)> = inv
            .people()
            .map(|c| {
                let session = c
                    .session
                    .and_then(|s| inv.sessions.get(&s))
                    .map(|s| s.name.clone());
                (c.name.clone(), c.pid, session)
            })
            .collect();
        let pids: HashSet<u32> = people.iter().map(|(_, p, _)| *p).collect();
        self.nested.keep_clients(&pids);
        people
            .into_iter()
            .filter_map(|(name, pid, session)| {
                Some(ClientRow {
                    name,
                    session_name: session?,
                    ssh_connection: self.nested.ssh_connection(pid),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_connection_ports_link_a_pane_to_the_client_it_shows() {
        let clients = vec![
            (
                "devbox".to_string(),
                ClientRow {
                    name: "/dev/pts/4".into(),
                    session_name: "work".into(),
                    ssh_connection: Some("127.0.0.1 51234 127.0.0.1 2222".into()),
                },
            ),
            (
                "devbox".to_string(),
                ClientRow {
                    name: "/dev/pts/5".into(),
                    session_name: "home".into(),
                    ssh_connection: None,
                },
            ),
        ];
        let panes = vec![
            (PaneId(1), vec![(40000, 22), (51234, 2222)]),
            (PaneId(2), vec![(51234, 22)]),
            (PaneId(3), Vec::new()),
        ];
        let links = match_links(&panes, &clients);
        assert_eq!(links.len(), 1);
        assert_eq!(
            links.get(&PaneId(1)),
            Some(&Link {
                machine: "devbox".into(),
                client: "/dev/pts/4".into(),
                session: "work".into()
            })
        );
        assert_eq!(parse_ssh_connection("::1 1 ::1 2"), Some((1, 2)));
        assert_eq!(parse_ssh_connection("garbage"), None);
    }

    #[test]
    fn proc_net_tcp_gives_established_connections_by_inode() {
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:C822 0100007F:08AE 01 00000000:00000000 00:00000000 00000000     0        0 98765 1 0000000000000000 20 4 30 10 -1\n\
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 12345 1 0000000000000000 100 0 0 10 0\n";
        assert_eq!(parse_proc_net_tcp(text), vec![(98765, (0xC822, 0x08AE))]);
    }

    #[test]
    fn this_process_s_own_connection_is_found_by_its_ports() {
        // A real connection on loopback, and the inode of our end read back from /proc.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
        let server_port = listener.local_addr().expect("addr").port();
        let stream = std::net::TcpStream::connect(("127.0.0.1", server_port)).expect("connect");
        let local_port = stream.local_addr().expect("addr").port();
        let sockets = tcp_sockets();
        let mine: HashSet<u64> = socket_inodes(std::process::id()).into_iter().collect();
        assert!(
            sockets
                .iter()
                .any(|(inode, ports)| mine.contains(inode) && *ports == (local_port, server_port)),
            "our connection {local_port}->{server_port} among {sockets:?}"
        );
    }
}
