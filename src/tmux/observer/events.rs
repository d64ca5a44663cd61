//! What the observer reports: the connections' events (notifications in batches, pipe
//! events, a connection closing) turned into [`Observed`] — a pane's bytes (unless its pipe
//! carries them), a title or command the subscriptions changed, the world format, a change of
//! structure or of clients, a pane paused or continued, the server gone.

use super::{world, Observed, Observer, Target, SUB_COMMAND, SUB_FOCUS, SUB_TITLE};
use crate::tmux::connection::{ConnEvent, ConnId};
use crate::tmux::escape::PaneBytes;
use crate::tmux::protocol::Notification;

impl Observer {
    /// Waits for the next thing worth reporting. Cancel-safe.
    pub async fn next(&mut self) -> Observed {
        loop {
            if let Some(o) = self.next_queued() {
                return o;
            }
            let Some((id, ev)) = self.rx.recv().await else {
                return Observed::ServerGone;
            };
            if let Some(o) = self.on_event(id, ev) {
                return o;
            }
        }
    }

    /// What [`Observer::next`] would return without waiting, if anything: lets the daemon
    /// take in output already read before it acts on a timer.
    pub fn try_next(&mut self) -> Option<Observed> {
        loop {
            if let Some(o) = self.next_queued() {
                return Some(o);
            }
            let (id, ev) = self.rx.try_recv().ok()?;
            if let Some(o) = self.on_event(id, ev) {
                return Some(o);
            }
        }
    }

    fn next_queued(&mut self) -> Option<Observed> {
        if let Some(o) = self.found.pop_front() {
            return Some(o);
        }
        while let Some((id, n)) = self.queued.pop_front() {
            if let Some(o) = self.on_notification(id, n) {
                return Some(o);
            }
        }
        None
    }

    pub(super) fn on_event(&mut self, id: ConnId, ev: ConnEvent) -> Option<Observed> {
        match ev {
            ConnEvent::Closed(reason) => {
                if let Some(s) = self.by_id.remove(&id) {
                    if self.conns.get(&s).map(|c| c.id()) == Some(id) {
                        self.conns.remove(&s);
                    }
                    tracing::debug!(session = %s, ?reason, "control client ended");
                }
                if !self.addr.is_alive()
                    || !self.server_process_alive()
                    || (self.conns.is_empty() && self.piping.pipes.is_none())
                {
                    self.conns.clear();
                    return Some(Observed::ServerGone);
                }
                // With pipes one client watches the server: when its session goes, the re-list
                // that follows attaches another ([`Observer::attach_missing`]).
                self.structure_of(None)
            }
            ConnEvent::Batch(notes) => {
                self.queued.extend(notes.into_iter().map(|n| (id, n)));
                None
            }
            ConnEvent::Pipe(ev) => self.on_pipe(ev),
        }
    }

    fn on_notification(&mut self, id: ConnId, n: Notification) -> Option<Observed> {
        use Notification as N;
        match n {
            N::Output { pane, data } | N::ExtendedOutput { pane, data, .. } => {
                // A piped pane's bytes come through its pipe; this copy would come twice.
                if self.piping.piped(pane) {
                    return None;
                }
                Some(Observed::Output {
                    pane,
                    data: PaneBytes::Escaped(data),
                })
            }
            N::SubscriptionChanged { name, .. } if name == SUB_FOCUS => Some(Observed::Clients),
            N::SubscriptionChanged { name, value, .. } if name == world::SUB_WORLD => {
                self.on_world(&value);
                None
            }
            N::SubscriptionChanged {
                name,
                pane: Some(pane),
                value,
                ..
            } => {
                let p = self.inventory.panes.get_mut(&pane)?;
                if name.starts_with(SUB_TITLE) && p.title != value {
                    p.title = value;
                    Some(Observed::Title(pane))
                } else if name.starts_with(SUB_COMMAND) {
                    let (pid, command) = value.split_once(' ').unwrap_or((&value, ""));
                    let pid = pid.parse().unwrap_or(p.pid);
                    if p.current_command == command && p.pid == pid {
                        return None;
                    }
                    p.current_command = command.to_string();
                    p.pid = pid;
                    Some(Observed::Command(pane))
                } else {
                    None
                }
            }
            N::SessionChanged(s, _) => {
                // Our client was moved to another session (its own was destroyed with
                // detach-on-destroy off): follow it, and let refresh drop duplicates.
                let old = self.by_id.insert(id, s);
                if let Some(old) = old {
                    if old != s && self.conns.get(&old).map(|c| c.id()) == Some(id) {
                        if let Some(c) = self.conns.remove(&old) {
                            self.conns.entry(s).or_insert(c);
                        }
                    }
                }
                // Which client sees which session: every re-list lists sessions and clients.
                Some(Observed::Structure)
            }
            N::WindowAdd(w) | N::UnlinkedWindowAdd(w) => {
                tracing::trace!(notification = ?n, "structure");
                self.structure_of(Some(Target::SessionOf(w)))
            }
            // A window closed: the list that finds it gone asks for the sessions that showed it
            // (`relist::Merged::shrunk`: with `renumber-windows` their other windows moved, and
            // nothing else says so).
            N::WindowClose(w)
            | N::UnlinkedWindowClose(w)
            | N::WindowRenamed(w, _)
            | N::LayoutChange(w)
            | N::WindowPaneChanged(w, _) => {
                tracing::trace!(notification = ?n, "structure");
                self.structure_of(Some(Target::Window(w)))
            }
            N::PaneModeChanged(p) => {
                tracing::trace!(notification = ?n, "structure");
                self.structure_of(Some(Target::Pane(p)))
            }
            N::SessionWindowChanged(s, _) => {
                tracing::trace!(notification = ?n, "structure");
                self.structure_of(Some(Target::Session(s)))
            }
            N::SessionRenamed(..) | N::SessionsChanged => {
                // Every re-list lists the sessions: nothing more to cover.
                tracing::trace!(notification = ?n, "structure");
                Some(Observed::Structure)
            }
            N::ClientSessionChanged(_) | N::ClientDetached(_) => Some(Observed::Clients),
            N::Pause(p) => Some(Observed::Paused(p)),
            N::Continue(p) => Some(Observed::Continued(p)),
            N::SubscriptionChanged { .. } | N::Reply(_) | N::Exit(_) | N::Other(_) => None,
        }
    }
}
