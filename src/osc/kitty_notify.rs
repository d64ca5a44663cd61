//! OSC 99, kitty's desktop-notification protocol: `ESC ] 99 ; METADATA ; PAYLOAD ST`, where
//! METADATA is `key=value` pairs joined by `:`. The keys read here: `i` (an identifier tying
//! chunks together), `d` (`0`: more chunks follow; `1`, the default: done), `p` (what the
//! payload is: `title`, the default, or `body`; `close`, `alive`, `icon`, `buttons` and the `?`
//! query carry nothing we show), `e` (`1`: the payload is base64), `o` (when to show:
//! `always`, `unfocused`, `invisible`) and `u` (urgency 0–2). Other keys are ignored.
//!
//! [`Assembler`] joins the chunks of one notification (title chunks to the title, body chunks
//! to the body) until a chunk says it is done. It is bounded: at most [`MAX_PENDING`]
//! notifications in progress per pane (the oldest is dropped), [`MAX_TEXT`] bytes of title or
//! body each (the rest is dropped), and a notification left unfinished for
//! [`PENDING_SECS`] is forgotten. Pure; the clock is passed in.

use base64::Engine;

use super::signals::{Occasion, ProgramNotification};

/// Notifications in progress per pane.
pub const MAX_PENDING: usize = 8;
/// Longest title or body kept, in bytes.
pub const MAX_TEXT: usize = 2048;
/// How long a notification may wait for its last chunk.
pub const PENDING_SECS: u64 = 30;
/// Longest identifier kept (longer ones are cut).
const MAX_ID: usize = 64;

/// What a chunk's payload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The title (the default).
    Title,
    /// The body.
    Body,
    /// Something we do not show (close, alive, icon, buttons).
    Other,
    /// The `?` query: the program asks what the terminal supports; nothing to show.
    Query,
}

/// One OSC 99 sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// `i`.
    pub id: Option<String>,
    /// `d`: the notification is complete with this chunk.
    pub done: bool,
    /// `p`.
    pub part: Part,
    /// `o`, when given.
    pub occasion: Option<Occasion>,
    /// `u`, when given.
    pub urgency: Option<u8>,
    /// The payload, decoded when `e=1`.
    pub text: Vec<u8>,
}

/// Parses an OSC 99 payload (`99;…`). `None` when it is not OSC 99 or is malformed (no second
/// `;`, or `e=1` with a payload that is not base64).
pub fn parse(payload: &[u8]) -> Option<Chunk> {
    let rest = payload.strip_prefix(b"99;")?;
    let split = rest.iter().position(|&b| b == b';')?;
    let (meta, data) = (&rest[..split], &rest[split + 1..]);
    let mut chunk = Chunk {
        id: None,
        done: true,
        part: Part::Title,
        occasion: None,
        urgency: None,
        text: Vec::new(),
    };
    let mut base64 = false;
    for pair in meta.split(|&b| b == b':').filter(|p| !p.is_empty()) {
        let Some(eq) = pair.iter().position(|&b| b == b'=') else {
            continue;
        };
        let (key, value) = (&pair[..eq], &pair[eq + 1..]);
        match key {
            b"i" => {
                let id: String = String::from_utf8_lossy(value)
                    .chars()
                    .filter(|c| c.is_ascii_alphanumeric() || "-_+.".contains(*c))
                    .take(MAX_ID)
                    .collect();
                chunk.id = (!id.is_empty()).then_some(id);
            }
            b"d" => chunk.done = value != b"0",
            b"e" => base64 = value == b"1",
            b"p" => {
                chunk.part = match value {
                    b"title" => Part::Title,
                    b"body" => Part::Body,
                    b"?" => Part::Query,
                    _ => Part::Other,
                }
            }
            b"o" => {
                chunk.occasion = match value {
                    b"always" => Some(Occasion::Always),
                    b"unfocused" => Some(Occasion::Unfocused),
                    b"invisible" => Some(Occasion::Invisible),
                    _ => None,
                }
            }
            b"u" => chunk.urgency = std::str::from_utf8(value).ok().and_then(|u| u.parse().ok()),
            _ => {}
        }
    }
    chunk.text = if base64 {
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(data))
            .ok()?
    } else {
        data.to_vec()
    };
    Some(chunk)
}

#[derive(Debug)]
struct Pending {
    id: Option<String>,
    title: Vec<u8>,
    body: Vec<u8>,
    occasion: Option<Occasion>,
    urgency: Option<u8>,
    started: u64,
}

/// The notifications of one pane that are still arriving.
#[derive(Debug, Default)]
pub struct Assembler {
    pending: Vec<Pending>,
}

fn append(to: &mut Vec<u8>, text: &[u8]) {
    let room = MAX_TEXT.saturating_sub(to.len());
    to.extend_from_slice(&text[..text.len().min(room)]);
}

impl Assembler {
    /// Takes one chunk at `now_unix` (seconds); returns the notification it completes.
    pub fn push(&mut self, chunk: Chunk, now_unix: u64) -> Option<ProgramNotification> {
        if chunk.part == Part::Query {
            return None;
        }
        self.pending
            .retain(|p| now_unix.saturating_sub(p.started) <= PENDING_SECS);
        let i = match self.pending.iter().position(|p| p.id == chunk.id) {
            Some(i) => i,
            None => {
                if self.pending.len() >= MAX_PENDING {
                    self.pending.remove(0);
                }
                self.pending.push(Pending {
                    id: chunk.id.clone(),
                    title: Vec::new(),
                    body: Vec::new(),
                    occasion: None,
                    urgency: None,
                    started: now_unix,
                });
                self.pending.len() - 1
            }
        };
        let p = &mut self.pending[i];
        match chunk.part {
            Part::Title => append(&mut p.title, &chunk.text),
            Part::Body => append(&mut p.body, &chunk.text),
            Part::Other | Part::Query => {}
        }
        p.occasion = chunk.occasion.or(p.occasion);
        p.urgency = chunk.urgency.or(p.urgency);
        if !chunk.done {
            return None;
        }
        let p = self.pending.remove(i);
        let title = super::signals::plain(&p.title);
        let body = super::signals::plain(&p.body);
        if title.trim().is_empty() && body.trim().is_empty() {
            return None;
        }
        Some(ProgramNotification {
            title: (!title.trim().is_empty()).then_some(title),
            body,
            occasion: p.occasion.unwrap_or_default(),
            urgency: p.urgency,
        })
    }

    /// Notifications in progress (for tests and bounds).
    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(a: &mut Assembler, seqs: &[&str], now: u64) -> Vec<ProgramNotification> {
        seqs.iter()
            .filter_map(|s| parse(s.as_bytes()).and_then(|c| a.push(c, now)))
            .collect()
    }

    #[test]
    fn a_single_sequence_is_a_title() {
        let mut a = Assembler::default();
        let n = feed(&mut a, &["99;;Hello world"], 0);
        assert_eq!(n.len(), 1);
        assert_eq!(n[0].title.as_deref(), Some("Hello world"));
        assert_eq!(n[0].body, "");
        assert_eq!(n[0].occasion, Occasion::Unfocused);
    }

    #[test]
    fn chunks_join_by_id_title_and_body_apart_base64_decoded() {
        let mut a = Assembler::default();
        // "Build " + "done" as title, base64 body "all 12 tests passed", interleaved with
        // another notification in progress.
        let n = feed(
            &mut a,
            &[
                "99;i=b1:d=0;Build ",
                "99;i=other:d=0:p=body;not yet",
                "99;i=b1:d=0;done",
                "99;i=b1:d=0:p=body:e=1;YWxsIDEyIHRlc3Rz",
                "99;i=b1:d=1:p=body:o=always:u=2;%20passed",
            ],
            5,
        );
        assert_eq!(n.len(), 1);
        assert_eq!(n[0].title.as_deref(), Some("Build done"));
        assert_eq!(n[0].body, "all 12 tests%20passed");
        assert_eq!(n[0].occasion, Occasion::Always);
        assert_eq!(n[0].urgency, Some(2));
        assert_eq!(a.pending(), 1, "the other one is still arriving");
    }

    #[test]
    fn queries_close_and_bad_sequences_show_nothing() {
        let mut a = Assembler::default();
        assert!(feed(&mut a, &["99;i=q:p=?;", "99;p=close;", "99;;"], 0).is_empty());
        assert_eq!(parse(b"99;no second separator"), None);
        assert_eq!(parse(b"99;e=1;***not base64***"), None);
        assert_eq!(parse(b"9;text"), None);
        // Control characters are dropped from what is shown.
        let n = feed(&mut a, &["99;;a\x07b\x1bc"], 0);
        assert_eq!(n[0].title.as_deref(), Some("abc"));
    }

    #[test]
    fn bounds_hold_pending_count_text_length_and_age() {
        let mut a = Assembler::default();
        for i in 0..100 {
            feed(&mut a, &[&format!("99;i=n{i}:d=0;x")], 0);
        }
        assert_eq!(a.pending(), MAX_PENDING);
        let long = "y".repeat(4000);
        for _ in 0..10 {
            feed(&mut a, &[&format!("99;i=long:d=0:p=body;{long}")], 0);
        }
        let n = feed(&mut a, &["99;i=long;t"], 0);
        assert_eq!(n[0].body.len(), MAX_TEXT);
        // Unfinished for longer than PENDING_SECS: forgotten.
        feed(&mut a, &["99;i=late:d=0;first "], 100);
        let n = feed(&mut a, &["99;i=late;second"], 100 + PENDING_SECS + 1);
        assert_eq!(n[0].title.as_deref(), Some("second"));
    }
}
