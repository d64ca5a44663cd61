//! The observer's control clients: which sessions get one ([`Observer::targets`]: with pane
//! pipes one for the whole server, plus one per session holding a pane read through its client;
//! without, one per session group), attaching them (and finding a session when none is left),
//! and what each subscribes to.

use std::collections::{HashMap, HashSet};

use super::{
    world, ObserveError, Observed, Observer, Piping, ATTACH_TIMEOUT, SUB_COMMAND, SUB_FOCUS,
    SUB_TITLE,
};
use crate::ids::{PaneId, SessionId, WindowId};
use crate::tmux::command::quote;
use crate::tmux::connection::{ConnId, Connection, ATTACH_FLAGS, ATTACH_FLAGS_NO_OUTPUT};
use crate::tmux::server::ServerAddress;

impl Observer {
    /// Attaches a control client to `session` (taking output only without pipes).
    pub(super) async fn attach(&mut self, session: SessionId) -> Result<(), ObserveError> {
        let id = ConnId(self.next_id);
        self.next_id += 1;
        // With pipes, a client takes no output until its session holds a pane that cannot be
        // piped ([`Observer::sync_outputs`]).
        let output = self.piping.pipes.is_none();
        let flags = if output {
            ATTACH_FLAGS
        } else {
            ATTACH_FLAGS_NO_OUTPUT
        };
        let conn = Connection::attach(
            &self.addr,
            &session.to_string(),
            flags,
            id,
            self.tx.clone(),
            self.pacing.clone(),
        )
        .await?;
        tracing::debug!(%session, conn = id.0, output, "attached control client");
        if output {
            self.piping.output_on.insert(session);
        } else {
            self.piping.output_on.remove(&session);
        }
        self.by_id.insert(id, session);
        self.conns.insert(session, conn);
        Ok(())
    }

    /// Keeps the subscriptions in step with the inventory: each pane's title and command on the
    /// connection that sees it, the focus counter on one window of one connection.
    ///
    /// Only pane (`%N`) and window (`@N`) subscriptions: tmux (3.2 to 3.5a at least) evaluates
    /// session and all-panes/all-windows subscriptions through the client's session with no
    /// check, and a control client whose session was just killed keeps its subscriptions, with
    /// no session, until it is gone, so the once-a-second check crashes the server
    /// (`control_check_subs_all_panes`, `control.c`). Pane and window subscriptions look their
    /// target up by id and skip a client without a session.
    pub(super) fn sync_subscriptions(&mut self) {
        // With pipes, the world subscription tells every pane's first process (below); the
        // daemon sees a new program by itself.
        let per_pane = self.piping.pipes.is_none();
        let Observer {
            conns,
            inventory,
            subscribed,
            focus_sub,
            world_sub,
            world,
            ..
        } = self;
        let open: HashMap<ConnId, &Connection> = conns
            .values()
            .filter(|c| c.is_open())
            .map(|c| (c.id(), c))
            .collect();
        // The command's subscription carries the pane's first process too: `respawn-pane`
        // changes it, and nothing else says so.
        let pane_subs = |pane: PaneId| {
            [
                (format!("{SUB_TITLE}{}", pane.0), "#{pane_title}"),
                (
                    format!("{SUB_COMMAND}{}", pane.0),
                    "#{pane_pid} #{pane_current_command}",
                ),
            ]
        };
        let unsubscribe = |conn: Option<&&Connection>, pane: PaneId| {
            if let Some(c) = conn {
                for (name, _) in pane_subs(pane) {
                    c.send(format!("refresh-client -B {name}"));
                }
            }
        };
        subscribed.retain(|pane, conn| {
            let keep = inventory.panes.contains_key(pane);
            if !keep {
                unsubscribe(open.get(conn), *pane);
            }
            keep
        });
        for (id, p) in inventory.panes.iter().filter(|_| per_pane) {
            let Some(conn) = inventory
                .covering_session(p.session)
                .and_then(|s| conns.get(&s))
                .filter(|c| c.is_open())
            else {
                continue;
            };
            match subscribed.get(id) {
                Some(c) if *c == conn.id() => continue,
                Some(old) => unsubscribe(open.get(old), *id),
                None => {}
            }
            for (name, format) in pane_subs(*id) {
                let arg = format!("{name}:{id}:{format}");
                conn.send(format!("refresh-client -B {}", quote(&arg)));
            }
            subscribed.insert(*id, conn.id());
        }
        let current = focus_sub.filter(|(conn, window)| {
            open.contains_key(conn) && inventory.panes.values().any(|p| p.window == *window)
        });
        if current.is_none() {
            *focus_sub = None;
            // Any window a connection sees will do.
            let target = inventory.panes.values().find_map(|p| {
                let conn = inventory
                    .covering_session(p.session)
                    .and_then(|s| conns.get(&s))
                    .filter(|c| c.is_open())?;
                Some((conn, p.window))
            });
            if let Some((conn, window)) = target {
                let arg = format!("{SUB_FOCUS}:{window}:#{{@thinkterm_focus}}");
                conn.send(format!("refresh-client -B {}", quote(&arg)));
                *focus_sub = Some((conn.id(), window));
            }
        }
        // With pipes: the world, on the focus counter's window (any window our client sees).
        let wanted = focus_sub.filter(|_| !per_pane);
        if *world_sub != wanted {
            if let Some(c) = world_sub.and_then(|(c, _)| open.get(&c)) {
                c.send(format!("refresh-client -B {}", world::SUB_WORLD));
            }
            if let Some(c) = wanted.and_then(|(c, _)| open.get(&c)) {
                let window = wanted.map(|(_, w)| w).unwrap_or(WindowId(0));
                let arg = format!("{}:{window}:{}", world::SUB_WORLD, world::format());
                c.send(format!("refresh-client -B {}", quote(&arg)));
            }
            *world_sub = wanted;
            // The first text from the new subscription is the new baseline.
            *world = None;
        }
    }

    /// The sessions to have a control client on. Through the control clients: one per session
    /// (group). With pipes: one client for the whole server (on the session it is on while that
    /// lasts, else the oldest), plus one per session (group) that holds a pane read through its
    /// client.
    pub(super) fn targets(&mut self) -> HashSet<SessionId> {
        if self.piping.pipes.is_none() {
            return self.inventory.attach_targets().into_iter().collect();
        }
        let sessions = &self.inventory.sessions;
        // The oldest session (the lowest id) is the likeliest to stay.
        let main = self
            .main
            .filter(|s| sessions.contains_key(s))
            .or_else(|| sessions.keys().next().copied());
        self.main = main;
        let mut out: HashSet<SessionId> = main.into_iter().collect();
        for (id, p) in &self.inventory.panes {
            if matches!(self.piping.panes.get(id), Some(Piping::Client(_))) {
                out.extend(self.inventory.covering_session(p.session));
            }
        }
        out
    }

    /// Attaches a control client to every session (group) that lacks one. Local work only (a
    /// socket connect and three writes per client): it never waits for tmux to answer. With no
    /// client left at all (the session of our one client was killed), first asks `tmux` which
    /// sessions there are.
    pub async fn attach_missing(&mut self) {
        if !self.conns.values().any(Connection::is_open) {
            if !self.server_process_alive() {
                // Our server is gone (its socket may already be another server's, with ids of
                // its own): say so rather than attach to whatever answers there.
                self.found.push_back(Observed::ServerGone);
                return;
            }
            match first_session(&self.tmux, &self.addr).await {
                Ok(Some(s)) => {
                    self.main = Some(s);
                    if !self.inventory.sessions.contains_key(&s) {
                        // Not listed yet: the re-list that follows the attach will.
                        if let Err(e) = self.attach(s).await {
                            tracing::warn!(session = %s, error = %e, "cannot attach control client");
                        }
                        self.sync_subscriptions();
                        return;
                    }
                }
                Ok(None) => {}
                Err(e) => tracing::debug!(error = %e, "cannot list sessions"),
            }
        }
        let wanted = self.targets();
        let mut missing: Vec<SessionId> = wanted
            .into_iter()
            .filter(|s| !self.conns.contains_key(s))
            .collect();
        missing.sort();
        let mut attached = false;
        for s in missing {
            match tokio::time::timeout(ATTACH_TIMEOUT, self.attach(s)).await {
                Ok(Ok(())) => attached = true,
                Ok(Err(e)) => {
                    tracing::warn!(session = %s, error = %e, "cannot attach control client")
                }
                Err(_) => tracing::warn!(session = %s, "attaching a control client timed out"),
            }
        }
        if attached {
            self.sync_subscriptions();
            self.sync_outputs();
        }
    }
}

/// The oldest session of the server at `addr` (the lowest id: the likeliest to stay), asked
/// with one `tmux list-sessions` (no control client needed).
pub(super) async fn first_session(
    tmux: &std::path::Path,
    addr: &ServerAddress,
) -> Result<Option<SessionId>, ObserveError> {
    let out = tokio::process::Command::new(tmux)
        .args(addr.tmux_args())
        .args(["list-sessions", "-F", "#{session_id}"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .await?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(SessionId::parse)
        .min())
}
