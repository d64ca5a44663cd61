//! Connected machines, from the daemon's side: each one's link, whether it answers, its panes
//! and windows as its sidecar last described them, and the requests sent to it awaiting their
//! replies. The one owner of what this daemon knows about other machines; their decisions to
//! notify and to ring are performed here, on this desktop.

use std::collections::HashMap;
use std::time::Instant;

use tokio::sync::mpsc;

use super::core::Daemon;
use crate::clock::Now;
use crate::effects::notification::{NoteInput, NoteKind};
use crate::ids::PaneId;
use crate::ipc::schema::{
    ClientRow, MachineRow, MachineSpec, NoteRequest, PaneRow, Reply, Request, WindowRow,
};
use crate::remote::link::{Link, LinkEvent, MachineIndex};
use crate::state::{Sound, WindowMark};

/// One connected machine.
struct Machine {
    spec: MachineSpec,
    link: Link,
    reachable: bool,
    reason: Option<String>,
    since: Instant,
    /// The outage was logged (once per outage).
    logged: bool,
    panes: Vec<PaneRow>,
    windows: Vec<WindowRow>,
    /// Its people's tmux clients (for nested links).
    clients: Vec<ClientRow>,
    /// Requests sent to it, by id, with where their reply goes.
    pending: HashMap<u64, mpsc::Sender<Reply>>,
}

/// Every connected machine.
pub struct Machines {
    /// This computer's name in the views.
    pub local_name: String,
    list: Vec<Machine>,
    events: mpsc::Sender<(MachineIndex, LinkEvent)>,
    next_id: u64,
}

/// This computer's name: the config's `machine_name`, else the host name (up to its first dot).
pub fn local_name(configured: &str) -> String {
    if !configured.is_empty() {
        return configured.to_string();
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let short = host.trim().split('.').next().unwrap_or("").to_string();
    if short.is_empty() {
        "local".into()
    } else {
        short
    }
}

impl Machines {
    /// Starts a link to each of `specs`; their reports come on `events`.
    pub fn new(
        local_name: String,
        specs: &[MachineSpec],
        events: mpsc::Sender<(MachineIndex, LinkEvent)>,
        now: Instant,
    ) -> Machines {
        let mut m = Machines {
            local_name,
            list: Vec::new(),
            events,
            next_id: 1,
        };
        for s in specs {
            // Checked when the config was read.
            let _ = m.add(s.clone(), now);
        }
        m
    }

    /// Connects one more machine.
    pub fn add(&mut self, spec: MachineSpec, now: Instant) -> Result<(), String> {
        let others: Vec<MachineSpec> = self.list.iter().map(|m| m.spec.clone()).collect();
        crate::remote::spec::check(&spec, &others)?;
        if spec.name == self.local_name {
            return Err(format!("{:?} is this computer's own name", spec.name));
        }
        let index = self.list.len();
        self.list.push(Machine {
            link: Link::start(index, spec.clone(), self.events.clone()),
            spec,
            reachable: false,
            reason: Some("connecting".into()),
            since: now,
            logged: false,
            panes: Vec::new(),
            windows: Vec::new(),
            clients: Vec::new(),
            pending: HashMap::new(),
        });
        Ok(())
    }

    /// The panes and windows of every machine that answers, each named by its machine.
    pub fn rows(&self) -> (Vec<PaneRow>, Vec<WindowRow>) {
        let mut panes = Vec::new();
        let mut windows = Vec::new();
        for m in self.list.iter().filter(|m| m.reachable) {
            panes.extend(m.panes.iter().cloned());
            windows.extend(m.windows.iter().cloned());
        }
        (panes, windows)
    }

    /// Every reachable machine's clients that came over ssh, with the machine's name.
    pub fn ssh_clients(&self) -> Vec<(String, ClientRow)> {
        self.list
            .iter()
            .filter(|m| m.reachable)
            .flat_map(|m| {
                m.clients
                    .iter()
                    .filter(|c| c.ssh_connection.is_some())
                    .map(|c| (m.spec.name.clone(), c.clone()))
            })
            .collect()
    }

    /// The most urgent window mark of a machine's session (idle when unknown).
    pub fn session_mark(&self, machine: &str, session: &str) -> WindowMark {
        self.list
            .iter()
            .filter(|m| m.spec.name == machine && m.reachable)
            .flat_map(|m| m.panes.iter())
            .filter(|p| p.session_name == session)
            .map(|p| p.window_mark)
            .min()
            .unwrap_or_default()
    }

    /// This computer and every machine, for the views.
    pub fn machine_rows(&self, now: Now, local_since: Instant) -> Vec<MachineRow> {
        let mut out = vec![MachineRow {
            name: self.local_name.clone(),
            local: true,
            reachable: true,
            reason: None,
            since_ms: now.unix_ms_of(local_since),
        }];
        out.extend((0..self.list.len()).map(|i| self.row(i, now)));
        out
    }

    /// Machine `index` as the views list it.
    fn row(&self, index: usize, now: Now) -> MachineRow {
        let m = &self.list[index];
        MachineRow {
            name: m.spec.name.clone(),
            local: false,
            reachable: m.reachable,
            reason: m.reason.clone(),
            since_ms: now.unix_ms_of(m.since),
        }
    }

    /// Whether `name` is a connected machine (not this computer).
    pub fn is_remote(&self, name: Option<&str>) -> Option<usize> {
        let name = name.filter(|n| *n != self.local_name)?;
        self.list.iter().position(|m| m.spec.name == name)
    }

    /// Sends `request` to machine `index`; its reply goes to `reply`. A machine that does not
    /// answer gets an error reply at once.
    pub fn request(&mut self, index: usize, request: Request, reply: mpsc::Sender<Reply>) {
        let id = self.next_id;
        self.next_id += 1;
        let Some(m) = self.list.get_mut(index) else {
            return;
        };
        if !m.reachable {
            let why = m.reason.clone().unwrap_or_default();
            let _ = reply.try_send(Reply::Error {
                message: format!("{} is unreachable: {why}", m.spec.name),
            });
            return;
        }
        if m.link.request(id, request) {
            m.pending.insert(id, reply);
        } else {
            let _ = reply.try_send(Reply::Error {
                message: format!("{} is not taking requests now", m.spec.name),
            });
        }
    }
}

impl Daemon {
    /// What a machine's link reported.
    pub(super) fn on_link(&mut self, now: Now, index: MachineIndex, event: LinkEvent) {
        let Some(m) = self.machines.list.get_mut(index) else {
            return;
        };
        let name = m.spec.name.clone();
        let mut rescan = false;
        match event {
            LinkEvent::Up => {
                if !m.reachable {
                    if m.logged {
                        tracing::info!(machine = %name, "reachable again");
                    } else {
                        tracing::info!(machine = %name, "connected");
                    }
                    m.reachable = true;
                    m.reason = None;
                    m.since = now.at;
                    m.logged = false;
                    self.changed = true;
                    let row = self.machines.row(index, now);
                    self.bus.event(&Reply::Machine(row), false);
                }
            }
            LinkEvent::Down(why) => {
                if !m.logged {
                    tracing::warn!(machine = %name, "unreachable: {why}");
                    m.logged = true;
                }
                if m.reachable || m.reason.as_deref() != Some(&why) {
                    m.reachable = false;
                    m.reason = Some(why.clone());
                    m.since = now.at;
                    m.panes.clear();
                    m.windows.clear();
                    m.clients.clear();
                    self.changed = true;
                    for (_, tx) in m.pending.drain() {
                        let _ = tx.try_send(Reply::Error {
                            message: format!("{name} is unreachable: {why}"),
                        });
                    }
                    let row = self.machines.row(index, now);
                    self.bus.event(&Reply::Machine(row), false);
                } else {
                    for (_, tx) in m.pending.drain() {
                        let _ = tx.try_send(Reply::Error {
                            message: format!("{name} is unreachable: {why}"),
                        });
                    }
                }
            }
            LinkEvent::Reply(Some(id), reply) => {
                if let Some(tx) = m.pending.remove(&id) {
                    let _ = tx.try_send(*reply);
                }
            }
            LinkEvent::Reply(None, reply) => match *reply {
                Reply::Snapshot {
                    panes,
                    windows,
                    clients,
                    ..
                } => {
                    let ssh = |c: &[ClientRow]| {
                        c.iter()
                            .filter(|c| c.ssh_connection.is_some())
                            .map(|c| (c.name.clone(), c.ssh_connection.clone()))
                            .collect::<Vec<_>>()
                    };
                    rescan = ssh(&clients) != ssh(&m.clients);
                    m.clients = clients;
                    m.panes = panes
                        .into_iter()
                        .map(|mut p| {
                            p.machine = Some(name.clone());
                            p
                        })
                        .collect();
                    m.windows = windows
                        .into_iter()
                        .map(|mut w| {
                            w.machine = Some(name.clone());
                            w
                        })
                        .collect();
                    self.changed = true;
                }
                Reply::Event(mut e) => {
                    e.machine = Some(name.clone());
                    if let Some(row) = m.panes.iter_mut().find(|p| p.pane == e.pane) {
                        row.state = e.new;
                        row.agent = e.agent.clone().or(row.agent.take());
                        row.source = e.source;
                        row.rule = e.rule.clone();
                        row.message = e.message.clone();
                        row.kind = e.kind;
                        row.progress = e.progress;
                        row.since_ms = e.time_ms;
                        row.window_mark = e.window_mark;
                    }
                    self.bus.event(&Reply::Event(e), false);
                    self.changed = true;
                }
                Reply::Notify(n) => self.show_remote_note(now, &name, n),
                Reply::Sound { sound, .. } => {
                    let s = match sound.as_str() {
                        "done" => Some(Sound::Done),
                        "waiting" => Some(Sound::Waiting),
                        _ => None,
                    };
                    if let Some(s) = s {
                        let played = self.sound.play(s);
                        tracing::debug!(machine = %name, ?played, ?s, "sound");
                    }
                }
                // A lag is mended by the snapshot that follows; the rest is not ours.
                _ => {}
            },
        }
        // Nested tmux: new clients over ssh there may be shown in a pane here; the marks of
        // linked windows follow every change there.
        if rescan {
            self.start_nested_scan();
        }
        self.nested_marks(now);
    }

    /// Shows a notification a connected machine decided on, with this machine's switches.
    fn show_remote_note(&mut self, now: Now, machine: &str, n: NoteRequest) {
        let Some(kind) = NoteKind::parse(&n.kind) else {
            tracing::debug!(machine, kind = %n.kind, "a notification of an unknown kind");
            return;
        };
        let input = NoteInput {
            window_name: n.window_name,
            window: n.window,
            pane: n.pane,
            kind,
            title: n.title,
            message: n.message,
            waiting: n.waiting,
            progress: n.progress,
            subtasks: n.subtasks,
        };
        self.show_here(now, &input, Some(machine));
    }

    /// Routes a request about a pane to the machine it names (None: this computer): true when
    /// it went to a connected machine, whose reply then goes to `reply`.
    pub(super) fn route(
        &mut self,
        machine: Option<&str>,
        request: Request,
        reply: &mpsc::Sender<Reply>,
    ) -> bool {
        if let Some(m) = machine.filter(|m| *m != self.machines.local_name) {
            match self.machines.is_remote(Some(m)) {
                Some(i) => self.machines.request(i, request, reply.clone()),
                None => {
                    let _ = reply.try_send(Reply::Error {
                        message: format!("no machine named {m:?}"),
                    });
                }
            }
            return true;
        }
        false
    }

    /// A click on a connected machine's notification: its sidecar brings the pane forward.
    pub(super) fn focus_remote(&mut self, machine: &str, pane: PaneId) {
        let Some(i) = self.machines.is_remote(Some(machine)) else {
            return;
        };
        let (tx, mut rx) = mpsc::channel(1);
        self.machines.request(
            i,
            Request::Focus {
                pane,
                client: None,
                machine: None,
            },
            tx,
        );
        let machine = machine.to_string();
        tokio::spawn(async move {
            match rx.recv().await {
                Some(Reply::Done { message }) => {
                    tracing::info!(%machine, "notification clicked: {message}")
                }
                Some(Reply::Error { message }) => {
                    tracing::warn!(%machine, "notification clicked, cannot focus {pane}: {message}")
                }
                _ => {}
            }
        });
    }
}

/// The wire form of a decided notification, for a follower.
pub fn note_request(input: &NoteInput) -> NoteRequest {
    NoteRequest {
        window: input.window,
        pane: input.pane,
        window_name: input.window_name.clone(),
        kind: input.kind.as_str().into(),
        title: input.title.clone(),
        message: input.message.clone(),
        waiting: input.waiting,
        progress: input.progress,
        subtasks: input.subtasks.clone(),
    }
}
