//! Desktop notifications over `org.freedesktop.Notifications` (S6.6, S6.7), with zbus on one
//! long-lived session-bus connection owned by a task. The task subscribes to `ActionInvoked` and
//! `NotificationClosed` before its first `Notify`, remembers which pane each notification is
//! about, and forwards clicks on a channel. When the bus or the server goes away it logs one
//! warning (and sends [`DesktopEvent::Unavailable`]), keeps working, and reconnects on the next
//! notification after a backoff. Every D-Bus call has a time limit ([`CALL_TIMEOUT`]): a
//! notification server that hangs counts as gone. Both channels are bounded ([`QUEUE`]): a
//! notification that finds the task's queue full is dropped with a log line, never waited for.

use std::collections::HashMap;
use std::pin::Pin;
use std::time::Duration;

use futures_util::stream::{self, Stream, StreamExt};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use zbus::zvariant::Value;

use super::notification::{Note, APP_NAME};
use crate::ids::{PaneId, WindowId};

/// How long after a lost connection the next notification tries to reconnect.
pub const DEFAULT_BACKOFF: Duration = Duration::from_secs(10);
/// The longest wait for the bus or the notification server to answer one call.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// Room in the command and event channels.
pub const QUEUE: usize = 64;

#[zbus::proxy(
    interface = "org.freedesktop.Notifications",
    default_service = "org.freedesktop.Notifications",
    default_path = "/org/freedesktop/Notifications"
)]
trait Notifications {
    #[allow(clippy::too_many_arguments)]
    fn notify(
        &self,
        app_name: &str,
        replaces_id: u32,
        app_icon: &str,
        summary: &str,
        body: &str,
        actions: &[&str],
        hints: HashMap<&str, Value<'_>>,
        expire_timeout: i32,
    ) -> zbus::Result<u32>;

    fn close_notification(&self, id: u32) -> zbus::Result<()>;

    #[zbus(signal)]
    fn action_invoked(&self, id: u32, action_key: String) -> zbus::Result<()>;

    #[zbus(signal)]
    fn notification_closed(&self, id: u32, reason: u32) -> zbus::Result<()>;
}

/// What comes back from the notification server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DesktopEvent {
    /// The person clicked a notification (its `default` action): bring the pane to the front.
    Clicked {
        /// The pane.
        pane: PaneId,
        /// Its window.
        window: WindowId,
        /// The notification id.
        id: u32,
        /// The connected machine the pane is on (None: this computer).
        machine: Option<String>,
    },
    /// A notification went away (dismissed, expired or closed by us).
    Closed {
        /// The pane it was about.
        pane: PaneId,
        /// Its window.
        window: WindowId,
        /// The notification id.
        id: u32,
        /// The connected machine the pane is on (None: this computer).
        machine: Option<String>,
    },
    /// The bus or the server stopped answering (sent once per outage; also logged).
    Unavailable(String),
}

/// Where to find the session bus and how patient to be.
#[derive(Clone, Debug)]
pub struct DesktopConfig {
    /// A D-Bus address; `None`: `DBUS_SESSION_BUS_ADDRESS`.
    pub address: Option<String>,
    /// Wait after a lost connection before reconnecting.
    pub backoff: Duration,
    /// The longest wait for one D-Bus call.
    pub call_timeout: Duration,
}

impl Default for DesktopConfig {
    fn default() -> Self {
        DesktopConfig {
            address: None,
            backoff: DEFAULT_BACKOFF,
            call_timeout: CALL_TIMEOUT,
        }
    }
}

enum Cmd {
    Notify(Note, Option<oneshot::Sender<Option<u32>>>),
    CloseWindow(Option<String>, WindowId),
}

/// Where a notification points: the machine (None: this computer), the window, the pane.
type Target = (Option<String>, WindowId, PaneId);

/// Handle on the notification task; cheap to clone. The task ends when every handle is dropped.
#[derive(Clone, Debug)]
pub struct Desktop {
    cmds: mpsc::Sender<Cmd>,
}

impl Desktop {
    /// Starts the task (inside a tokio runtime). Nothing connects until the first notification.
    pub fn spawn(config: DesktopConfig) -> (Desktop, mpsc::Receiver<DesktopEvent>) {
        let (cmds, rx) = mpsc::channel(QUEUE);
        let (events, events_rx) = mpsc::channel(QUEUE);
        let task = Task {
            config,
            events,
            live: None,
            retry_at: None,
            healthy: true,
            by_id: HashMap::new(),
            by_window: HashMap::new(),
        };
        tokio::spawn(task.run(rx));
        (Desktop { cmds }, events_rx)
    }

    /// Sends a notification; returns its id, or `None` when it could not be shown.
    pub async fn notify(&self, note: Note) -> Option<u32> {
        let (tx, rx) = oneshot::channel();
        self.cmds.send(Cmd::Notify(note, Some(tx))).await.ok()?;
        rx.await.ok().flatten()
    }

    /// Shows a notification without waiting for anything: dropped, with a log line, when the
    /// task is that far behind.
    pub fn show(&self, note: Note) {
        if let Err(e) = self.cmds.try_send(Cmd::Notify(note, None)) {
            tracing::warn!("desktop notification dropped: the notification task is behind ({e})");
        }
    }

    /// Closes the window's notification, if one is shown (the person looked at the window).
    pub fn close_window(&self, window: WindowId) {
        let _ = self.cmds.try_send(Cmd::CloseWindow(None, window));
    }
}

/// What the notification server signals.
enum BusSignal {
    Action(u32, String),
    Closed(u32),
}

type Signals = Pin<Box<dyn Stream<Item = BusSignal> + Send>>;

struct Live {
    proxy: NotificationsProxy<'static>,
    signals: Signals,
}

struct Task {
    config: DesktopConfig,
    events: mpsc::Sender<DesktopEvent>,
    live: Option<Live>,
    retry_at: Option<Instant>,
    healthy: bool,
    by_id: HashMap<u32, Target>,
    by_window: HashMap<(Option<String>, WindowId), u32>,
}

async fn next_signal(live: &mut Option<Live>) -> Option<BusSignal> {
    match live {
        Some(l) => l.signals.next().await,
        None => std::future::pending().await,
    }
}

impl Task {
    async fn run(mut self, mut cmds: mpsc::Receiver<Cmd>) {
        loop {
            tokio::select! {
                cmd = cmds.recv() => match cmd {
                    None => break,
                    Some(Cmd::Notify(note, reply)) => {
                        let id = self.notify(&note).await;
                        if let Some(r) = reply {
                            let _ = r.send(id);
                        }
                    }
                    Some(Cmd::CloseWindow(machine, window)) => self.close_window(machine, window).await,
                },
                sig = next_signal(&mut self.live) => match sig {
                    Some(sig) => self.signal(sig),
                    None => self.lost("the session bus connection closed".into()),
                },
            }
        }
    }

    fn signal(&mut self, sig: BusSignal) {
        match sig {
            BusSignal::Action(id, key) if key == "default" => {
                if let Some((machine, window, pane)) = self.by_id.get(&id).cloned() {
                    self.event(DesktopEvent::Clicked {
                        pane,
                        window,
                        id,
                        machine,
                    });
                }
            }
            BusSignal::Action(..) => {}
            BusSignal::Closed(id) => {
                if let Some((machine, window, pane)) = self.by_id.remove(&id) {
                    let key = (machine, window);
                    if self.by_window.get(&key) == Some(&id) {
                        self.by_window.remove(&key);
                    }
                    self.event(DesktopEvent::Closed {
                        pane,
                        window,
                        id,
                        machine: key.0,
                    });
                }
            }
        }
    }

    /// Tells the daemon; an event that finds the queue full is dropped with a log line (the
    /// daemon reads them at once; a full queue means it is stopping).
    fn event(&self, e: DesktopEvent) {
        if let Err(err) = self.events.try_send(e) {
            tracing::debug!("desktop event dropped: {err}");
        }
    }

    fn warn(&mut self, why: String) {
        if std::mem::replace(&mut self.healthy, false) {
            tracing::warn!("desktop notifications unavailable: {why}");
            self.event(DesktopEvent::Unavailable(why));
        }
    }

    fn lost(&mut self, why: String) {
        self.live = None;
        self.by_id.clear();
        self.by_window.clear();
        self.retry_at = Some(Instant::now() + self.config.backoff);
        self.warn(why);
    }

    /// Connects within the call time limit.
    async fn connect(&mut self) -> zbus::Result<()> {
        let limit = self.config.call_timeout;
        match tokio::time::timeout(limit, self.connect_now()).await {
            Ok(r) => r,
            Err(_) => Err(zbus::Error::Failure(format!(
                "the session bus did not answer within {limit:?}"
            ))),
        }
    }

    async fn connect_now(&mut self) -> zbus::Result<()> {
        let conn = match &self.config.address {
            Some(a) => {
                zbus::connection::Builder::address(a.as_str())?
                    .build()
                    .await?
            }
            None => zbus::Connection::session().await?,
        };
        let proxy = NotificationsProxy::new(&conn).await?;
        let actions = proxy
            .receive_action_invoked()
            .await?
            .filter_map(
                |s| async move { s.args().ok().map(|a| BusSignal::Action(a.id, a.action_key)) },
            );
        let closed = proxy
            .receive_notification_closed()
            .await?
            .filter_map(|s| async move { s.args().ok().map(|a| BusSignal::Closed(a.id)) });
        let signals: Signals = Box::pin(stream::select(actions, closed));
        self.live = Some(Live { proxy, signals });
        Ok(())
    }

    async fn notify(&mut self, note: &Note) -> Option<u32> {
        if self.live.is_none() {
            if self.retry_at.is_some_and(|t| Instant::now() < t) {
                return None;
            }
            if let Err(e) = self.connect().await {
                self.lost(format!("cannot connect to the session bus: {e}"));
                return None;
            }
        }
        let live = self.live.as_ref()?;
        let key = (note.machine.clone(), note.window);
        let replaces = self.by_window.get(&key).copied().unwrap_or(0);
        let pane = note.pane.to_string();
        let mut hints: HashMap<&str, Value<'_>> = HashMap::new();
        hints.insert("urgency", Value::U8(note.urgency.byte()));
        hints.insert("category", Value::from(note.category));
        hints.insert("x-thinkterm-pane", Value::from(pane.as_str()));
        if let Some(entry) = &note.desktop_entry {
            hints.insert("desktop-entry", Value::from(entry.as_str()));
        }
        let actions = ["default", "Show"];
        let sent = live.proxy.notify(
            APP_NAME,
            replaces,
            "",
            &note.summary,
            &note.body,
            &actions,
            hints,
            -1,
        );
        let limit = self.config.call_timeout;
        let answer = match tokio::time::timeout(limit, sent).await {
            Ok(a) => a,
            Err(_) => {
                self.lost(format!(
                    "the notification server did not answer within {limit:?}"
                ));
                return None;
            }
        };
        match answer {
            Ok(id) => {
                if !std::mem::replace(&mut self.healthy, true) {
                    tracing::info!("desktop notifications work again");
                }
                self.by_id
                    .insert(id, (note.machine.clone(), note.window, note.pane));
                self.by_window.insert(key, id);
                Some(id)
            }
            // The bus answered: the server is gone or refused. Keep the connection.
            Err(zbus::Error::MethodError(name, msg, _)) => {
                self.by_id.clear();
                self.by_window.clear();
                self.warn(format!("{name}: {}", msg.unwrap_or_default()));
                None
            }
            Err(e) => {
                self.lost(e.to_string());
                None
            }
        }
    }

    async fn close_window(&mut self, machine: Option<String>, window: WindowId) {
        let (Some(id), Some(live)) = (
            self.by_window.remove(&(machine, window)),
            self.live.as_ref(),
        ) else {
            return;
        };
        match tokio::time::timeout(self.config.call_timeout, live.proxy.close_notification(id))
            .await
        {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::debug!("CloseNotification {id}: {e}"),
            Err(_) => self.lost("CloseNotification did not answer in time".into()),
        }
    }
}
