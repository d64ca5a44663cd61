//! The socket's requests: what each one asks of the daemon and what it is answered. A request
//! about another machine goes there ([`Daemon::route`]); the rest are answered from the
//! daemon's state at once, or by work whose answer replies later (focus, read, send, start,
//! reload). Subscribers are handed to the bus ([`super::bus`]); snapshots are built here.

use super::bus::Wants;
use super::core::Daemon;
use super::{snapshot, IpcMessage};
use crate::clock::Now;
use crate::ipc::schema::{Reply, Request};

impl Daemon {
    /// A request on the socket.
    pub(super) fn on_ipc(&mut self, now: Now, m: IpcMessage) {
        if let Some(waiting) = &mut self.deferred {
            waiting.push(m);
            return;
        }
        let reply = match m.request {
            Request::Agents => self.snapshot(now),
            Request::Subscribe => {
                let _ = m.reply.try_send(self.snapshot(now));
                self.bus.add(m.reply, Wants::EventsAndSnapshots);
                return;
            }
            Request::Events => {
                self.bus.add(m.reply, Wants::Events);
                return;
            }
            Request::Follow { notifications } => {
                let _ = m.reply.try_send(self.local_snapshot(now));
                self.bus.add(m.reply, Wants::Follow { notifications });
                return;
            }
            Request::Machines => Reply::Machines {
                machines: self.machines.machine_rows(now, self.started),
            },
            Request::AddMachine { machine } => {
                let name = machine.name.clone();
                match self.machines.add(machine, now.at) {
                    Ok(()) => {
                        self.changed = true;
                        Reply::Done {
                            message: format!("Machine {name} added; connecting."),
                        }
                    }
                    Err(message) => Reply::Error { message },
                }
            }
            Request::Reload => return self.reload(Some(m.reply)),
            Request::Explain { pane, machine } => {
                let ask = Request::Explain {
                    pane,
                    machine: None,
                };
                if self.route(machine.as_deref(), ask, &m.reply) {
                    return;
                }
                // A pane whose pipe is held closed: whether it wrote since the last look.
                self.take_held_writes(now.at);
                match self.panes.get(&pane) {
                    Some(p) => {
                        let mut value = p.explain(&self.rules.catalog);
                        value["wrote_ms_ago"] = p
                            .last_output
                            .map(|t| now.at.saturating_duration_since(t).as_millis() as u64)
                            .into();
                        // What a saved fixture needs besides the pane's own facts (issue 17).
                        if let Some(i) = self.inventory().and_then(|i| i.panes.get(&pane)) {
                            value["width"] = i.width.into();
                            value["height"] = i.height.into();
                            value["current_command"] = i.current_command.clone().into();
                        }
                        if let Some(o) = &self.link.observer {
                            value["output"] = o.output_source(pane).into();
                        }
                        Reply::Value { value }
                    }
                    None => Reply::Error {
                        message: format!("no pane {pane}"),
                    },
                }
            }
            Request::Focus {
                pane,
                client,
                machine,
            } => {
                let ask = Request::Focus {
                    pane,
                    client: client.clone(),
                    machine: None,
                };
                if self.route(machine.as_deref(), ask, &m.reply) {
                    return;
                }
                return self.focus(now, pane, client.as_deref(), Some(m.reply));
            }
            Request::Seen { pane, machine } => {
                let ask = Request::Seen {
                    pane,
                    machine: None,
                };
                if self.route(machine.as_deref(), ask, &m.reply) {
                    return;
                }
                self.seen(now, pane);
                Reply::Done {
                    message: format!("Results of {pane} seen."),
                }
            }
            Request::Notify {
                pane,
                machine,
                title,
                body,
            } => {
                let ask = Request::Notify {
                    pane,
                    machine: None,
                    title: title.clone(),
                    body: body.clone(),
                };
                if self.route(machine.as_deref(), ask, &m.reply) {
                    return;
                }
                self.message(now, pane, title, body)
            }
            Request::Read {
                pane,
                machine,
                lines,
            } => {
                let ask = Request::Read {
                    pane,
                    machine: None,
                    lines,
                };
                if !self.route(machine.as_deref(), ask, &m.reply) {
                    self.read_pane(pane, lines, m.reply);
                }
                return;
            }
            Request::Send {
                pane,
                machine,
                text,
                enter,
            } => {
                let ask = Request::Send {
                    pane,
                    machine: None,
                    text: text.clone(),
                    enter,
                };
                if !self.route(machine.as_deref(), ask, &m.reply) {
                    self.send_to_pane(now, pane, &text, enter, m.reply);
                }
                return;
            }
            Request::Start {
                machine,
                session,
                near,
                dir,
                name,
                command,
            } => {
                let ask = Request::Start {
                    machine: None,
                    session: session.clone(),
                    // The caller's pane is on this computer, not there.
                    near: None,
                    dir: dir.clone(),
                    name: name.clone(),
                    command: command.clone(),
                };
                if !self.route(machine.as_deref(), ask, &m.reply) {
                    let ask = super::drive::StartAsk {
                        session,
                        near,
                        dir,
                        name,
                        command,
                    };
                    self.start_window(ask, m.reply);
                }
                return;
            }
            Request::Doctor => self.doctor(),
        };
        let _ = m.reply.try_send(reply);
    }

    /// Every pane and window now: this computer's and every connected machine's.
    pub(super) fn snapshot(&self, now: Now) -> Reply {
        let (panes, windows) = self.machines.rows();
        self.snapshot_with(
            now,
            snapshot::Machines {
                local: &self.machines.local_name,
                panes,
                windows,
                list: self.machines.machine_rows(now, self.started),
            },
        )
    }

    /// This computer's panes and windows only (what a follower gets).
    pub(super) fn local_snapshot(&self, now: Now) -> Reply {
        self.snapshot_with(
            now,
            snapshot::Machines {
                local: &self.machines.local_name,
                panes: Vec::new(),
                windows: Vec::new(),
                list: Vec::new(),
            },
        )
    }

    /// This computer's panes and windows, with `machines`' beside them.
    fn snapshot_with(&self, now: Now, machines: snapshot::Machines<'_>) -> Reply {
        snapshot::build(
            now,
            snapshot::Shown {
                mark: &|w| self.shown_mark(w),
                shows: &|p| self.pane_shows(p),
                clients: self.nested.clients.clone(),
            },
            self.window_rows(now),
            self.inventory(),
            &self.panes,
            &self.rules.catalog,
            machines,
        )
    }
}
