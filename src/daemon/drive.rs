//! Driving panes from other panes (issue 16): `read` a pane's screen, `send` it text, `start`
//! a command in a new window. The commands go out on the daemon's own control connection at
//! once; a task awaits tmux's replies within [`DRIVE_TIMEOUT`] and answers the request, so the
//! core loop never waits for tmux. (`wait` needs no request of its own: the client follows the
//! `Subscribe` stream.)
//!
//! Everything a caller gives is an argument of a quoted tmux command
//! ([`crate::tmux::command::quote`]): text goes through `send-keys -l`, which types it
//! literally, so `C-c`, `Enter` or `;` arrive as those characters.

use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;

use super::core::Daemon;
use crate::clock::Now;
use crate::ids::PaneId;
use crate::ipc::schema::Reply;
use crate::tmux::command::{line, quote};
use crate::tmux::connection::Connection;

/// How long a driving request waits for tmux's replies.
pub const DRIVE_TIMEOUT: Duration = Duration::from_secs(5);

/// The most history lines `read` asks tmux for.
pub const MAX_READ_LINES: u32 = 10_000;

/// The longest text `send` types (bytes).
pub const MAX_SEND_BYTES: usize = 64 * 1024;

/// The `send-keys` commands that type `text` into `pane`: each line literally, Enter between
/// lines, and after the last when `enter`. Control characters other than the newline are sent
/// as spaces (a command line cannot carry them); a carriage return before a newline is dropped.
pub fn send_commands(pane: PaneId, text: &str, enter: bool) -> Vec<String> {
    let target = pane.to_string();
    let mut out = Vec::new();
    let lines: Vec<&str> = text.split('\n').collect();
    for (i, l) in lines.iter().enumerate() {
        let l = l.strip_suffix('\r').unwrap_or(l);
        if !l.is_empty() {
            // `--`: a text that starts with `-` is not an option.
            out.push(format!("send-keys -t {target} -l -- {}", quote(l)));
        }
        if i + 1 < lines.len() || enter {
            out.push(format!("send-keys -t {target} Enter"));
        }
    }
    out
}

/// The `new-window` command of a `start` request: in session `target` (`$N:`), not selected,
/// printing the new pane, window and session ids.
pub fn start_command(
    target: &str,
    dir: Option<&str>,
    name: Option<&str>,
    command: &[String],
) -> String {
    let mut argv: Vec<&str> = vec![
        "new-window",
        "-d",
        "-P",
        "-F",
        "#{pane_id} #{window_id} #{session_id}",
        "-t",
        target,
    ];
    if let Some(d) = dir {
        argv.extend(["-c", d]);
    }
    if let Some(n) = name {
        argv.extend(["-n", n]);
    }
    if !command.is_empty() {
        argv.push("--");
        argv.extend(command.iter().map(String::as_str));
    }
    line(&argv)
}

impl Daemon {
    /// The control connection and a check that `pane` is in this server.
    fn drive_target(&self, pane: PaneId) -> Result<Connection, String> {
        let obs = self.link.observer.as_ref().ok_or("no tmux server")?;
        if !obs.inventory().panes.contains_key(&pane) {
            return Err(format!("no pane {pane} in this tmux server"));
        }
        obs.connection()
            .ok_or_else(|| "no control connection".into())
    }

    /// `read`: the pane's screen (and `lines` of history), with what the daemon knows of it.
    pub(super) fn read_pane(&mut self, pane: PaneId, lines: u32, reply: mpsc::Sender<Reply>) {
        let conn = match self.drive_target(pane) {
            Ok(c) => c,
            Err(message) => {
                let _ = reply.try_send(Reply::Error { message });
                return;
            }
        };
        let lines = lines.min(MAX_READ_LINES);
        let start = if lines > 0 {
            format!(" -S -{lines}")
        } else {
            String::new()
        };
        let body = conn.start_body(format!("capture-pane -p -t {pane}{start}"));
        let entry = self.panes.get(&pane);
        let status = entry.map(|p| p.tracker.status());
        let info = self.inventory().and_then(|i| i.panes.get(&pane));
        let mut value = json!({
            "pane": pane.to_string(),
            "agent": status.and_then(|s| s.agent.clone()),
            "state": status.and_then(|s| s.state).map(|s| s.as_str()),
            "title": entry
                .and_then(|p| p.signals.title().map(str::to_string))
                .or_else(|| info.map(|i| i.title.clone())),
            "session_name": info.map(|i| i.session_name.clone()),
            "window_index": info.map(|i| i.window_index),
            "window_name": info.map(|i| i.window_name.clone()),
            "width": info.map(|i| i.width),
            "height": info.map(|i| i.height),
        });
        tokio::spawn(async move {
            let answer = match tokio::time::timeout(DRIVE_TIMEOUT, body).await {
                Ok(Ok(body)) => {
                    value["screen"] = body.lines().collect::<Vec<_>>().join("\n").into();
                    Reply::Value { value }
                }
                Ok(Err(e)) => Reply::Error {
                    message: format!("cannot read {pane}: {e}"),
                },
                Err(_) => Reply::Error {
                    message: format!("tmux did not answer within {DRIVE_TIMEOUT:?}"),
                },
            };
            let _ = reply.try_send(answer);
        });
    }

    /// `send`: types the text into the pane; its results count as seen.
    pub(super) fn send_to_pane(
        &mut self,
        now: Now,
        pane: PaneId,
        text: &str,
        enter: bool,
        reply: mpsc::Sender<Reply>,
    ) {
        let refuse = |message: String| {
            let _ = reply.try_send(Reply::Error { message });
        };
        if text.len() > MAX_SEND_BYTES {
            return refuse(format!(
                "the text is {} bytes; at most {MAX_SEND_BYTES} are sent",
                text.len()
            ));
        }
        let conn = match self.drive_target(pane) {
            Ok(c) => c,
            Err(message) => return refuse(message),
        };
        let commands = send_commands(pane, text, enter);
        let replies: Vec<_> = commands.into_iter().map(|c| conn.start(c)).collect();
        self.seen(now, pane);
        let chars = text.chars().count();
        tokio::spawn(async move {
            let all = async {
                for r in replies {
                    r.await?;
                }
                Ok::<(), crate::tmux::connection::CommandError>(())
            };
            let answer = match tokio::time::timeout(DRIVE_TIMEOUT, all).await {
                Ok(Ok(())) => Reply::Done {
                    message: format!(
                        "Sent {chars} character(s) to {pane}{}.",
                        if enter { " and Enter" } else { "" }
                    ),
                },
                Ok(Err(e)) => Reply::Error {
                    message: format!("cannot send to {pane}: {e}"),
                },
                Err(_) => Reply::Error {
                    message: format!("tmux did not answer within {DRIVE_TIMEOUT:?}"),
                },
            };
            let _ = reply.try_send(answer);
        });
    }

    /// `start`: a new window running `command` in `session` (a name or `$N`), else in the
    /// session of `near`.
    pub(super) fn start_window(&mut self, ask: StartAsk, reply: mpsc::Sender<Reply>) {
        let refuse = |message: String| {
            let _ = reply.try_send(Reply::Error { message });
        };
        let Some(obs) = self.link.observer.as_ref() else {
            return refuse("no tmux server".into());
        };
        let inv = obs.inventory();
        let session = match (&ask.session, ask.near) {
            (Some(s), _) => inv
                .panes
                .values()
                .find(|p| p.session_name == *s || p.session.to_string() == *s)
                .map(|p| p.session)
                .ok_or_else(|| format!("no session {s:?} in this tmux server")),
            (None, Some(near)) => inv
                .panes
                .get(&near)
                .map(|p| p.session)
                .ok_or_else(|| format!("no pane {near} in this tmux server")),
            (None, None) => {
                Err("name the session (--session NAME), or run this inside tmux".into())
            }
        };
        let session = match session {
            Ok(s) => s,
            Err(message) => return refuse(message),
        };
        let Some(conn) = obs.connection() else {
            return refuse("no control connection".into());
        };
        let command = start_command(
            &format!("{session}:"),
            ask.dir.as_deref(),
            ask.name.as_deref(),
            &ask.command,
        );
        let created = conn.start(command);
        self.link.relist_all_soon(std::time::Instant::now());
        tokio::spawn(async move {
            let answer = match tokio::time::timeout(DRIVE_TIMEOUT, created).await {
                Ok(Ok(lines)) => {
                    let ids: Vec<&str> = lines
                        .first()
                        .map(|l| l.split(' ').collect())
                        .unwrap_or_default();
                    match ids.as_slice() {
                        [pane, window, session] => Reply::Value {
                            value: json!({ "pane": pane, "window": window, "session": session }),
                        },
                        _ => Reply::Error {
                            message: format!("unexpected answer from tmux: {lines:?}"),
                        },
                    }
                }
                Ok(Err(e)) => Reply::Error {
                    message: format!("cannot start the window: {e}"),
                },
                Err(_) => Reply::Error {
                    message: format!("tmux did not answer within {DRIVE_TIMEOUT:?}"),
                },
            };
            let _ = reply.try_send(answer);
        });
    }
}

/// What a `start` request asks for.
pub struct StartAsk {
    /// Session name or `$N`.
    pub session: Option<String>,
    /// Else the session of this pane.
    pub near: Option<PaneId>,
    /// Working directory.
    pub dir: Option<String>,
    /// Window name.
    pub name: Option<String>,
    /// Command and arguments.
    pub command: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_typed_literally_line_by_line_with_enter_between() {
        let p = PaneId(3);
        assert_eq!(
            send_commands(p, "echo $(id); C-c", true),
            [
                "send-keys -t %3 -l -- 'echo $(id); C-c'",
                "send-keys -t %3 Enter"
            ]
        );
        assert_eq!(
            send_commands(p, "a\r\nb", false),
            [
                "send-keys -t %3 -l -- a",
                "send-keys -t %3 Enter",
                "send-keys -t %3 -l -- b"
            ]
        );
        // A single quote and a leading dash stay text.
        assert_eq!(
            send_commands(p, "-it's", false),
            ["send-keys -t %3 -l -- \"-it's\""]
        );
        assert_eq!(send_commands(p, "", true), ["send-keys -t %3 Enter"]);
        assert!(send_commands(p, "", false).is_empty());
    }

    #[test]
    fn a_start_runs_the_argv_in_a_new_unselected_window() {
        let c = start_command(
            "$2:",
            Some("/tmp/my dir"),
            Some("rev"),
            &["claude".into(), "--model".into(), "x;y".into()],
        );
        assert_eq!(
            c,
            "new-window -d -P -F '#{pane_id} #{window_id} #{session_id}' -t '$2:' -c '/tmp/my dir' -n rev -- claude --model 'x;y'"
        );
    }
}
