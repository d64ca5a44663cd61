//! [`PaneSignals`], the per-pane facade: scanner, parsers and the OSC 7501 record table in one
//! value the daemon feeds with a pane's `%output` bytes. Also the small sequences that need no
//! module of their own: OSC 133 prompt marks and OSC 9 / OSC 777 desktop notifications.
//!
//! The facade applies status reports to its [`Records`] and keeps the latest `THINKTERM_AGENT`
//! value, title and progress; it never ends records by itself. The caller decides when the shell's
//! next prompt started (foreground back to the shell, or an OSC 133 `A` from the shell: note that
//! some agents, e.g. Pi, draw their own prompt with 133 marks) and calls
//! [`Records::end_ongoing`], and calls [`Records::mark_seen`] when the pane is looked at.

use crate::osc::kitty_notify::{self, Assembler};
use crate::osc::progress::{self, Progress};
use crate::osc::records::Records;
use crate::osc::scanner::{Event, Scanner};
use crate::osc::status_report::{self, Message, ReportError, StatusReport};
use crate::osc::title;
use crate::osc::user_var::{self, AgentReport, Authority, UserVarOutcome};

/// An OSC 133 (FinalTerm) shell-integration mark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromptMark {
    /// `A`: the prompt starts.
    A,
    /// `B`: the command line starts (prompt ended).
    B,
    /// `C`: the command runs.
    C,
    /// `D[;exit]`: the command finished, with its exit code when given.
    D(Option<i32>),
}

/// When a program wants its notification shown (OSC 99 `o`; OSC 9 and 777 say nothing, which
/// is [`Occasion::Unfocused`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Occasion {
    /// Even while its pane is in front.
    Always,
    /// Only while its pane is not in front (the default).
    #[default]
    Unfocused,
    /// Only while its pane cannot be seen (for the sidecar: the same as `Unfocused`, a pane
    /// is seen when its window is in front).
    Invisible,
}

/// A desktop notification a program asked for (OSC 9 text, OSC 777 `notify`, OSC 99).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramNotification {
    /// Title (OSC 777 and 99).
    pub title: Option<String>,
    /// Body.
    pub body: String,
    /// When to show it.
    pub occasion: Occasion,
    /// OSC 99 `u`: 0 low, 1 normal, 2 critical.
    pub urgency: Option<u8>,
}

/// One thing a pane's output said, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Signal {
    /// A valid OSC 7501 report (already applied to the records).
    StatusReport(StatusReport),
    /// An OSC 7501 report dropped whole, and why.
    ReportRejected(ReportError),
    /// The OSC 7501 query (S7.3); `passthrough` when it was sent to the terminal outside tmux.
    ReportQuery {
        /// Whether it came in tmux passthrough.
        passthrough: bool,
    },
    /// A `SetUserVar` for `THINKTERM_AGENT` (already applied to the stored value).
    UserVar(UserVarOutcome),
    /// An OSC 9;4 progress report.
    Progress(Progress),
    /// A new title (OSC 0/2).
    Title(String),
    /// An OSC 133 mark.
    PromptMark(PromptMark),
    /// An OSC 9, 777 or 99 notification (a 99 once its last chunk arrived).
    Notification(ProgramNotification),
    /// A bare BEL.
    Bell,
}

/// Parses an OSC 133 payload.
pub fn prompt_mark(payload: &[u8]) -> Option<PromptMark> {
    let rest = payload.strip_prefix(b"133;")?;
    let (letter, params) = match rest.split_first()? {
        (l, []) => (*l, &[][..]),
        (l, [b';', p @ ..]) => (*l, p),
        _ => return None,
    };
    Some(match letter {
        b'A' => PromptMark::A,
        b'B' => PromptMark::B,
        b'C' => PromptMark::C,
        b'D' => {
            let code = params.split(|&b| b == b';').next().unwrap_or_default();
            PromptMark::D(std::str::from_utf8(code).ok().and_then(|c| c.parse().ok()))
        }
        _ => return None,
    })
}

/// The text of a payload: UTF-8 (invalid bytes replaced), control characters dropped.
pub(crate) fn plain(b: &[u8]) -> String {
    String::from_utf8_lossy(b)
        .chars()
        .filter(|c| !c.is_control())
        .collect()
}

/// Parses an OSC 9 (iTerm2 text, not ConEmu's numbered commands such as `9;4`) or OSC 777
/// `notify;title;body` payload.
pub fn notification(payload: &[u8]) -> Option<ProgramNotification> {
    if let Some(rest) = payload.strip_prefix(b"777;notify;") {
        let mut parts = rest.splitn(2, |&b| b == b';');
        let title = parts.next().map(plain);
        let body = parts.next().map(plain).unwrap_or_default();
        return Some(ProgramNotification {
            title,
            body,
            occasion: Occasion::Unfocused,
            urgency: None,
        });
    }
    let body = payload.strip_prefix(b"9;")?;
    let digits = body.iter().take_while(|b| b.is_ascii_digit()).count();
    if body.is_empty() || (digits > 0 && matches!(body.get(digits), None | Some(b';'))) {
        return None; // ConEmu `9;N[;…]` commands
    }
    Some(ProgramNotification {
        title: None,
        body: plain(body),
        occasion: Occasion::Unfocused,
        urgency: None,
    })
}

/// All escape-sequence state of one pane.
#[derive(Debug, Default)]
pub struct PaneSignals {
    scanner: Scanner,
    records: Records,
    user_var: Option<AgentReport>,
    title: Option<String>,
    progress: Option<Progress>,
    kitty: Assembler,
}

impl PaneSignals {
    /// A pane that has said nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Scans the next chunk of the pane's output; updates records, user variable, title and
    /// progress, and calls `sink` for each signal in order, with the records as they stand right
    /// after that signal (so a consumer sees every intermediate state of a burst). `now_unix`
    /// stamps the records.
    pub fn feed(&mut self, bytes: &[u8], now_unix: u64, sink: &mut impl FnMut(Signal, &Records)) {
        let PaneSignals {
            scanner,
            records,
            user_var,
            title,
            progress,
            kitty,
        } = self;
        scanner.feed(bytes, &mut |ev| {
            let sig = match ev {
                Event::Bell => Some(Signal::Bell),
                Event::Oversized { head, len } => {
                    if head.starts_with(b"7501;") {
                        Some(Signal::ReportRejected(ReportError::TooLong(len + 3)))
                    } else {
                        match user_var::oversized(head, len) {
                            UserVarOutcome::Ignore(_) => None,
                            other => Some(other),
                        }
                        .map(|o| {
                            *user_var = None;
                            Signal::UserVar(o)
                        })
                    }
                }
                Event::Osc {
                    payload,
                    terminator,
                    passthrough,
                } => match payload.strip_prefix(b"99;") {
                    // Chunks of one notification join across sequences.
                    Some(_) => kitty_notify::parse(payload)
                        .and_then(|c| kitty.push(c, now_unix))
                        .map(Signal::Notification),
                    None => dispatch(payload, terminator, passthrough),
                },
            };
            let Some(sig) = sig else { return };
            match &sig {
                Signal::StatusReport(r) => {
                    records.apply(r, now_unix);
                }
                Signal::UserVar(UserVarOutcome::Report(r)) => *user_var = Some(r.clone()),
                Signal::UserVar(UserVarOutcome::Clear(_)) => *user_var = None,
                Signal::Title(t) => *title = Some(t.clone()),
                Signal::Progress(p) => *progress = Some(*p),
                _ => {}
            }
            sink(sig, records);
        });
    }

    /// Drops a sequence left half open (output was skipped: a `%continue` after tmux paused the
    /// pane, or the end of a flood pause), so that it cannot swallow the text that follows.
    /// Records, the user variable, title and progress stay.
    pub fn reset_scanner(&mut self) {
        self.scanner.reset();
    }

    /// Whether no escape sequence is open: the next bytes up to an ESC can only be text, or a
    /// BEL outside any sequence ([`Signal::Bell`], which nothing acts on).
    pub fn is_idle(&self) -> bool {
        self.scanner.is_idle()
    }

    /// Like [`PaneSignals::feed`], collecting the signals.
    pub fn feed_collect(&mut self, bytes: &[u8], now_unix: u64) -> Vec<Signal> {
        let mut out = Vec::new();
        self.feed(bytes, now_unix, &mut |s, _| out.push(s));
        out
    }

    /// The OSC 7501 records.
    pub fn records(&self) -> &Records {
        &self.records
    }

    /// The OSC 7501 records, for the lifecycle hooks (`end_ongoing`, `mark_seen`).
    pub fn records_mut(&mut self) -> &mut Records {
        &mut self.records
    }

    /// The last valid `THINKTERM_AGENT` value, unless a later one broke a limit.
    pub fn user_var(&self) -> Option<&AgentReport> {
        self.user_var.as_ref()
    }

    /// What the stored `THINKTERM_AGENT` value still says (see [`user_var::authority`]).
    pub fn user_var_authority(
        &self,
        now_unix: u64,
        observable: bool,
        reporter_is_foreground_leader: bool,
    ) -> Option<Authority> {
        let r = self.user_var.as_ref()?;
        Some(user_var::authority(
            r,
            now_unix,
            observable,
            reporter_is_foreground_leader,
        ))
    }

    /// Forgets the stored `THINKTERM_AGENT` value (its reporter is gone).
    pub fn clear_user_var(&mut self) {
        self.user_var = None;
    }

    /// The last title the program sent (`None` until it sends one), for `osc_title`.
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// A title the program sent that reached us another way (tmux's `pane_title`, read while
    /// our copy of the pane's output was paused).
    pub fn set_title(&mut self, title: String) {
        self.title = Some(title);
    }

    /// The last OSC 9;4 progress the program sent (`None` until it sends), for `osc_progress`.
    pub fn progress(&self) -> Option<Progress> {
        self.progress
    }

    /// Whether the current title starts with a spinner frame.
    pub fn title_spinner(&self) -> bool {
        self.title
            .as_deref()
            .and_then(title::spinner_frame)
            .is_some()
    }

    /// The pane's program changed (S9.4): title and progress are forgotten. Records follow
    /// their own lifecycle and the user variable its authority rules, so both stay.
    pub fn reset(&mut self) {
        self.title = None;
        self.progress = None;
    }
}

fn dispatch(
    payload: &[u8],
    terminator: crate::osc::scanner::Terminator,
    pt: bool,
) -> Option<Signal> {
    let number = payload.split(|&b| b == b';').next().unwrap_or_default();
    match number {
        b"7501" => Some(match status_report::parse(payload, terminator) {
            Ok(Message::Query) => Signal::ReportQuery { passthrough: pt },
            Ok(Message::Report(r)) => Signal::StatusReport(r),
            Err(e) => Signal::ReportRejected(e),
        }),
        b"0" | b"2" => title::parse(payload).map(Signal::Title),
        b"133" => prompt_mark(payload).map(Signal::PromptMark),
        b"1337" => match user_var::parse(payload) {
            UserVarOutcome::Ignore(_) => None,
            o => Some(Signal::UserVar(o)),
        },
        b"9" => match progress::parse(payload) {
            Some(p) => Some(Signal::Progress(p)),
            None => notification(payload).map(Signal::Notification),
        },
        b"777" => notification(payload).map(Signal::Notification),
        _ => None,
    }
}

#[cfg(test)]
#[path = "signals_tests.rs"]
mod tests;
