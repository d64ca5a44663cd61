//! Driving panes from a shell or an agent (issue 16): `read`, `send`, `wait` and `start`.
//! They go through the daemon, which holds the tmux connection; `wait` follows its `Subscribe`
//! stream. A pane is named `%N`, `MACHINE:%N`, or `SESSION:WINDOW[.PANE]` (window by index or
//! name; without `.PANE` the window's active pane), resolved against the daemon's snapshot.
//!
//! The decision of `wait` is pure ([`Waiter`]): it sees the snapshot at the start and then each
//! event and fresh snapshot, and says when the goal is reached or the pane is gone.

use std::io::Read as _;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::{Duration, Instant};

use crate::ids::{PaneId, PaneTarget};
use crate::ipc::schema::{MachineRow, PaneRow, Reply, Request, StateEvent};
use crate::ipc::Client;
use crate::state::AgentState;

use super::{connect, Cli};

/// Exit code of `wait` (and `send --when-idle`) when the time ran out.
pub const EXIT_TIMEOUT: i32 = 3;
/// Exit code of `wait` when the pane closed (or its machine forgot it).
pub const EXIT_CLOSED: i32 = 4;

/// A pane as a person or script names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PaneName {
    /// `%N` or `MACHINE:%N`.
    Id(PaneTarget),
    /// `SESSION:WINDOW[.PANE]` on this computer.
    Path {
        /// Session name.
        session: String,
        /// Window index or name.
        window: String,
        /// Pane index (None: the window's active pane).
        pane: Option<u32>,
    },
}

impl FromStr for PaneName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Ok(t) = s.parse::<PaneTarget>() {
            return Ok(PaneName::Id(t));
        }
        let bad = || format!("not a pane: {s:?} (give %N, MACHINE:%N or SESSION:WINDOW.PANE)");
        let (session, rest) = s.split_once(':').ok_or_else(bad)?;
        if session.is_empty() || rest.is_empty() || rest.contains('%') {
            return Err(bad());
        }
        let (window, pane) = match rest.rsplit_once('.') {
            Some((w, p))
                if !w.is_empty() && !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) =>
            {
                (w, Some(p.parse().map_err(|_| bad())?))
            }
            _ => (rest, None),
        };
        Ok(PaneName::Path {
            session: session.to_string(),
            window: window.to_string(),
            pane,
        })
    }
}

impl PaneName {
    /// The pane this name gives in `rows` (`local`: this computer's machine name).
    pub fn resolve(&self, rows: &[PaneRow], local: Option<&str>) -> Result<PaneTarget, String> {
        match self {
            PaneName::Id(t) => Ok(t.clone()),
            PaneName::Path {
                session,
                window,
                pane,
            } => {
                let here = |r: &&PaneRow| r.machine.is_none() || r.machine.as_deref() == local;
                rows.iter()
                    .filter(here)
                    .find(|r| {
                        r.session_name == *session
                            && (r.window_index.to_string() == *window || r.window_name == *window)
                            && match pane {
                                Some(p) => r.pane_index == *p,
                                None => r.active,
                            }
                    })
                    .map(|r| PaneTarget {
                        machine: None,
                        pane: r.pane,
                    })
                    .ok_or_else(|| {
                        format!(
                            "no pane {session}:{window}{} in this tmux server",
                            pane.map(|p| format!(".{p}")).unwrap_or_default()
                        )
                    })
            }
        }
    }
}

/// What `wait` waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Goal {
    /// The pane is idle (at once if it is now).
    Idle,
    /// The pane waits for a decision.
    Blocked,
    /// The pane works.
    Working,
    /// The pane finished a turn: it went from working or blocked to idle or error during the
    /// wait, or shows a result nobody has seen yet.
    Done,
    /// Any change of the pane's state after the wait began.
    AnyChange,
}

/// How a wait ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The goal was reached; the pane as it is then.
    Reached(Box<PaneRow>),
    /// The pane is gone.
    Closed,
}

/// The pure decision of `wait`.
#[derive(Debug)]
pub struct Waiter {
    goal: Goal,
    target: PaneTarget,
    local: Option<String>,
    /// The state when the wait began (after the first snapshot).
    first: Option<Option<AgentState>>,
    /// The pane was seen working or blocked since the wait began.
    busy: bool,
    last: Option<PaneRow>,
}

impl Waiter {
    /// Waits for `goal` on `target`; `local` is this computer's machine name.
    pub fn new(goal: Goal, target: PaneTarget, local: Option<String>) -> Waiter {
        Waiter {
            goal,
            target,
            local,
            first: None,
            busy: false,
            last: None,
        }
    }

    fn mine(&self, pane: PaneId, machine: Option<&str>) -> bool {
        names_row(&self.target, self.local.as_deref(), pane, machine)
    }

    /// A snapshot (the first one, or a fresh one on the stream).
    pub fn on_snapshot(&mut self, rows: &[PaneRow]) -> Option<Outcome> {
        let Some(row) = rows
            .iter()
            .find(|r| self.mine(r.pane, r.machine.as_deref()))
        else {
            return Some(Outcome::Closed);
        };
        let first = self.first.is_none();
        if first {
            self.first = Some(row.state);
        }
        self.last = Some(row.clone());
        self.judge(row.state, first, row.unseen_result)
    }

    /// An event on the stream.
    pub fn on_event(&mut self, e: &StateEvent) -> Option<Outcome> {
        if !self.mine(e.pane, e.machine.as_deref()) || self.first.is_none() {
            return None;
        }
        if matches!(e.old, Some(AgentState::Working | AgentState::Blocked)) {
            self.busy = true;
        }
        if let Some(last) = &mut self.last {
            last.state = e.new;
            last.agent.clone_from(&e.agent);
            last.message.clone_from(&e.message);
            last.window_mark = e.window_mark;
        }
        self.judge(e.new, false, false)
    }

    fn judge(&mut self, state: Option<AgentState>, first: bool, unseen: bool) -> Option<Outcome> {
        let now_busy = matches!(state, Some(AgentState::Working | AgentState::Blocked));
        let reached = match self.goal {
            Goal::Idle => state == Some(AgentState::Idle),
            Goal::Blocked => state == Some(AgentState::Blocked),
            Goal::Working => state == Some(AgentState::Working),
            Goal::Done => {
                let finished = matches!(state, Some(AgentState::Idle | AgentState::Error));
                finished && (self.busy || unseen)
            }
            Goal::AnyChange => !first && self.first != Some(state),
        };
        if now_busy {
            self.busy = true;
        }
        if reached {
            return self.last.clone().map(|r| Outcome::Reached(Box::new(r)));
        }
        if self.goal == Goal::AnyChange && !first {
            // A change is measured against the last state seen, not only the first.
            self.first = Some(state);
        }
        None
    }
}

/// The line `wait` and `read` print about a pane: `%3 claude idle` (`devbox:%3 …`).
pub fn state_line(row: &PaneRow, local: Option<&str>) -> String {
    let name = match row.machine.as_deref() {
        Some(m) if Some(m) != local => format!("{m}:{}", row.pane),
        _ => row.pane.to_string(),
    };
    format!(
        "{name} {} {}",
        row.agent.as_deref().unwrap_or("-"),
        row.state.map(|s| s.as_str()).unwrap_or("unknown")
    )
}

/// Every pane now, and this computer's machine name.
async fn snapshot(c: &mut Client) -> anyhow::Result<(Vec<PaneRow>, Option<String>)> {
    match c.request(&Request::Agents).await? {
        Reply::Snapshot {
            panes, machines, ..
        } => {
            let local = machines.into_iter().find(|m| m.local).map(|m| m.name);
            Ok((panes, local))
        }
        other => anyhow::bail!("unexpected reply from the daemon: {other:?}"),
    }
}

/// Resolves `name` (asking for a snapshot only when it is a path).
async fn target(c: &mut Client, name: &PaneName) -> anyhow::Result<PaneTarget> {
    if let PaneName::Id(t) = name {
        return Ok(t.clone());
    }
    let (rows, local) = snapshot(c).await?;
    name.resolve(&rows, local.as_deref())
        .map_err(anyhow::Error::msg)
}

/// `read`.
pub async fn read(cli: &Cli, name: &PaneName, lines: u32, json: bool) -> anyhow::Result<()> {
    let mut c = connect(cli).await?;
    let t = target(&mut c, name).await?;
    let ask = Request::Read {
        pane: t.pane,
        machine: t.machine.clone(),
        lines,
    };
    let value = match c.request(&ask).await? {
        Reply::Value { value } => value,
        Reply::Error { message } => anyhow::bail!(message),
        other => anyhow::bail!("unexpected reply: {other:?}"),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    let screen = value["screen"].as_str().unwrap_or_default();
    println!(
        "# {t} {} {}{}",
        value["agent"].as_str().unwrap_or("-"),
        value["state"].as_str().unwrap_or("unknown"),
        value["title"]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(|s| format!(" · {s}"))
            .unwrap_or_default()
    );
    // The screen's empty bottom rows are not text.
    println!("{}", screen.trim_end_matches(['\n', ' ']));
    Ok(())
}

/// The text of `send`: the words joined by spaces, or standard input for `-`.
pub fn send_text(words: &[String]) -> anyhow::Result<String> {
    if words.len() == 1 && words[0] == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s)?;
        // A file's last newline is not an extra Enter.
        if s.ends_with('\n') {
            s.pop();
        }
        return Ok(s);
    }
    Ok(words.join(" "))
}

/// `send`: returns the exit code.
pub async fn send(
    cli: &Cli,
    name: &PaneName,
    text: &str,
    enter: bool,
    when_idle: Option<Duration>,
) -> anyhow::Result<i32> {
    let mut c = connect(cli).await?;
    let t = target(&mut c, name).await?;
    if let Some(limit) = when_idle {
        match wait_on(cli, &t, Goal::Idle, Some(limit)).await? {
            Waited::Reached(_) => {}
            Waited::TimedOut(row) => {
                eprintln!(
                    "{t} did not become idle within {limit:?}{}: nothing sent",
                    row.map(|r| format!(" (it is {})", state_word(&r)))
                        .unwrap_or_default()
                );
                return Ok(EXIT_TIMEOUT);
            }
            Waited::Closed => {
                eprintln!("{t} closed: nothing sent");
                return Ok(EXIT_CLOSED);
            }
        }
    }
    let ask = Request::Send {
        pane: t.pane,
        machine: t.machine.clone(),
        text: text.to_string(),
        enter,
    };
    match c.request(&ask).await? {
        Reply::Done { .. } => Ok(0),
        Reply::Error { message } => anyhow::bail!(message),
        other => anyhow::bail!("unexpected reply: {other:?}"),
    }
}

fn state_word(r: &PaneRow) -> &'static str {
    r.state.map(|s| s.as_str()).unwrap_or("unknown")
}

/// Whether a row (`pane` on `machine`, `None` for a row without one) is the pane `target`
/// names; `local` is this computer's machine name, which a target without a machine means.
fn names_row(
    target: &PaneTarget,
    local: Option<&str>,
    pane: PaneId,
    machine: Option<&str>,
) -> bool {
    if pane != target.pane {
        return false;
    }
    match (&target.machine, machine) {
        (Some(m), Some(r)) => m == r,
        (Some(_), None) => false,
        (None, None) => true,
        (None, Some(r)) => local == Some(r),
    }
}

/// How long `wait` gives a pane it does not find to appear (a pane made a moment ago).
const NEW_PANE_GRACE: Duration = Duration::from_secs(2);

/// How [`wait_on`] ended.
enum Waited {
    Reached(Box<PaneRow>),
    TimedOut(Option<Box<PaneRow>>),
    Closed,
}

/// Follows the daemon's stream until `goal` holds for `t`, the pane closes, or `limit` passes.
async fn wait_on(
    cli: &Cli,
    t: &PaneTarget,
    goal: Goal,
    limit: Option<Duration>,
) -> anyhow::Result<Waited> {
    let mut c = connect(cli).await?;
    let deadline = limit.map(|l| Instant::now() + l);
    c.send(&Request::Subscribe).await?;
    let mut waiter: Option<Waiter> = None;
    let mut said_down = false;
    loop {
        let next = match deadline {
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                match tokio::time::timeout(left, c.next()).await {
                    Ok(r) => r?,
                    Err(_) => {
                        return Ok(Waited::TimedOut(waiter.and_then(|w| w.last).map(Box::new)))
                    }
                }
            }
            None => c.next().await?,
        };
        let Some(reply) = next else {
            anyhow::bail!("the daemon closed the connection");
        };
        let outcome = match &reply {
            Reply::Snapshot {
                panes, machines, ..
            } => {
                let w = waiter.get_or_insert_with(|| {
                    let local = machines.iter().find(|m| m.local).map(|m| m.name.clone());
                    Waiter::new(goal, t.clone(), local)
                });
                // A machine that does not answer lists no panes: its pane is not closed, it is
                // out of sight until the link is back.
                if machine_down(t, machines) {
                    if !std::mem::replace(&mut said_down, true) {
                        eprintln!(
                            "{} is unreachable; waiting for it to come back",
                            t.machine.as_deref().unwrap_or_default()
                        );
                    }
                    continue;
                }
                if w.first.is_none() && !panes.iter().any(|r| w.mine(r.pane, r.machine.as_deref()))
                {
                    anyhow::bail!("no pane {t}");
                }
                w.on_snapshot(panes)
            }
            Reply::Event(e) => waiter.as_mut().and_then(|w| w.on_event(e)),
            Reply::Error { message } => anyhow::bail!(message.clone()),
            _ => None,
        };
        match outcome {
            Some(Outcome::Reached(row)) => return Ok(Waited::Reached(row)),
            Some(Outcome::Closed) => return Ok(Waited::Closed),
            None => {}
        }
    }
}

/// Whether `t` is on a connected machine that does not answer now.
pub fn machine_down(t: &PaneTarget, machines: &[MachineRow]) -> bool {
    t.machine.as_deref().is_some_and(|name| {
        machines
            .iter()
            .any(|m| m.name == name && !m.local && !m.reachable)
    })
}

/// `wait`: returns the exit code.
pub async fn wait(
    cli: &Cli,
    name: &PaneName,
    goal: Goal,
    limit: Option<Duration>,
    json: bool,
) -> anyhow::Result<i32> {
    let t = {
        let mut c = connect(cli).await?;
        target(&mut c, name).await?
    };
    // A pane made a moment ago (`start`, `tmux new-window`) may not be in the daemon's list yet
    // (it lists again some tens of milliseconds after tmux tells it): give it a moment before
    // the stream's first snapshot would say "no pane".
    let local = {
        let mut c = connect(cli).await?;
        let until = Instant::now() + NEW_PANE_GRACE;
        loop {
            let (rows, local) = snapshot(&mut c).await?;
            let listed = rows
                .iter()
                .any(|r| names_row(&t, local.as_deref(), r.pane, r.machine.as_deref()));
            if listed || Instant::now() >= until {
                break local;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let print = |row: &PaneRow| -> anyhow::Result<()> {
        if json {
            println!("{}", serde_json::to_string(row)?);
        } else {
            println!("{}", state_line(row, local.as_deref()));
        }
        Ok(())
    };
    match wait_on(cli, &t, goal, limit).await? {
        Waited::Reached(row) => {
            print(&row)?;
            Ok(0)
        }
        Waited::TimedOut(row) => {
            if let Some(r) = &row {
                print(r)?;
            }
            eprintln!(
                "timed out after {:?} waiting for {t} to be {}",
                limit.unwrap_or_default(),
                goal_word(goal)
            );
            Ok(EXIT_TIMEOUT)
        }
        Waited::Closed => {
            eprintln!("{t} closed while waiting for it to be {}", goal_word(goal));
            Ok(EXIT_CLOSED)
        }
    }
}

fn goal_word(g: Goal) -> &'static str {
    match g {
        Goal::Idle => "idle",
        Goal::Blocked => "blocked",
        Goal::Working => "working",
        Goal::Done => "done",
        Goal::AnyChange => "changed",
    }
}

/// `start`: prints the new pane's id.
pub async fn start(
    cli: &Cli,
    machine: Option<String>,
    session: Option<String>,
    dir: Option<PathBuf>,
    name: Option<String>,
    command: Vec<String>,
) -> anyhow::Result<()> {
    let near = std::env::var("TMUX_PANE")
        .ok()
        .and_then(|p| PaneId::parse(&p))
        .filter(|_| machine.is_none());
    // Here, the caller's directory by default; on another machine, that machine's default.
    let dir = match (dir, &machine) {
        (Some(d), _) => Some(d),
        (None, None) => std::env::current_dir().ok(),
        (None, Some(_)) => None,
    };
    let mut c = connect(cli).await?;
    let ask = Request::Start {
        machine: machine.clone(),
        session,
        near,
        dir: dir.map(|d| d.display().to_string()),
        name,
        command,
    };
    match c.request(&ask).await? {
        Reply::Value { value } => {
            let pane = value["pane"].as_str().unwrap_or_default();
            match machine {
                Some(m) => println!("{m}:{pane}"),
                None => println!("{pane}"),
            }
            Ok(())
        }
        Reply::Error { message } => anyhow::bail!(message),
        other => anyhow::bail!("unexpected reply: {other:?}"),
    }
}

#[cfg(test)]
#[path = "drive_tests.rs"]
mod tests;
