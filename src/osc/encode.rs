//! Builds valid sequences for `thinkterm-sidecar report`: OSC 7501 status reports and the
//! `THINKTERM_AGENT` user variable, optionally wrapped in tmux passthrough. Every sequence is
//! checked by the same parsers that read them, so the limits cannot drift apart.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use crate::osc::scanner::Terminator;
use crate::osc::status_report::{self, Message, RecordId, ReportError, ReportState};
use crate::osc::user_var::{self, IgnoreReason, LimitError, UserVarOutcome};
use crate::state::{AgentState, BlockedKind};

/// The arguments of a status report, as typed on the command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReportArgs {
    /// The state word (`working`, `blocked`, `idle`, `done`, `error`, `clear`).
    pub state: String,
    /// What the program does or did (plain text; encoded here).
    pub msg: Option<String>,
    /// The program's short name.
    pub app: Option<String>,
    /// Record path, e.g. `build/test`.
    pub id: Option<String>,
    /// 0–100.
    pub progress: Option<u8>,
    /// Heading (plain text; encoded here).
    pub title: Option<String>,
    /// What a blocked program waits for (`permission`, `question`, `auth`).
    pub kind: Option<String>,
}

/// Why a sequence cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// The status report would break an S7 rule.
    #[error("invalid status report: {0}")]
    Report(#[from] ReportError),
    /// The user variable would break an S8 limit.
    #[error("invalid THINKTERM_AGENT value: {0}")]
    Limit(#[from] LimitError),
    /// The user variable would be ignored by readers.
    #[error("invalid THINKTERM_AGENT value: {0}")]
    Ignored(IgnoreReason),
    /// `THINKTERM_AGENT` carries only working, idle and blocked.
    #[error("THINKTERM_AGENT state must be working, idle or blocked, not {0}")]
    UserVarState(AgentState),
    /// `kind` is not one of the words.
    #[error("kind {0:?} is not permission, question or auth")]
    Kind(String),
}

/// The OSC 7501 query (S7.3); follow it with `ESC [ c` to tell "no answer" apart.
pub const STATUS_QUERY: &[u8] = b"\x1b]7501;?\x1b\\";

/// Builds `ESC ] 7501 ; … ESC \` from typed arguments, checked against S7.
pub fn status_report(args: &ReportArgs) -> Result<Vec<u8>, EncodeError> {
    if ReportState::parse(&args.state).is_none() {
        return Err(ReportError::BadState(args.state.clone()).into());
    }
    if let Some(k) = &args.kind {
        BlockedKind::parse(k).ok_or_else(|| EncodeError::Kind(k.clone()))?;
    }
    // Plain fields are checked before composing: a `:` inside one would change the grammar.
    if let Some(app) = &args.app {
        status_report::check_name(app).map_err(|why| ReportError::BadApp(app.clone(), why))?;
    }
    if let Some(id) = &args.id {
        RecordId::parse(id)?;
    }
    let mut payload = format!("7501;state={}", args.state);
    let mut add = |key: &str, value: &str| {
        payload.push(':');
        payload.push_str(key);
        payload.push('=');
        payload.push_str(value);
    };
    if let Some(id) = &args.id {
        add("id", id);
    }
    if let Some(kind) = &args.kind {
        add("kind", kind);
    }
    if let Some(p) = args.progress {
        add("progress", &p.to_string());
    }
    if let Some(app) = &args.app {
        add("app", app);
    }
    if let Some(title) = &args.title {
        add("title", &STANDARD.encode(title));
    }
    if let Some(msg) = &args.msg {
        add("msg", &STANDARD.encode(msg));
    }
    // The same parser that reads reports checks the rest (limits, kind/progress rules).
    match status_report::parse(payload.as_bytes(), Terminator::St)? {
        Message::Report(_) => {}
        Message::Query => return Err(ReportError::BadState(args.state.clone()).into()),
    }
    Ok(wrap_osc(payload.as_bytes(), Terminator::St))
}

/// Builds `ESC ] 1337 ; SetUserVar=THINKTERM_AGENT=<base64> BEL`, checked against S8.
pub fn user_var(agent: &str, state: AgentState, ts: Option<u64>) -> Result<Vec<u8>, EncodeError> {
    if !matches!(
        state,
        AgentState::Working | AgentState::Idle | AgentState::Blocked
    ) {
        return Err(EncodeError::UserVarState(state));
    }
    if agent.contains(';') {
        return Err(EncodeError::Ignored(IgnoreReason::Control("agent (';')")));
    }
    let mut value = format!("v1;agent={agent};state={}", state.as_str());
    if let Some(ts) = ts {
        value.push_str(&format!(";ts={ts}"));
    }
    let payload = format!(
        "1337;SetUserVar=THINKTERM_AGENT={}",
        STANDARD.encode(&value)
    );
    match user_var::parse(payload.as_bytes()) {
        UserVarOutcome::Report(_) => Ok(wrap_osc(payload.as_bytes(), Terminator::Bel)),
        UserVarOutcome::Clear(e) => Err(e.into()),
        UserVarOutcome::Ignore(why) => Err(EncodeError::Ignored(why)),
    }
}

fn wrap_osc(payload: &[u8], t: Terminator) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 4);
    out.extend_from_slice(b"\x1b]");
    out.extend_from_slice(payload);
    out.extend_from_slice(match t {
        Terminator::Bel => b"\x07",
        Terminator::St => b"\x1b\\",
    });
    out
}

/// Wraps a sequence in tmux passthrough (`ESC P tmux; … ESC \`, ESCs doubled), for programs
/// that must reach the terminal outside tmux.
pub fn tmux_passthrough(seq: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(seq.len() + 16);
    out.extend_from_slice(b"\x1bPtmux;");
    for &b in seq {
        if b == 0x1b {
            out.push(0x1b);
        }
        out.push(b);
    }
    out.extend_from_slice(b"\x1b\\");
    out
}

#[cfg(test)]
#[path = "encode_tests.rs"]
mod tests;
