//! tmux control mode writes pane output with every byte below 0x20 and the backslash as `\ooo`
//! (three octal digits); everything else, UTF-8 included, is raw. This undoes that.

use memchr::memchr;

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
    fn escape_round_trips_every_byte() {
        let all: Vec<u8> = (0..=255u8).collect();
        assert_eq!(unescape(&escape(&all)), all);
    }
}
