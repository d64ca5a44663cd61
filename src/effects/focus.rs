//! Bringing a pane to the front (S5.9, S6.7): pick the client, then the tmux commands.
//!
//! [`plan`] is pure: the client is the one already showing the pane's window, else the most
//! recently active one; it is switched to the pane's session when it shows another.
//! Control-mode clients are never picked. Commands come back as argv vectors without the
//! leading `tmux`, to send on a control connection or to run as `tmux ARGV…`.
//!
//! [`FocusPlan::start`] performs a plan on a control connection: it sends the commands at once
//! and gives back the wait for tmux's answers, so a caller reports success only once tmux has
//! run every command, and tmux's own message when one failed.

use std::future::Future;
use std::time::Duration;

use thiserror::Error;

use super::background::ClientView;
use crate::ids::{PaneId, SessionId, WindowId};
use crate::tmux::command::line;
use crate::tmux::connection::{CommandError, Connection};

/// How long tmux may take to answer a focus's commands (they are answered in one read, well
/// under a second, unless tmux is stuck).
pub const FOCUS_TIMEOUT: Duration = Duration::from_secs(2);

/// The pane to bring to the front, with where it lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FocusTarget {
    /// The pane.
    pub pane: PaneId,
    /// Its window.
    pub window: WindowId,
    /// Its session.
    pub session: SessionId,
}

/// The chosen client and what to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FocusPlan {
    /// The client's name (tty).
    pub client: String,
    /// tmux commands, in order, each as an argv without `tmux`.
    pub commands: Vec<Vec<String>>,
}

/// Why nothing was focused.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum FocusError {
    /// No attached client that is a person's terminal.
    #[error("no attached tmux client to show the pane in")]
    NoClient,
    /// tmux refused a command (its `%error` text).
    #[error("tmux refused `{command}`: {message}")]
    Refused {
        /// The command line sent.
        command: String,
        /// What tmux answered.
        message: String,
    },
    /// tmux did not answer in time.
    #[error("tmux did not answer `{command}` within {} ms", after.as_millis())]
    Timeout {
        /// The first command still unanswered.
        command: String,
        /// How long it was waited for.
        after: Duration,
    },
    /// The control connection is gone (or refused the line).
    #[error("cannot send `{command}` to tmux: {why}")]
    NotSent {
        /// The command line.
        command: String,
        /// Why.
        why: String,
    },
}

impl FocusPlan {
    /// The commands as tmux command lines, arguments quoted for tmux's parser.
    pub fn lines(&self) -> Vec<String> {
        self.commands
            .iter()
            .map(|argv| line(&argv.iter().map(String::as_str).collect::<Vec<_>>()))
            .collect()
    }

    /// Sends every command now, in order, on `conn` (tmux runs them in that order), and returns
    /// the wait for tmux's answers: `Ok` once tmux ran them all; else the first that failed,
    /// with tmux's own message, or [`FocusError::Timeout`] after `timeout`. The future owns
    /// what it needs: it can be awaited or spawned, and dropping it drops only the wait.
    pub fn start(
        &self,
        conn: &Connection,
        timeout: Duration,
    ) -> impl Future<Output = Result<(), FocusError>> + Send + 'static {
        let replies: Vec<_> = self
            .lines()
            .into_iter()
            .map(|command| {
                let reply = conn.start(command.clone());
                (command, reply)
            })
            .collect();
        async move {
            let mut waiting = String::new();
            let all = async {
                for (command, reply) in replies {
                    waiting.clone_from(&command);
                    reply.await.map_err(|e| match e {
                        CommandError::Tmux(message) => FocusError::Refused { command, message },
                        other => FocusError::NotSent {
                            command,
                            why: other.to_string(),
                        },
                    })?;
                }
                Ok(())
            };
            match tokio::time::timeout(timeout, all).await {
                Ok(done) => done,
                Err(_) => Err(FocusError::Timeout {
                    command: waiting,
                    after: timeout,
                }),
            }
        }
    }
}

/// Plans focusing `target`. `prefer` names a client to use if it is attached (a request's
/// `client`); otherwise S6.7's choice applies. Ties go to the most recent activity.
pub fn plan(
    clients: &[ClientView],
    target: &FocusTarget,
    prefer: Option<&str>,
) -> Result<FocusPlan, FocusError> {
    let people = || clients.iter().filter(|c| c.is_person());
    let preferred = prefer.and_then(|name| people().find(|c| c.name == name));
    let showing = || {
        people()
            .filter(|c| c.window == target.window)
            .max_by_key(|c| c.activity)
    };
    let recent = || people().max_by_key(|c| c.activity);
    let client = preferred
        .or_else(showing)
        .or_else(recent)
        .ok_or(FocusError::NoClient)?;

    let argv = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
    let mut commands = Vec::new();
    let session = target.session.to_string();
    if client.window != target.window && client.session != target.session {
        commands.push(argv(&["switch-client", "-c", &client.name, "-t", &session]));
    }
    if client.window != target.window {
        let window = format!("{}:{}", target.session, target.window);
        commands.push(argv(&["select-window", "-t", &window]));
    }
    commands.push(argv(&["select-pane", "-t", &target.pane.to_string()]));
    Ok(FocusPlan {
        client: client.name.clone(),
        commands,
    })
}

#[cfg(test)]
mod tests {
    use super::super::background::ClientFlags;
    use super::*;

    fn client(name: &str, session: u32, window: u32, activity: u64, flags: &str) -> ClientView {
        ClientView {
            name: name.into(),
            session: SessionId(session),
            window: WindowId(window),
            activity,
            flags: ClientFlags::parse(flags),
        }
    }

    const TARGET: FocusTarget = FocusTarget {
        pane: PaneId(7),
        window: WindowId(3),
        session: SessionId(2),
    };

    fn words(cmds: &[Vec<String>]) -> Vec<String> {
        cmds.iter().map(|c| c.join(" ")).collect()
    }

    #[test]
    fn a_client_showing_the_window_only_selects_the_pane() {
        let clients = [
            client("/dev/pts/1", 1, 1, 900, "attached"),
            client("/dev/pts/2", 2, 3, 100, "attached"),
        ];
        let p = plan(&clients, &TARGET, None).expect("a client");
        assert_eq!(p.client, "/dev/pts/2");
        assert_eq!(words(&p.commands), ["select-pane -t %7"]);
    }

    #[test]
    fn otherwise_the_most_recent_client_switches_session_and_window() {
        let clients = [
            client("/dev/pts/1", 1, 1, 100, "attached"),
            client("/dev/pts/2", 1, 4, 900, "attached"),
            client("ctl", 2, 3, 999, "attached,control-mode"),
            client("/dev/pts/9", 2, 3, 999, ""),
        ];
        let p = plan(&clients, &TARGET, None).expect("a client");
        assert_eq!(p.client, "/dev/pts/2");
        assert_eq!(
            words(&p.commands),
            [
                "switch-client -c /dev/pts/2 -t $2",
                "select-window -t $2:@3",
                "select-pane -t %7"
            ]
        );
    }

    #[test]
    fn same_session_other_window_needs_no_switch_and_prefer_wins() {
        let clients = [
            client("/dev/pts/1", 2, 5, 100, "attached"),
            client("/dev/pts/2", 2, 3, 900, "attached"),
        ];
        let p = plan(&clients, &TARGET, Some("/dev/pts/1")).expect("a client");
        assert_eq!(p.client, "/dev/pts/1");
        assert_eq!(
            words(&p.commands),
            ["select-window -t $2:@3", "select-pane -t %7"]
        );
        // An unknown preferred client falls back to the normal choice.
        let p = plan(&clients, &TARGET, Some("/dev/pts/404")).expect("a client");
        assert_eq!(p.client, "/dev/pts/2");
    }

    #[test]
    fn lines_are_quoted_for_tmux() {
        let clients = [client("/dev/pts/2", 1, 4, 900, "attached")];
        let p = plan(&clients, &TARGET, None).expect("a client");
        assert_eq!(
            p.lines(),
            [
                "switch-client -c /dev/pts/2 -t '$2'",
                "select-window -t '$2:@3'",
                "select-pane -t %7"
            ]
        );
    }

    #[test]
    fn no_person_no_plan() {
        let clients = [client("ctl", 2, 3, 1, "attached,control-mode")];
        assert_eq!(plan(&clients, &TARGET, None), Err(FocusError::NoClient));
    }
}
