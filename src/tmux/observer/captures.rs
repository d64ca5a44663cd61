//! Capture rounds over the control connections: the screens (and, for panes whose output copy
//! the redraw gate paused, the title) of several panes asked at once, and the pause and resume
//! of a pane's output copy.

use super::Observer;
use crate::ids::PaneId;
use crate::tmux::command::quote;
use crate::tmux::connection::{CommandError, Connection};
use crate::tmux::protocol::Body;

/// The screens of a round of captures, in the order asked, as [`Observer::start_captures`]
/// gives them.
pub type Captures = std::pin::Pin<Box<dyn std::future::Future<Output = Vec<Captured>> + Send>>;

/// One pane's capture.
#[derive(Debug)]
pub struct Captured {
    /// The pane.
    pub pane: PaneId,
    /// Its visible screen, as `capture-pane -p -J` prints it, joined with `\n`.
    pub screen: Result<String, CommandError>,
    /// Its title as tmux holds it (`#{pane_title}`), when the round was asked to read it.
    pub title: Option<String>,
    /// Its cursor state (`CursorState::FORMAT` of the daemon's screen model), read just before
    /// the screen, when the round was asked to read it.
    pub cursor: Option<String>,
}

impl Observer {
    /// The visible screen of a pane, as `capture-pane -p -J` prints it, joined with `\n`.
    pub async fn capture(&mut self, pane: PaneId) -> Result<String, CommandError> {
        let mut one = self.capture_many(&[pane]).await;
        one.pop().map_or(Err(CommandError::Closed), |(_, r)| r)
    }

    /// Captures several panes at once: every command is written before the first reply is
    /// awaited, so the replies come back together (one wake-up, not one per pane). Results are
    /// in the order of `panes`.
    pub async fn capture_many(
        &mut self,
        panes: &[PaneId],
    ) -> Vec<(PaneId, Result<String, CommandError>)> {
        let screens = self.start_captures(panes, &[], &[], "");
        let done = self.drain_until(screens).await;
        done.into_iter().map(|c| (c.pane, c.screen)).collect()
    }

    /// [`Observer::capture_many`] without holding the observer: the commands go out now, and
    /// the returned future gives the screens. The caller can go on taking in notifications
    /// while tmux answers (a pane that floods the connection ahead of the replies is then still
    /// seen, and paused). The panes in `resume` have their output copy resumed first and their
    /// title read with the screen, on the connection of the pane's session: tmux handles one
    /// client's commands in order, so what the pane writes after the capture reaches us. The
    /// panes in `cursor` have `cursor_format` read right before their screen (the two commands
    /// go out together and tmux runs them back to back).
    pub fn start_captures(
        &self,
        panes: &[PaneId],
        resume: &[PaneId],
        cursor: &[PaneId],
        cursor_format: &str,
    ) -> Captures {
        let mut pending = Vec::with_capacity(panes.len());
        for p in panes {
            let conn = match self.connection_of(*p) {
                Ok(c) => c,
                Err(e) => {
                    pending.push((*p, None, None, Err(e)));
                    continue;
                }
            };
            let title = resume.contains(p).then(|| {
                self.set_output(*p, true);
                conn.start_body(format!("display-message -p -t {p} '#{{pane_title}}'"))
            });
            let at = cursor.contains(p).then(|| {
                conn.start_body(format!(
                    "display-message -p -t {p} {}",
                    quote(cursor_format)
                ))
            });
            pending.push((
                *p,
                title,
                at,
                Ok(conn.start_body(format!("capture-pane -p -J -t {p}"))),
            ));
        }
        Box::pin(async move {
            let mut out = Vec::with_capacity(pending.len());
            for (pane, title, at, screen) in pending {
                let title = match title {
                    Some(t) => t.await.ok().map(Body::into_text),
                    None => None,
                };
                let cursor = match at {
                    Some(c) => c.await.ok().map(Body::into_text),
                    None => None,
                };
                let screen = match screen {
                    Ok(reply) => reply.await.map(Body::into_text),
                    Err(e) => Err(e),
                };
                out.push(Captured {
                    pane,
                    screen,
                    title,
                    cursor,
                });
            }
            out
        })
    }

    /// The connection that sees `pane`: the one attached to the pane's session, else any.
    fn connection_of(&self, pane: PaneId) -> Result<&Connection, CommandError> {
        self.inventory
            .panes
            .get(&pane)
            .and_then(|p| self.conns.get(&p.session))
            .filter(|c| c.is_open())
            .map_or_else(|| self.any_connection(), Ok)
    }

    /// Pauses or resumes the copy of a pane's output sent to our control clients
    /// (`refresh-client -A '%P:pause'` / `continue`). tmux keeps reading the pane either way:
    /// unlike `off`, a pause never stalls the program, even with no other client attached.
    /// Sent to the client of the pane's session; when we have none (a session of a group, whose
    /// client is attached to another member), to every client: those that do not see the pane
    /// answer with an error, which is dropped.
    pub fn set_output(&self, pane: PaneId, on: bool) {
        // A piped pane is not copied to our clients at all.
        if self.piping.piped(pane) {
            return;
        }
        let action = if on { "continue" } else { "pause" };
        let line = format!("refresh-client -A {}", quote(&format!("{pane}:{action}")));
        match self
            .inventory
            .panes
            .get(&pane)
            .and_then(|p| self.conns.get(&p.session))
        {
            Some(conn) => conn.send(line),
            None => {
                for conn in self.conns.values() {
                    conn.send(line.clone());
                }
            }
        }
    }
}
