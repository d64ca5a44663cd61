//! `THINKTERM_AGENT` (S8): `ESC ] 1337 ; SetUserVar=THINKTERM_AGENT=<base64> BEL`, whose value is
//! `v1;agent=<id>;state=<working|idle|blocked>[;session=<id>][;pid=<n>][;ts=<unix>][;ended=1]`.
//! [`parse`] turns a payload into a [`UserVarOutcome`]; [`authority`] decides, with an injected
//! clock, what a stored report still says.
//!
//! Three outcomes, as S8 distinguishes them: a report (store it), [`UserVarOutcome::Clear`] (a
//! limit broken: the pane's old value goes too, S8.1) and [`UserVarOutcome::Ignore`] (keep the
//! old value). Choices where S8 is silent: an oversized payload the scanner dropped is a limit
//! violation (see [`oversized`]); a value that is not base64 or not UTF-8, a missing `agent` or
//! `state`, a known key given twice, a `ts` that is not an integer (else a malformed stamp would
//! be trusted forever), and a control character in `agent`/`session` are ignored whole; empty
//! fields (`;;`, a trailing `;`) are skipped; `ended` is true only for `ended=1`.

use base64::Engine;

use crate::osc::scanner::USER_VAR_PREFIX;
use crate::osc::status_report::BASE64;
use crate::state::AgentState;

/// The payload prefix of any iTerm2-style user variable.
pub const SET_USER_VAR: &[u8] = b"1337;SetUserVar=";
/// Longest decoded value (S8.1).
pub const MAX_VALUE_BYTES: usize = 4096;
/// Longest `agent` (S8.1).
pub const MAX_AGENT_BYTES: usize = 128;
/// Longest `session` (S8.1).
pub const MAX_SESSION_BYTES: usize = 512;
/// A non-idle report older than this loses authority (S8.2).
pub const MAX_AGE_SECS: u64 = 6 * 60 * 60;
/// A report this far or more in the future loses authority (S8.2).
pub const MAX_FUTURE_SECS: u64 = 5 * 60;

/// A `THINKTERM_AGENT` report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentReport {
    /// The agent's short stable id.
    pub agent: String,
    /// Its state; `None` when the word was unknown (it drives nothing).
    pub state: Option<AgentState>,
    /// Session id (may be empty).
    pub session: Option<String>,
    /// Send time, unix seconds.
    pub ts: Option<u64>,
    /// `ended=1`: the session has ended.
    pub ended: bool,
}

/// What a `SetUserVar` payload means for the pane's stored value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserVarOutcome {
    /// A valid report: it replaces the stored one.
    Report(AgentReport),
    /// A limit was broken: the stored value is cleared.
    Clear(LimitError),
    /// Not for us or malformed: the stored value stays.
    Ignore(IgnoreReason),
}

/// Which S8.1 limit was broken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// Decoded value too long.
    #[error("value is {0} bytes decoded, at most {MAX_VALUE_BYTES}")]
    ValueTooLong(usize),
    /// `agent` too long.
    #[error("agent is {0} bytes, at most {MAX_AGENT_BYTES}")]
    AgentTooLong(usize),
    /// `session` too long.
    #[error("session is {0} bytes, at most {MAX_SESSION_BYTES}")]
    SessionTooLong(usize),
}

/// Why a payload changes nothing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IgnoreReason {
    /// Not a `SetUserVar` at all.
    #[error("not a SetUserVar sequence")]
    NotUserVar,
    /// Another variable's name.
    #[error("user variable {0:?} is not THINKTERM_AGENT")]
    OtherName(String),
    /// Not base64.
    #[error("value is not valid base64")]
    BadBase64,
    /// Not UTF-8.
    #[error("value is not UTF-8")]
    NotUtf8,
    /// First field is not `v1` or `v1.N`.
    #[error("grammar version {0:?} is not v1")]
    Version(String),
    /// No `agent` (or an empty one).
    #[error("agent is required")]
    MissingAgent,
    /// No `state`.
    #[error("state is required")]
    MissingState,
    /// A known key twice.
    #[error("key {0:?} given twice")]
    DuplicateKey(&'static str),
    /// `ts` not an integer.
    #[error("ts {0:?} is not unix seconds")]
    BadTs(String),
    /// A control character in `agent` or `session`.
    #[error("{0} contains a control character")]
    Control(&'static str),
}

/// Parses an OSC payload (`1337;SetUserVar=NAME=<base64>`).
pub fn parse(payload: &[u8]) -> UserVarOutcome {
    use UserVarOutcome::{Clear, Ignore};
    let Some(rest) = payload.strip_prefix(SET_USER_VAR) else {
        return Ignore(IgnoreReason::NotUserVar);
    };
    let Some(b64) = payload.strip_prefix(USER_VAR_PREFIX) else {
        let name = rest.split(|&b| b == b'=').next().unwrap_or_default();
        return Ignore(IgnoreReason::OtherName(
            String::from_utf8_lossy(name).into_owned(),
        ));
    };
    let Ok(bytes) = BASE64.decode(b64) else {
        return Ignore(IgnoreReason::BadBase64);
    };
    if bytes.len() > MAX_VALUE_BYTES {
        return Clear(LimitError::ValueTooLong(bytes.len()));
    }
    let Ok(value) = std::str::from_utf8(&bytes) else {
        return Ignore(IgnoreReason::NotUtf8);
    };
    parse_value(value)
}

/// What an oversized, dropped `SetUserVar` means (from the scanner's `Oversized` head): for
/// `THINKTERM_AGENT` a broken limit, so the stored value is cleared; anything else is ignored.
pub fn oversized(head: &[u8], len: usize) -> UserVarOutcome {
    if head.starts_with(USER_VAR_PREFIX) {
        let b64 = len.saturating_sub(USER_VAR_PREFIX.len());
        UserVarOutcome::Clear(LimitError::ValueTooLong(b64 / 4 * 3))
    } else {
        UserVarOutcome::Ignore(IgnoreReason::NotUserVar)
    }
}

#[derive(Default)]
struct Raw<'a> {
    agent: Option<&'a str>,
    state: Option<&'a str>,
    session: Option<&'a str>,
    ts: Option<&'a str>,
    ended: Option<&'a str>,
}

fn set<'a>(slot: &mut Option<&'a str>, key: &'static str, v: &'a str) -> Result<(), IgnoreReason> {
    match slot.replace(v) {
        Some(_) => Err(IgnoreReason::DuplicateKey(key)),
        None => Ok(()),
    }
}

/// Parses a decoded value (`v1;agent=…;state=…`).
pub fn parse_value(value: &str) -> UserVarOutcome {
    match parse_fields(value) {
        Ok(o) => o,
        Err(why) => UserVarOutcome::Ignore(why),
    }
}

fn is_v1(version: &str) -> bool {
    match version.strip_prefix("v1") {
        Some("") => true,
        Some(minor) => minor
            .strip_prefix('.')
            .is_some_and(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit())),
        None => false,
    }
}

fn parse_fields(value: &str) -> Result<UserVarOutcome, IgnoreReason> {
    let mut fields = value.split(';');
    let version = fields.next().unwrap_or_default();
    if !is_v1(version) {
        return Err(IgnoreReason::Version(version.chars().take(16).collect()));
    }
    let mut raw = Raw::default();
    for field in fields.filter(|f| !f.is_empty()) {
        let (key, v) = field.split_once('=').unwrap_or((field, ""));
        match key {
            "agent" => set(&mut raw.agent, "agent", v)?,
            "state" => set(&mut raw.state, "state", v)?,
            "session" => set(&mut raw.session, "session", v)?,
            "ts" => set(&mut raw.ts, "ts", v)?,
            "ended" => set(&mut raw.ended, "ended", v)?,
            _ => {} // `pid` and unknown keys: accepted, ignored (S8, S8.1)
        }
    }
    let agent = raw.agent.ok_or(IgnoreReason::MissingAgent)?;
    if agent.len() > MAX_AGENT_BYTES {
        return Ok(UserVarOutcome::Clear(LimitError::AgentTooLong(agent.len())));
    }
    if let Some(s) = raw.session.filter(|s| s.len() > MAX_SESSION_BYTES) {
        return Ok(UserVarOutcome::Clear(LimitError::SessionTooLong(s.len())));
    }
    if agent.is_empty() {
        return Err(IgnoreReason::MissingAgent);
    }
    if agent.chars().any(char::is_control) {
        return Err(IgnoreReason::Control("agent"));
    }
    if raw.session.is_some_and(|s| s.chars().any(char::is_control)) {
        return Err(IgnoreReason::Control("session"));
    }
    let state_word = raw.state.ok_or(IgnoreReason::MissingState)?;
    let state = match state_word {
        "working" => Some(AgentState::Working),
        "idle" => Some(AgentState::Idle),
        "blocked" => Some(AgentState::Blocked),
        _ => None,
    };
    let ts = match raw.ts {
        None => None,
        Some(t) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => {
            Some(t.parse().map_err(|_| IgnoreReason::BadTs(t.into()))?)
        }
        Some(t) => return Err(IgnoreReason::BadTs(t.chars().take(24).collect())),
    };
    Ok(UserVarOutcome::Report(AgentReport {
        agent: agent.to_owned(),
        state,
        session: raw.session.map(str::to_owned),
        ts,
        ended: raw.ended == Some("1"),
    }))
}

/// What a stored report still says at `now_unix` (S8.2, S8.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Authority {
    /// Whether the reported identity (agent, session) still labels the pane.
    pub identity: bool,
    /// The state it still drives, if any.
    pub state: Option<AgentState>,
}

/// Whether a report is past its window: non-idle with a `ts` older than 6 h, or 5 min or more
/// in the future (S8.2). Idle and `ts`-less reports never go stale.
pub fn is_stale(report: &AgentReport, now_unix: u64) -> bool {
    let Some(ts) = report.ts else { return false };
    if report.state == Some(AgentState::Idle) {
        return false;
    }
    now_unix.saturating_sub(ts) > MAX_AGE_SECS || ts.saturating_sub(now_unix) >= MAX_FUTURE_SECS
}

/// Decides what `report` still says. `observable`: the pane's process can be seen (not SSH,
/// nested tmux, serial). `reporter_is_foreground_leader`: the process that sent it still leads
/// the pane's foreground (then `ended=1` is ignored, S8.3).
pub fn authority(
    report: &AgentReport,
    now_unix: u64,
    observable: bool,
    reporter_is_foreground_leader: bool,
) -> Authority {
    if report.ended && !reporter_is_foreground_leader {
        return Authority {
            identity: false,
            state: None,
        };
    }
    let stale = is_stale(report, now_unix);
    Authority {
        identity: !stale || observable,
        state: if stale { None } else { report.state },
    }
}

#[cfg(test)]
#[path = "user_var_tests.rs"]
mod tests;
