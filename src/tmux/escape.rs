//! tmux control mode writes pane output with every byte below 0x20 and the backslash as `\ooo`
//! (three octal digits); everything else, UTF-8 included, is raw. This undoes that, and carries
//! output still escaped ([`Escaped`]) so that text with no escape sequence in it is never
//! un-escaped at all: most of what panes write is such text, and its CR LF pairs, written
//! `\015\012`, would stop an un-escaping pass every few dozen bytes.

use std::sync::LazyLock;

use memchr::memchr;
use memchr::memmem::Finder;

/// How tmux writes ESC (0x1b).
const ESC_ESCAPED: &[u8] = b"\\033";

static ESC_FINDER: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(ESC_ESCAPED));

/// Pane output as tmux wrote it in `%output`: still escaped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Escaped(Vec<u8>);

impl Escaped {
    /// Wraps bytes exactly as tmux wrote them.
    pub fn from_wire(bytes: &[u8]) -> Escaped {
        Escaped(bytes.to_vec())
    }

    /// Like [`Escaped::from_wire`], with room for `capacity` bytes in all (more output of the
    /// same pane that is about to be appended).
    pub fn from_wire_with_capacity(bytes: &[u8], capacity: usize) -> Escaped {
        let mut v = Vec::with_capacity(capacity.max(bytes.len()));
        v.extend_from_slice(bytes);
        Escaped(v)
    }

    /// Escapes raw bytes the way tmux does.
    pub fn from_raw(raw: &[u8]) -> Escaped {
        Escaped(escape(raw))
    }

    /// The bytes as tmux wrote them.
    pub fn wire(&self) -> &[u8] {
        &self.0
    }

    /// Length as tmux wrote it (an escaped byte counts four).
    pub fn wire_len(&self) -> usize {
        self.0.len()
    }

    /// Appends more output of the same pane, as tmux wrote it.
    pub fn extend_wire(&mut self, more: &[u8]) {
        self.0.extend_from_slice(more);
    }

    /// The raw bytes the pane wrote.
    pub fn unescape(&self) -> Vec<u8> {
        unescape(&self.0)
    }

    /// The raw bytes from the first ESC on, or `None` when there is no ESC: one `memmem` pass,
    /// no copy, for text without escape sequences.
    pub fn from_first_esc(&self) -> Option<Vec<u8>> {
        ESC_FINDER.find(&self.0).map(|i| unescape(&self.0[i..]))
    }

    /// What of this output an escape-sequence scanner must see. Outside any sequence (`idle`)
    /// only an ESC can start something the sidecar reads (a lone BEL means nothing to it), so
    /// text before the first ESC is skipped and text with none is not even un-escaped (`None`);
    /// inside a sequence, everything.
    pub fn to_scan(&self, idle: bool) -> Option<Vec<u8>> {
        if idle {
            self.from_first_esc()
        } else {
            Some(self.unescape())
        }
    }
}

/// A pane's bytes as they reached us: escaped, as a control client's `%output` carries them, or
/// raw, as the pane's pipe (`pipe-pane`, see [`super::pipe`]) carries them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PaneBytes {
    /// From a control client: still escaped.
    Escaped(Escaped),
    /// From the pane's pipe: exactly what the program wrote.
    Raw(Vec<u8>),
}

impl PaneBytes {
    /// How many bytes came (an escaped byte counts four, as it did on the wire).
    pub fn len(&self) -> usize {
        match self {
            PaneBytes::Escaped(e) => e.wire_len(),
            PaneBytes::Raw(r) => r.len(),
        }
    }

    /// Whether nothing came.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether they came through the pane's pipe (no control client copies this pane).
    pub fn is_piped(&self) -> bool {
        matches!(self, PaneBytes::Raw(_))
    }

    /// The raw bytes the pane wrote.
    pub fn to_raw(&self) -> Vec<u8> {
        match self {
            PaneBytes::Escaped(e) => e.unescape(),
            PaneBytes::Raw(r) => r.clone(),
        }
    }

    /// What an escape-sequence scanner must see, as [`Escaped::to_scan`] says: from the first
    /// ESC on while `idle` (`None` when there is none), else everything.
    pub fn to_scan(&self, idle: bool) -> Option<Vec<u8>> {
        match self {
            PaneBytes::Escaped(e) => e.to_scan(idle),
            PaneBytes::Raw(r) if idle => memchr(0x1b, r).map(|i| r[i..].to_vec()),
            PaneBytes::Raw(r) => Some(r.clone()),
        }
    }
}

/// Appends the un-escaped form of `escaped` to `out`. A backslash not followed by three octal
/// digits is kept as it is (tmux never writes one; this keeps bad input lossless).
pub fn unescape_into(escaped: &[u8], out: &mut Vec<u8>) {
    out.reserve(escaped.len());
    let mut rest = escaped;
    while let Some(i) = memchr(b'\\', rest) {
        out.extend_from_slice(&rest[..i]);
        let tail = &rest[i..];
        match octal3(tail) {
            Some(b) => {
                out.push(b);
                rest = &tail[4..];
            }
            None => {
                out.push(b'\\');
                rest = &tail[1..];
            }
        }
    }
    out.extend_from_slice(rest);
}

/// The un-escaped form of `escaped`, as a new vector.
pub fn unescape(escaped: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(escaped.len());
    unescape_into(escaped, &mut out);
    out
}

fn octal3(s: &[u8]) -> Option<u8> {
    if s.len() < 4 {
        return None;
    }
    let mut v: u32 = 0;
    for &c in &s[1..4] {
        if !(b'0'..=b'7').contains(&c) {
            return None;
        }
        v = v * 8 + u32::from(c - b'0');
    }
    u8::try_from(v).ok()
}

/// Escapes bytes the way tmux does (used by tests and benchmarks to make realistic input).
pub fn escape(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + raw.len() / 8);
    for &b in raw {
        if b < 0x20 || b == b'\\' {
            out.extend_from_slice(format!("\\{b:03o}").as_bytes());
        } else {
            out.push(b);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescapes_control_bytes_and_backslash() {
        assert_eq!(
            unescape(br"a\033]7501;state=working\033\134b"),
            b"a\x1b]7501;state=working\x1b\\b"
        );
        assert_eq!(unescape(br"\015\012"), b"\r\n");
        assert_eq!(unescape("é✳".as_bytes()), "é✳".as_bytes());
    }

    #[test]
    fn keeps_malformed_escapes_verbatim() {
        assert_eq!(unescape(br"\"), b"\\");
        assert_eq!(unescape(br"\09x"), b"\\09x");
        assert_eq!(unescape(br"\777"), b"\\777");
        assert_eq!(unescape(br"x\12"), b"x\\12");
    }

    #[test]
    fn from_first_esc_starts_at_the_first_escape_sequence_or_finds_none() {
        let plain = Escaped::from_raw(b"cargo build\r\n\\033 is not ESC\x07");
        assert_eq!(plain.from_first_esc(), None);
        assert_eq!(plain.unescape(), b"cargo build\r\n\\033 is not ESC\x07");
        let osc = Escaped::from_raw(b"ok\r\n\x1b]0;title\x07 \x1b[1m");
        assert_eq!(
            osc.from_first_esc(),
            Some(b"\x1b]0;title\x07 \x1b[1m".to_vec())
        );
        // A literal backslash before `033` is `\134033` on the wire, never an ESC.
        assert_eq!(Escaped::from_raw(b"\\033\\\\033").from_first_esc(), None);
    }

    #[test]
    fn raw_and_escaped_bytes_scan_alike() {
        for raw in [
            &b"cargo build\r\n"[..],
            b"ok\r\n\x1b]0;title\x07 \x1b[1m",
            b"\x1b",
            b"",
        ] {
            let (e, r) = (
                PaneBytes::Escaped(Escaped::from_raw(raw)),
                PaneBytes::Raw(raw.to_vec()),
            );
            for idle in [true, false] {
                assert_eq!(e.to_scan(idle), r.to_scan(idle), "{raw:?} idle={idle}");
            }
            assert_eq!(e.to_raw(), r.to_raw());
            assert!(r.is_piped() && !e.is_piped());
            assert_eq!(r.len(), raw.len());
        }
    }

    #[test]
    fn escape_round_trips_every_byte() {
        let all: Vec<u8> = (0..=255u8).collect();
        assert_eq!(unescape(&escape(&all)), all);
    }
}
