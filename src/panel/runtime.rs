//! The live panel: a link thread that keeps a subscription to the daemon (reconnecting with
//! backoff), a key thread reading the terminal, and a loop that redraws on every message. No
//! polling: the loop blocks on its channel, and wakes on a timer only while something animates
//! (or once a second on a detail card, whose elapsed time moves).

use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use ratatui::crossterm::event::{self, Event, KeyEvent};

use crate::ids::PaneId;
use crate::ipc::schema::{Reply, Request};

use super::client::{send_to, Connection};
use super::keys::{handle_key, Outcome};
use super::model::{Link as LinkState, PanelModel, Screen};
use super::options::ViewOptions;

/// Milliseconds between animation frames while something works.
pub const FRAME_MS: u64 = 100;
/// First wait before reconnecting; doubles up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// Longest wait between reconnection attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// How long Enter waits for the daemon to answer Focus and Seen before closing.
pub const FOCUS_WAIT: Duration = Duration::from_secs(1);

/// What wakes the panel.
#[derive(Debug)]
pub enum Msg {
    /// A key.
    Key(KeyEvent),
    /// The terminal was resized.
    Resize,
    /// A message from the daemon.
    Reply(Reply),
    /// Connected and subscribed.
    Connected,
    /// The connection was lost, or could not be made.
    Disconnected,
}

/// The subscription to the daemon, kept alive by a thread.
#[derive(Debug)]
pub struct Link {
    writer: Arc<Mutex<Option<UnixStream>>>,
    stop: Arc<AtomicBool>,
}

impl Link {
    /// Starts the link thread: connect, subscribe, forward every reply, reconnect on loss.
    pub fn spawn(socket: PathBuf, tx: Sender<Msg>) -> Link {
        let writer = Arc::new(Mutex::new(None));
        let stop = Arc::new(AtomicBool::new(false));
        let (w, s) = (writer.clone(), stop.clone());
        std::thread::Builder::new()
            .name("panel-link".into())
            .spawn(move || link_loop(&socket, &tx, &w, &s))
            .map(drop)
            .unwrap_or_else(|e| tracing::error!(error = %e, "panel: cannot start the link thread"));
        Link { writer, stop }
    }

    /// Sends a request on the current connection.
    pub fn send(&self, req: &Request) -> std::io::Result<()> {
        let mut guard = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        match guard.as_mut() {
            Some(w) => send_to(w, req),
            None => Err(std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                "not connected to the sidecar",
            )),
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(w) = self
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = w.shutdown(std::net::Shutdown::Both);
        }
    }
}

fn link_loop(
    socket: &std::path::Path,
    tx: &Sender<Msg>,
    writer: &Mutex<Option<UnixStream>>,
    stop: &AtomicBool,
) {
    let mut backoff = FIRST_BACKOFF;
    let mut told_down = false;
    while !stop.load(Ordering::SeqCst) {
        if let Ok(mut conn) = Connection::connect(socket) {
            if conn.send(&Request::Subscribe).is_ok() {
                if let Ok(w) = conn.writer() {
                    *writer.lock().unwrap_or_else(PoisonError::into_inner) = Some(w);
                }
                if tx.send(Msg::Connected).is_err() {
                    return;
                }
                backoff = FIRST_BACKOFF;
                told_down = false;
                while let Ok(Some(reply)) = conn.next_reply() {
                    if tx.send(Msg::Reply(reply)).is_err() {
                        return;
                    }
                }
                writer.lock().unwrap_or_else(PoisonError::into_inner).take();
            }
        }
        if stop.load(Ordering::SeqCst) {
            return;
        }
        if !told_down {
            told_down = true;
            if tx.send(Msg::Disconnected).is_err() {
                return;
            }
        }
        std::thread::sleep(backoff);
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// The panel's state plus where its options are saved: everything but the terminal.
#[derive(Debug)]
pub struct App {
    /// The model drawn.
    pub model: PanelModel,
    options_path: PathBuf,
}

impl App {
    /// Loads the view options from `options_path` (a broken file: defaults, and it says so).
    pub fn new(options_path: PathBuf, origin: Option<PaneId>) -> App {
        let (options, problem) = match ViewOptions::load(&options_path) {
            Ok(o) => (o, None),
            Err(e) => (
                ViewOptions::default(),
                Some(format!("{e:#}; using defaults")),
            ),
        };
        let mut model = PanelModel::new(options, origin);
        model.status = problem;
        App {
            model,
            options_path,
        }
    }

    /// Takes one message; returns what the runtime must do.
    pub fn handle(&mut self, msg: Msg, now_ms: u64) -> Outcome {
        match msg {
            Msg::Key(k) => {
                let out = handle_key(&mut self.model, k);
                if out.save_options {
                    if let Err(e) = self.model.options.save(&self.options_path) {
                        self.model.status = Some(format!("{e:#}"));
                    }
                }
                return out;
            }
            Msg::Reply(r) => self.model.apply(r, now_ms),
            Msg::Connected => {}
            Msg::Disconnected => self.model.link = LinkState::Reconnecting,
            Msg::Resize => {}
        }
        Outcome::default()
    }

    /// How long the loop may sleep before the screen must change by itself.
    pub fn timer(&self) -> Option<Duration> {
        if self.model.animating() {
            Some(Duration::from_millis(FRAME_MS))
        } else if self.model.screen == Screen::Detail {
            Some(Duration::from_secs(1))
        } else {
            None
        }
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The pane the panel was opened from, from `$TMUX_PANE`.
pub fn origin_from_env() -> Option<PaneId> {
    std::env::var("TMUX_PANE")
        .ok()
        .and_then(|v| PaneId::parse(v.trim()))
}

/// Runs the panel on the terminal until the person quits or goes to a pane.
pub fn run(
    socket: PathBuf,
    origin_pane: Option<PaneId>,
    options_path: PathBuf,
) -> anyhow::Result<()> {
    let mut app = App::new(options_path, origin_pane);
    let (tx, rx) = mpsc::channel();
    let link = Link::spawn(socket, tx.clone());
    let mut terminal = ratatui::try_init().context("cannot set up the terminal")?;
    std::thread::Builder::new()
        .name("panel-keys".into())
        .spawn(move || key_loop(&tx))
        .context("cannot start the key thread")?;
    let result = event_loop(&mut terminal, &mut app, &link, &rx);
    ratatui::try_restore().context("cannot restore the terminal")?;
    result
}

fn key_loop(tx: &Sender<Msg>) {
    loop {
        let msg = match event::read() {
            Ok(Event::Key(k)) => Msg::Key(k),
            Ok(Event::Resize(..)) => Msg::Resize,
            Ok(_) => continue,
            Err(_) => return,
        };
        if tx.send(msg).is_err() {
            return;
        }
    }
}

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    link: &Link,
    rx: &Receiver<Msg>,
) -> anyhow::Result<()> {
    loop {
        terminal
            .draw(|f| super::render::draw(f, &app.model, now_ms()))
            .context("drawing")?;
        let first = match app.timer() {
            Some(t) => match rx.recv_timeout(t) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            },
            None => match rx.recv() {
                Ok(m) => Some(m),
                Err(_) => return Ok(()),
            },
        };
        // Take everything already queued before drawing again, so a burst costs one frame.
        for msg in first
            .into_iter()
            .chain(std::iter::from_fn(|| rx.try_recv().ok()))
        {
            let out = app.handle(msg, now_ms());
            if carry_out(app, link, rx, out) {
                return Ok(());
            }
        }
    }
}

/// Sends an outcome's requests; true when the panel should close now.
pub fn carry_out(app: &mut App, link: &Link, rx: &Receiver<Msg>, out: Outcome) -> bool {
    for req in &out.requests {
        if let Err(e) = link.send(req) {
            app.model.reload_pending = false;
            app.model.status = Some(format!("Cannot reach the sidecar: {e}"));
            // Going to a pane that was never asked for must not close the popup silently.
            return out.quit && out.requests.is_empty();
        }
    }
    if out.quit && !out.requests.is_empty() {
        wait_for_answers(rx, out.requests.len());
    }
    out.quit
}

/// Waits (briefly) until the daemon answered `n` requests, so they are done when the popup closes.
fn wait_for_answers(rx: &Receiver<Msg>, mut n: usize) {
    let deadline = Instant::now() + FOCUS_WAIT;
    while n > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Msg::Reply(Reply::Done { .. } | Reply::Error { .. })) => n -= 1,
            Ok(_) => {}
            Err(_) => return,
        }
    }
}
