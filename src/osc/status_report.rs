//! OSC 7501 status reports (S7): `ESC ] 7501 ; state=…[:id=…][:kind=…][:progress=…][:app=…]
//! [:title=b64][:msg=b64] ST`, and the `ESC ] 7501 ; ? ST` query. Parsing only: the record table
//! that reports update lives in [`crate::osc::records`].
//!
//! A report breaking any rule of S7.1 is dropped whole, and [`parse`] says which rule. Choices
//! where S7 is silent: keys may come in any order (Codex sends `kind` after `app`); a key given
//! twice is an error (which one would win is a guess); an empty item (`a=1::b=2`) is an error;
//! an unknown item with no `=` is ignored like any unknown key; `title`/`msg` accept base64 with
//! or without padding; `progress` is 1–3 ASCII digits; `app`, `kind`, `title`, `msg` with
//! `clear` are read and checked but mean nothing; an empty `app` or `id` is an error.

use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;

use crate::osc::scanner::Terminator;
use crate::state::BlockedKind;

/// The OSC number of status reports.
pub const OSC_NUMBER: &[u8] = b"7501";
/// Longest whole sequence, `ESC ]` and terminator included (S7.1).
pub const MAX_SEQUENCE: usize = 4096;
/// Most `id` path segments (S7).
pub const MAX_ID_SEGMENTS: usize = 8;
/// Longest `id` path in bytes (S7).
pub const MAX_ID_BYTES: usize = 128;
/// Longest `id` segment or `app` name in characters (S7.1).
pub const MAX_NAME_CHARS: usize = 32;
/// Longest decoded `title` (S7.1).
pub const MAX_TITLE_BYTES: usize = 192;
/// Longest decoded `msg` (S7.1).
pub const MAX_MSG_BYTES: usize = 2048;

/// Standard-alphabet base64, padding optional, as the reports' `title` and `msg` use.
pub(crate) const BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The `state` a report sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReportState {
    /// Busy.
    Working,
    /// Waiting for the person.
    Blocked,
    /// Ready for input.
    Idle,
    /// Finished, result not yet seen.
    Done,
    /// Failed and stopped.
    Error,
    /// Removes the record and everything under it.
    Clear,
}

impl ReportState {
    /// Parses the wire word.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "working" => ReportState::Working,
            "blocked" => ReportState::Blocked,
            "idle" => ReportState::Idle,
            "done" => ReportState::Done,
            "error" => ReportState::Error,
            "clear" => ReportState::Clear,
            _ => return None,
        })
    }

    /// The wire word.
    pub fn as_str(self) -> &'static str {
        match self {
            ReportState::Working => "working",
            ReportState::Blocked => "blocked",
            ReportState::Idle => "idle",
            ReportState::Done => "done",
            ReportState::Error => "error",
            ReportState::Clear => "clear",
        }
    }
}

/// A validated `id` path such as `build/test` (1–8 segments, ≤ 128 bytes).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordId(String);

impl RecordId {
    /// Validates a path.
    pub fn parse(s: &str) -> Result<Self, ReportError> {
        if s.is_empty() {
            return Err(ReportError::EmptyId);
        }
        if s.len() > MAX_ID_BYTES {
            return Err(ReportError::IdTooLong(s.len()));
        }
        let n = s.split('/').count();
        if n > MAX_ID_SEGMENTS {
            return Err(ReportError::IdTooDeep(n));
        }
        for seg in s.split('/') {
            check_name(seg).map_err(|why| ReportError::BadIdSegment(seg.to_owned(), why))?;
        }
        Ok(RecordId(s.to_owned()))
    }

    /// The path as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its segments.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }

    /// Whether `self` is `other` or lies under it.
    pub fn is_within(&self, other: &RecordId) -> bool {
        self.0 == other.0
            || (self.0.starts_with(&other.0) && self.0.as_bytes().get(other.0.len()) == Some(&b'/'))
    }
}

/// One parsed status report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusReport {
    /// The state set.
    pub state: ReportState,
    /// Which record; `None` is the program's own.
    pub id: Option<RecordId>,
    /// What a blocked program waits for.
    pub kind: Option<BlockedKind>,
    /// 0–100; `None` is indeterminate.
    pub progress: Option<u8>,
    /// The program's short name.
    pub app: Option<String>,
    /// Heading, decoded.
    pub title: Option<String>,
    /// What the program does or did, decoded.
    pub msg: Option<String>,
}

/// What an OSC 7501 payload says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// `ESC ] 7501 ; ? ST`: "do you understand status reports?" (S7.3).
    Query,
    /// A report.
    Report(StatusReport),
}

/// Which S7 rule a dropped report broke.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    /// Not OSC 7501 at all.
    #[error("not an OSC 7501 sequence")]
    NotStatusReport,
    /// Over 4096 bytes as a whole sequence.
    #[error("sequence is {0} bytes, at most {MAX_SEQUENCE}")]
    TooLong(usize),
    /// Not UTF-8 text.
    #[error("sequence is not UTF-8")]
    NotUtf8,
    /// `a::b`, a leading or trailing `:`.
    #[error("empty item between ':' separators")]
    EmptyItem,
    /// A known key twice.
    #[error("key {0:?} given twice")]
    DuplicateKey(&'static str),
    /// No `state`.
    #[error("state is required")]
    MissingState,
    /// `state` not one of the six words.
    #[error("state {0:?} is not working, blocked, idle, done, error or clear")]
    BadState(String),
    /// `id=` empty.
    #[error("id is empty")]
    EmptyId,
    /// `id` over 128 bytes.
    #[error("id is {0} bytes, at most {MAX_ID_BYTES}")]
    IdTooLong(usize),
    /// `id` over 8 segments.
    #[error("id has {0} segments, at most {MAX_ID_SEGMENTS}")]
    IdTooDeep(usize),
    /// An `id` segment that is empty, too long or has a character outside `[A-Za-z0-9_.+-]`.
    #[error("id segment {0:?}: {1}")]
    BadIdSegment(String, NameError),
    /// `app` empty, too long or with a bad character.
    #[error("app {0:?}: {1}")]
    BadApp(String, NameError),
    /// `kind` not permission, question or auth.
    #[error("kind {0:?} is not permission, question or auth")]
    BadKind(String),
    /// `kind` with a state other than blocked.
    #[error("kind is only allowed with state blocked, not {0}")]
    KindWithoutBlocked(&'static str),
    /// `progress` not an integer 0–100.
    #[error("progress {0:?} is not an integer from 0 to 100")]
    BadProgress(String),
    /// `progress` with a state other than working or blocked.
    #[error("progress is only allowed with state working or blocked, not {0}")]
    ProgressWithoutWork(&'static str),
    /// `title` or `msg` is not base64.
    #[error("{0} is not valid base64")]
    BadBase64(&'static str),
    /// `title`/`msg` decodes to more than its limit.
    #[error("{0} is {1} bytes decoded, at most {2}")]
    TextTooLong(&'static str, usize, usize),
    /// `title`/`msg` decodes to something that is not UTF-8.
    #[error("{0} does not decode to UTF-8")]
    TextNotUtf8(&'static str),
    /// `title`/`msg` contains a control character.
    #[error("{0} contains a control character (U+{1:04X})")]
    TextControl(&'static str, u32),
}

/// Why an `id` segment or `app` name is invalid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Zero characters.
    #[error("empty")]
    Empty,
    /// Over 32 characters.
    #[error("{0} characters, at most {MAX_NAME_CHARS}")]
    TooLong(usize),
    /// A character outside `[A-Za-z0-9_.+-]`.
    #[error("character {0:?} is not a letter, digit or one of _ . + -")]
    BadChar(char),
}

/// Checks an `id` segment or `app` name (S7.1).
pub fn check_name(s: &str) -> Result<(), NameError> {
    if s.is_empty() {
        return Err(NameError::Empty);
    }
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '+' | '-')))
    {
        return Err(NameError::BadChar(c));
    }
    if s.len() > MAX_NAME_CHARS {
        return Err(NameError::TooLong(s.len()));
    }
    Ok(())
}

/// Decodes a base64 `title`/`msg` and checks it (S7.1).
fn decode_text(field: &'static str, b64: &str, max: usize) -> Result<String, ReportError> {
    // A cheap bound first: the decoded length is at most 3/4 of the encoded one.
    if b64.len() / 4 * 3 > max + 3 {
        return Err(ReportError::TextTooLong(field, b64.len() / 4 * 3, max));
    }
    let bytes = BASE64
        .decode(b64)
        .map_err(|_| ReportError::BadBase64(field))?;
    if bytes.len() > max {
        return Err(ReportError::TextTooLong(field, bytes.len(), max));
    }
    let text = String::from_utf8(bytes).map_err(|_| ReportError::TextNotUtf8(field))?;
    check_text(field, &text)?;
    Ok(text)
}

/// Rejects control characters (C0, DEL, C1) in a decoded `title`/`msg`.
pub fn check_text(field: &'static str, text: &str) -> Result<(), ReportError> {
    match text.chars().find(|c| c.is_control()) {
        Some(c) => Err(ReportError::TextControl(field, c as u32)),
        None => Ok(()),
    }
}

/// Parses a whole OSC payload (`7501;…`, as [`crate::osc::scanner::Event::Osc`] gives it).
pub fn parse(payload: &[u8], terminator: Terminator) -> Result<Message, ReportError> {
    let body = payload
        .strip_prefix(OSC_NUMBER)
        .and_then(|r| r.strip_prefix(b";"))
        .ok_or(ReportError::NotStatusReport)?;
    let whole = 2 + payload.len() + terminator.len();
    if whole > MAX_SEQUENCE {
        return Err(ReportError::TooLong(whole));
    }
    let body = std::str::from_utf8(body).map_err(|_| ReportError::NotUtf8)?;
    if body == "?" {
        return Ok(Message::Query);
    }
    parse_body(body).map(Message::Report)
}

#[derive(Default)]
struct Raw<'a> {
    state: Option<&'a str>,
    id: Option<&'a str>,
    kind: Option<&'a str>,
    progress: Option<&'a str>,
    app: Option<&'a str>,
    title: Option<&'a str>,
    msg: Option<&'a str>,
}

fn set<'a>(slot: &mut Option<&'a str>, key: &'static str, v: &'a str) -> Result<(), ReportError> {
    if slot.replace(v).is_some() {
        return Err(ReportError::DuplicateKey(key));
    }
    Ok(())
}

fn parse_body(body: &str) -> Result<StatusReport, ReportError> {
    let mut raw = Raw::default();
    for item in body.split(':') {
        if item.is_empty() {
            return Err(ReportError::EmptyItem);
        }
        let (key, value) = item.split_once('=').unwrap_or((item, ""));
        match key {
            "state" => set(&mut raw.state, "state", value)?,
            "id" => set(&mut raw.id, "id", value)?,
            "kind" => set(&mut raw.kind, "kind", value)?,
            "progress" => set(&mut raw.progress, "progress", value)?,
            "app" => set(&mut raw.app, "app", value)?,
            "title" => set(&mut raw.title, "title", value)?,
            "msg" => set(&mut raw.msg, "msg", value)?,
            _ => {} // unknown keys: how the protocol grows (S7.2)
        }
    }
    let state_word = raw.state.ok_or(ReportError::MissingState)?;
    let state =
        ReportState::parse(state_word).ok_or_else(|| ReportError::BadState(state_word.into()))?;
    let id = raw.id.map(RecordId::parse).transpose()?;
    let kind = match raw.kind {
        None => None,
        Some(k) => {
            let kind = BlockedKind::parse(k).ok_or_else(|| ReportError::BadKind(k.into()))?;
            if state != ReportState::Blocked {
                return Err(ReportError::KindWithoutBlocked(state.as_str()));
            }
            Some(kind)
        }
    };
    let progress = match raw.progress {
        None => None,
        Some(p) => {
            let value = parse_percent(p).ok_or_else(|| ReportError::BadProgress(p.into()))?;
            if !matches!(state, ReportState::Working | ReportState::Blocked) {
                return Err(ReportError::ProgressWithoutWork(state.as_str()));
            }
            Some(value)
        }
    };
    let app = match raw.app {
        None => None,
        Some(a) => {
            check_name(a).map_err(|why| ReportError::BadApp(a.into(), why))?;
            Some(a.to_owned())
        }
    };
    let title = raw
        .title
        .map(|t| decode_text("title", t, MAX_TITLE_BYTES))
        .transpose()?;
    let msg = raw
        .msg
        .map(|m| decode_text("msg", m, MAX_MSG_BYTES))
        .transpose()?;
    Ok(StatusReport {
        state,
        id,
        kind,
        progress,
        app,
        title,
        msg,
    })
}

/// 1–3 ASCII digits with a value of at most 100.
pub(crate) fn parse_percent(s: &str) -> Option<u8> {
    if s.is_empty() || s.len() > 3 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: u8 = s.parse().ok()?;
    (v <= 100).then_some(v)
}

#[cfg(test)]
#[path = "status_report_tests.rs"]
mod tests;
