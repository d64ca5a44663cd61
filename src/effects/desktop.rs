//! Desktop notifications over `org.freedesktop.Notifications` (S6.6, S6.7), with zbus on one
//! long-lived session-bus connection owned by a task. The task subscribes to `ActionInvoked` and
//! `NotificationClosed` before its first `Notify`, remembers which pane each notification is
//! about, and forwards clicks on a channel. When the bus or the server goes away it logs one
//! warning (and sends [`DesktopEvent::Unavailable`]), keeps working, and reconnects on the next
//! notification after a backoff.

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
    },
    /// A notification went away (dismissed, expired or closed by us).
    Closed {
        /// The pane it was about.
        pane: PaneId,
        /// Its window.
        window: WindowId,
        /// The notification id.
        id: u32,
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
}

impl Default for DesktopConfig {
    fn default() -> Self {
        DesktopConfig {
            address: None,
            backoff: DEFAULT_BACKOFF,
        }
    }
}

enum Cmd {
    Notify(Note, oneshot::Sender<Option<u32>>),
    CloseWindow(WindowId),
}

/// Handle on the notification task; cheap to clone. The task ends when every handle is dropped.
#[derive(Clone, Debug)]
pub struct Desktop {
    cmds: mpsc::UnboundedSender<Cmd>,
}

impl Desktop {
    /// Starts the task (inside a tokio runtime). Nothing connects until the first notification.
    pub fn spawn(config: DesktopConfig) -> (Desktop, mpsc::UnboundedReceiver<DesktopEvent>) {
        let (cmds, rx) = mpsc::unbounded_channel();
        let (events, events_rx) = mpsc::unbounded_channel();
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
        self.cmds.send(Cmd::Notify(note, tx)).ok()?;
        rx.await.ok().flatten()
    }

    /// Closes the window's notification, if one is shown (the person looked at the window).
    pub fn close_window(&self, window: WindowId) {
        let _ = self.cmds.send(Cmd::CloseWindow(window));
    }
}

enum Signal {
    Action(u32, String),
    Closed(u32),
}

type Signals = Pin<Box<dyn Stream<Item = Signal> + Send>>;

struct Live {
    proxy: NotificationsProxy<'static>,
    signals: Signals,
}

struct Task {
    config: DesktopConfig,
    events: mpsc::UnboundedSender<DesktopEvent>,
    live: Option<Live>,
    retry_at: Option<Instant>,
    healthy: bool,
    by_id: HashMap<u32, (PaneId, WindowId)>,
    by_window: HashMap<WindowId, u32>,
}

async fn next_signal(live: &mut Option<Live>) -> Option<Signal> {
    match live {
        Some(l) => l.signals.next().await,
        None => std::future::pending().await,
    }
}

impl Task {
    async fn run(mut self, mut cmds: mpsc::UnboundedReceiver<Cmd>) {
        loop {
            tokio::select! {
                cmd = cmds.recv() => match cmd {
                    None => break,
                    Some(Cmd::Notify(note, reply)) => {
                        let id = self.notify(&note).await;
                        let _ = reply.send(id);
                    }
                    Some(Cmd::CloseWindow(window)) => self.close_window(window).await,
                },
                sig = next_signal(&mut self.live) => match sig {
                    Some(sig) => self.signal(sig),
                    None => self.lost("the session bus connection closed".into()),
                },
            }
        }
    }

    fn signal(&mut self, sig: Signal) {
        match sig {
            Signal::Action(id, key) if key == "default" => {
                if let Some(&(pane, window)) = self.by_id.get(&id) {
                    let _ = self.events.send(DesktopEvent::Clicked { pane, window, id });
                }
            }
            Signal::Action(..) => {}
            Signal::Closed(id) => {
                if let Some((pane, window)) = self.by_id.remove(&id) {
                    if self.by_window.get(&window) == Some(&id) {
                        self.by_window.remove(&window);
                    }
                    let _ = self.events.send(DesktopEvent::Closed { pane, window, id });
                }
            }
        }
    }

    fn warn(&mut self, why: String) {
        if std::mem::replace(&mut self.healthy, false) {
            tracing::warn!("desktop notifications unavailable: {why}");
            let _ = self.events.send(DesktopEvent::Unavailable(why));
        }
    }

    fn lost(&mut self, why: String) {
        self.live = None;
        self.by_id.clear();
        self.by_window.clear();
        self.retry_at = Some(Instant::now() + self.config.backoff);
        self.warn(why);
    }

    async fn connect(&mut self) -> zbus::Result<()> {
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
                |s| async move { s.args().ok().map(|a| Signal::Action(a.id, a.action_key)) },
            );
        let closed = proxy
            .receive_notification_closed()
            .await?
            .filter_map(|s| async move { s.args().ok().map(|a| Signal::Closed(a.id)) });
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
        let replaces = self.by_window.get(&note.window).copied().unwrap_or(0);
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
        match sent.await {
            Ok(id) => {
                if !std::mem::replace(&mut self.healthy, true) {
                    tracing::info!("desktop notifications work again");
                }
                self.by_id.insert(id, (note.pane, note.window));
                self.by_window.insert(note.window, id);
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

    async fn close_window(&mut self, window: WindowId) {
        let (Some(id), Some(live)) = (self.by_window.remove(&window), self.live.as_ref()) else {
            return;
        };
        if let Err(e) = live.proxy.close_notification(id).await {
            tracing::debug!("CloseNotification {id}: {e}");
        }
    }
}
