//! The connection to the tmux server, from the daemon's side: the observer, connecting and
//! reconnecting with backoff, re-listing after structural notifications, listing clients, and
//! sending capture rounds. Every query to tmux goes out at once and its answer comes back as a
//! [`Done`] event carrying the observer's generation, so an answer from a server that has gone
//! since is dropped, and the core loop never waits for tmux.
//!
//! Owns ([`Link`]): the observer, its generation, the backoff and "waiting" log, and which
//! queries are in flight.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::core::{Daemon, Done};
use super::screen_model::CursorState;
use super::status_line::{Argv, StatusLine};
use super::{ATTACH_BUDGET, CONNECT_TIMEOUT, TMUX_REPLY_TIMEOUT};
use crate::clock::Now;
use crate::ids::{PaneId, WindowId};
use crate::thread::persist;
use crate::tmux::connection::CommandError;
use crate::tmux::inventory::ClientInfo;
use crate::tmux::observer::{Lists, ObserveError, Observer};
use crate::tmux::pipe::PipeConfig;

/// Delay between structural notifications and the re-listing they cause (they come in bursts).
const RELIST_DELAY: Duration = Duration::from_millis(15);
/// Longest wait between attempts to reach a tmux server that is not there.
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// The first wait after a server went away.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// A new observer, with this server's saved done marks.
/// A new observer, with this server's saved done marks.
pub(super) struct Connected {
    observer: Observer,
    done: BTreeSet<WindowId>,
    key: String,
    /// The commands that clear status-line options an earlier sidecar left.
    leftovers: Vec<Argv>,
}

/// The connection to the tmux server: the observer, and how the next one is sought.
pub(super) struct Link {
    /// The observer of the server attached to.
    pub observer: Option<Observer>,
    /// Bumped at each new observer; answers of older ones are dropped.
    pub generation: u64,
    /// A connect is in flight.
    connecting: bool,
    /// When to try to connect next.
    reconnect_at: Option<Instant>,
    backoff: Duration,
    /// "Waiting for the server" was logged for this outage.
    waiting_logged: bool,
    /// When to re-list next.
    relist_at: Option<Instant>,
    /// A re-list is in flight.
    relisting: bool,
    /// A client list is in flight; another is wanted after it.
    clients_query: bool,
    clients_again: bool,
}

impl Link {
    pub(super) fn new(now: Instant) -> Link {
        Link {
            observer: None,
            generation: 0,
            connecting: false,
            reconnect_at: Some(now),
            backoff: FIRST_BACKOFF,
            waiting_logged: false,
            relist_at: None,
            relisting: false,
            clients_query: false,
            clients_again: false,
        }
    }

    /// Asks for a re-list shortly (notifications come in bursts).
    pub fn relist_soon(&mut self, now: Instant) {
        self.relist_at.get_or_insert(now + RELIST_DELAY);
    }

    /// Asks for a re-list of every pane shortly (the daemon changed something that no
    /// notification names exactly).
    pub fn relist_all_soon(&mut self, now: Instant) {
        if let Some(o) = &mut self.observer {
            o.want_full_relist();
        }
        self.relist_soon(now);
    }

    /// Connecting failed: the next try after the backoff, which doubles up to [`MAX_BACKOFF`].
    fn retry(&mut self, now: Instant) {
        self.reconnect_at = Some(now + self.backoff);
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }

    /// What is due at `now` and not in flight: (connect, re-list). Taking it clears it.
    pub(super) fn take_due(&mut self, now: Instant) -> (bool, bool) {
        let connect = !self.connecting && self.reconnect_at.is_some_and(|d| d <= now);
        if connect {
            self.reconnect_at = None;
        }
        let relist = !self.relisting && self.relist_at.is_some_and(|d| d <= now);
        if relist {
            self.relist_at = None;
        }
        (connect, relist)
    }

    /// The nearest of its deadlines.
    pub(super) fn deadline(&self) -> Option<Instant> {
        [
            self.reconnect_at.filter(|_| !self.connecting),
            self.relist_at.filter(|_| !self.relisting),
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

impl Daemon {
    /// Starts connecting to the server (in flight until [`Done::Connected`]); without tmux
    /// here, there is nothing to connect to.
    pub(super) fn connect(&mut self) {
        let Some(tmux) = self.tmux.clone() else {
            return;
        };
        self.link.connecting = true;
        let (addr, pacing) = (self.addr.clone(), self.pacing.clone());
        let done_path = self.done_path();
        let pipes = if self.config.config.pane_pipes {
            PipeConfig::beside(&crate::ipc::socket_path(&self.addr))
                .map_err(|e| tracing::warn!(error = %e, "cannot find this binary for the pane pipes' relay"))
                .ok()
        } else {
            None
        };
        self.tasks.push(Box::pin(async move {
            let connected = tokio::time::timeout(CONNECT_TIMEOUT, async {
                let mut observer = Observer::connect_with(tmux, addr, pacing, pipes).await?;
                let leftovers = leftover_options(&mut observer).await;
                let mut parts = observer.server_identity().split(crate::tmux::command::SEP);
                let pid = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
                let start = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
                let key = persist::server_key(pid, start);
                let k = key.clone();
                let done =
                    tokio::task::spawn_blocking(move || persist::load_or_empty(&done_path, &k))
                        .await
                        .unwrap_or_default();
                Ok(Connected {
                    observer,
                    done,
                    key,
                    leftovers,
                })
            })
            .await
            .unwrap_or_else(|_| {
                Err(ObserveError::Ended(format!(
                    "connecting took longer than {CONNECT_TIMEOUT:?}"
                )))
            });
            Done::Connected(Box::new(connected))
        }));
    }

    pub(super) fn start_relist(&mut self) {
        let Some(obs) = &mut self.link.observer else {
            return;
        };
        self.link.relisting = true;
        let (gen, q) = (self.link.generation, obs.start_relist());
        let timer = self.pacing.timer.clone();
        self.tasks.push(Box::pin(async move {
            let r = timer
                .timeout(TMUX_REPLY_TIMEOUT, q)
                .await
                .unwrap_or(Err(CommandError::Timeout(TMUX_REPLY_TIMEOUT)));
            Done::Relisted(gen, r)
        }));
    }

    pub(super) fn start_clients(&mut self) {
        let Some(obs) = &self.link.observer else {
            return;
        };
        if self.link.clients_query {
            self.link.clients_again = true;
            return;
        }
        self.link.clients_query = true;
        let (gen, q) = (self.link.generation, obs.start_clients());
        let timer = self.pacing.timer.clone();
        self.tasks.push(Box::pin(async move {
            let r = timer
                .timeout(TMUX_REPLY_TIMEOUT, q)
                .await
                .unwrap_or(Err(CommandError::Timeout(TMUX_REPLY_TIMEOUT)));
            Done::Clients(gen, r)
        }));
    }

    pub(super) fn start_captures(&mut self, panes: &[PaneId]) {
        let Some(obs) = self.link.observer.as_ref().filter(|_| !panes.is_empty()) else {
            self.captures.finish([]);
            return;
        };
        // Panes whose redraws were paused are resumed with their capture (see `redraw`).
        let resume: Vec<PaneId> = panes
            .iter()
            .filter(|id| {
                self.panes
                    .get_mut(id)
                    .is_some_and(|p| p.redraw.on_capture().is_some())
            })
            .copied()
            .collect();
        // A screen model that may need a seed needs tmux's cursor state with the screen.
        let cursor: Vec<PaneId> = panes
            .iter()
            .filter(|id| {
                self.panes
                    .get(id)
                    .and_then(|p| p.model.as_ref())
                    .is_some_and(|m| m.wants_cursor())
            })
            .copied()
            .collect();
        let q = obs.start_captures(panes, &resume, &cursor, CursorState::FORMAT);
        let gen = self.link.generation;
        let timer = self.pacing.timer.clone();
        self.tasks.push(Box::pin(async move {
            let screens = timer
                .timeout(TMUX_REPLY_TIMEOUT, q)
                .await
                .unwrap_or_default();
            Done::Captured(gen, screens)
        }));
    }

    pub(super) fn on_connected(&mut self, now: Now, c: Result<Connected, ObserveError>) {
        self.link.connecting = false;
        let deferred = self.deferred.take();
        match c {
            Ok(c) => self.attached(now, c),
            Err(e) => {
                if !self.link.waiting_logged {
                    tracing::info!(reason = %e, "waiting for tmux server at {}", self.addr.socket.display());
                    self.link.waiting_logged = true;
                }
                self.link.retry(now.at);
            }
        }
        for m in deferred.into_iter().flatten() {
            self.on_ipc(now, m);
        }
    }

    pub(super) async fn on_relisted(&mut self, now: Now, gen: u64, r: Result<Lists, CommandError>) {
        if gen != self.link.generation {
            return;
        }
        self.link.relisting = false;
        match r {
            Ok(lists) => self.relisted(now, lists).await,
            Err(e) => {
                tracing::debug!(error = %e, "re-listing failed; again shortly");
                if let Some(obs) = &mut self.link.observer {
                    // What it was to cover is not known any more: all of it.
                    obs.want_full_relist();
                    obs.relist_done();
                    if obs.connection_count() == 0 {
                        // With pipes one client watches the server, and its session is gone:
                        // attach another first (local work, bounded).
                        let _ = self
                            .pacing
                            .timer
                            .timeout(ATTACH_BUDGET, obs.attach_missing())
                            .await;
                    }
                    self.link.relist_at = Some(now.at + self.link.backoff);
                }
            }
        }
    }

    pub(super) fn on_clients(
        &mut self,
        now: Now,
        gen: u64,
        r: Result<Vec<ClientInfo>, CommandError>,
    ) {
        if gen != self.link.generation {
            return;
        }
        self.link.clients_query = false;
        match r {
            Ok(clients) => {
                if let Some(o) = &mut self.link.observer {
                    o.apply_clients(clients);
                }
                self.update_looked(now);
                self.update_client_rows();
            }
            Err(e) => tracing::debug!(error = %e, "list-clients failed"),
        }
        if std::mem::take(&mut self.link.clients_again) {
            self.start_clients();
        }
        if self.terminal.next_deadline().is_some() {
            self.terminal_check(now, true);
        }
    }

    /// A new observer: everything is listed, options set, done marks restored.
    fn attached(&mut self, now: Now, c: Connected) {
        let Connected {
            observer,
            done,
            key,
            leftovers,
        } = c;
        tracing::info!(
            tmux = %self.addr.socket.display(),
            sessions = observer.inventory().sessions.len(),
            panes = observer.inventory().panes.len(),
            "attached to tmux server"
        );
        self.notifier
            .set_focus_events(observer.inventory().focus_events);
        self.link.observer = Some(observer);
        self.link.generation += 1;
        self.link.waiting_logged = false;
        self.link.backoff = FIRST_BACKOFF;
        // Before any option of ours: the defaults, and what an earlier sidecar left cleared.
        for argv in self.status.defaults().into_iter().chain(leftovers) {
            self.tmux_send(&argv);
        }
        self.restore_done(now, done, key);
        self.sync_panes(now);
        self.update_looked(now);
        self.refresh_all_options(now);
        self.probe_at = Some(
            self.pacing
                .reads()
                .at_or_after(now.at + Duration::from_secs(self.config.config.probe_interval_s)),
        );
        self.changed = true;
    }

    async fn relisted(&mut self, now: Now, lists: Lists) {
        let Some(obs) = &mut self.link.observer else {
            return;
        };
        obs.apply_relist(lists);
        // Local work, bounded: a stopped tmux server does not hold the loop here.
        let late = self
            .pacing
            .timer
            .timeout(ATTACH_BUDGET, obs.attach_missing())
            .await
            .is_none();
        let focus_events = obs.inventory().focus_events;
        if late {
            tracing::warn!("attaching control clients took longer than {ATTACH_BUDGET:?}");
            self.link.relist_soon(now.at);
        }
        self.notifier.set_focus_events(focus_events);
        self.sync_panes(now);
        self.update_looked(now);
        self.changed = true;
    }

    pub(super) fn server_gone(&mut self, now: Now) {
        tracing::warn!(
            "tmux server at {} went away; waiting for it to come back",
            self.addr.socket.display()
        );
        self.link.observer = None;
        self.link.generation += 1;
        self.link.relist_at = None;
        self.link.relisting = false;
        self.link.clients_query = false;
        self.link.clients_again = false;
        self.link.waiting_logged = true;
        self.link.backoff = FIRST_BACKOFF;
        self.link.retry(now.at);
        self.panes.clear();
        self.captures.reset();
        self.pacing.quick.clear();
        self.prober.reset();
        self.windows.reset();
        self.status.reset();
        self.option_batch.reset();
        self.notifier.reset();
        self.probe_at = None;
        self.changed = true;
    }
}

/// The commands that clear the status-line options an earlier sidecar left on this server
/// (killed before it could clear them; see `StatusLine::leftover_unsets`). A list that fails
/// leaves its part as it is: logged, not fatal.
async fn leftover_options(observer: &mut Observer) -> Vec<Argv> {
    let mut bodies: Vec<Vec<String>> = Vec::new();
    for q in StatusLine::leftover_queries() {
        match observer.command(q).await {
            Ok(body) => bodies.push(body),
            Err(e) => {
                tracing::warn!(error = %e, "cannot list the status line's options left by an earlier sidecar");
                bodies.push(Vec::new());
            }
        }
    }
    let unsets = StatusLine::leftover_unsets(&bodies[0], &bodies[1], &bodies[2]);
    if !unsets.is_empty() {
        tracing::info!(
            commands = unsets.len(),
            "clearing status-line options an earlier sidecar left"
        );
    }
    unsets
}
