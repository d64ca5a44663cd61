//! The streaming escape-sequence scanner of one pane: fed the raw output bytes (already decoded
//! from tmux's octal) in chunks of any size, it emits every OSC payload with its terminator, and
//! nothing else of interest. It owns one bounded buffer and never allocates after construction.
//!
//! Choices, following what terminals (xterm, tmux's own `input.c`, the DEC VT500 parser) do:
//! - Plain text is skipped with `memchr2(ESC, BEL)`: no per-byte state on the common path.
//! - An OSC ends at BEL or ST (`ESC \`). 8-bit C1 controls (0x9C, 0x9D) are *not* recognised:
//!   the stream is UTF-8, where those bytes are continuation bytes of ordinary characters.
//! - CAN (0x18) and SUB (0x1A) abort any sequence (OSC, DCS, passthrough); the aborted payload is
//!   dropped. An ESC inside an OSC that is not followed by `\` aborts it too, and starts a new
//!   escape (so `ESC ] 0;a ESC ] 0;b BEL` yields only `0;b`).
//! - Other C0 controls inside an OSC are ignored (not stored), as tmux and xterm do.
//! - A payload longer than its cap is dropped whole and reported as [`Event::Oversized`] with its
//!   first bytes, so callers can act on it (S8: an oversized `THINKTERM_AGENT` clears the value).
//!   The cap is [`MAX_OSC_PAYLOAD`]; a `THINKTERM_AGENT` user variable may grow to
//!   [`MAX_USER_VAR_PAYLOAD`] because S8 allows 4096 bytes *decoded*, which is more in base64.
//! - tmux passthrough (`ESC P tmux; … ESC \`, ESCs doubled inside) is unwrapped: `ESC ESC`
//!   gives one ESC to an inner scan, the single `ESC \` ends it. Like tmux, a lone ESC followed
//!   by anything else is kept as both bytes. Passthrough does not nest; other DCS strings are
//!   skipped up to their ST.
//! - Other strings (APC, PM, SOS) and CSI need no state: their bytes cannot contain ESC or BEL
//!   that matter, so they pass as plain text.

use memchr::{memchr2, memchr3};

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;
const CAN: u8 = 0x18;
const SUB: u8 = 0x1a;

/// Longest OSC payload kept (bytes between `ESC ]` and the terminator): S7.1 caps the whole
/// sequence at 4096 bytes, so nothing we read needs more.
pub const MAX_OSC_PAYLOAD: usize = 4096;

/// The payload prefix of the one user variable we read (S8).
pub const USER_VAR_PREFIX: &[u8] = b"1337;SetUserVar=THINKTERM_AGENT=";

/// Longest `THINKTERM_AGENT` payload kept: the prefix plus the base64 of 4096 decoded bytes (S8.1).
pub const MAX_USER_VAR_PAYLOAD: usize = USER_VAR_PREFIX.len() + 4096_usize.div_ceil(3) * 4;

/// How many leading bytes of a dropped, oversized payload [`Event::Oversized`] shows.
pub const OVERSIZED_HEAD: usize = 64;

const PASSTHROUGH_INTRO: &[u8] = b"tmux;";

/// How an OSC sequence ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Terminator {
    /// BEL (0x07).
    Bel,
    /// ST, `ESC \`.
    St,
}

impl Terminator {
    /// Bytes the terminator takes on the wire.
    pub fn len(self) -> usize {
        match self {
            Terminator::Bel => 1,
            Terminator::St => 2,
        }
    }

    /// Never empty; present for clippy's `len_without_is_empty`.
    pub fn is_empty(self) -> bool {
        false
    }
}

/// What the scanner found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// A complete OSC: the payload between `ESC ]` and the terminator.
    Osc {
        /// Payload bytes, e.g. `0;title` or `7501;state=idle`.
        payload: &'a [u8],
        /// How it ended.
        terminator: Terminator,
        /// Whether it came wrapped in tmux passthrough.
        passthrough: bool,
    },
    /// An OSC longer than its cap, dropped whole; `head` is its first bytes, `len` its length.
    Oversized {
        /// Up to [`OVERSIZED_HEAD`] leading payload bytes.
        head: &'a [u8],
        /// Full payload length seen (control bytes before the cap not counted).
        len: usize,
    },
    /// A BEL outside any sequence.
    Bell,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Ground,
    Esc,
    Osc,
    OscEsc,
    /// After `ESC P`: how many bytes of `tmux;` matched so far.
    DcsIntro(u8),
    DcsSkip,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pass {
    Off,
    On,
    OnEsc,
}

/// One pane's scanner. See the module docs for the exact behaviour.
#[derive(Debug)]
pub struct Scanner {
    buf: Vec<u8>,
    /// Length of the current payload, including bytes not stored after an overflow.
    len: usize,
    overflow: bool,
    state: State,
    pass: Pass,
}

impl Default for Scanner {
    fn default() -> Self {
        Self::new()
    }
}

impl Scanner {
    /// A scanner in the ground state, its buffer allocated once.
    pub fn new() -> Self {
        Scanner {
            buf: Vec::with_capacity(MAX_USER_VAR_PAYLOAD),
            len: 0,
            overflow: false,
            state: State::Ground,
            pass: Pass::Off,
        }
    }

    /// Whether it is outside every sequence (and every passthrough): until the next ESC, input
    /// can only be text or a lone BEL.
    pub fn is_idle(&self) -> bool {
        self.state == State::Ground && self.pass == Pass::Off
    }

    /// Forgets any half-read sequence (e.g. after tmux paused the pane and output was lost).
    pub fn reset(&mut self) {
        self.state = State::Ground;
        self.pass = Pass::Off;
        self.buf.clear();
        self.len = 0;
        self.overflow = false;
    }

    /// Scans the next chunk of output, calling `sink` for each event in order.
    pub fn feed(&mut self, mut input: &[u8], sink: &mut impl FnMut(Event<'_>)) {
        while !input.is_empty() {
            match self.pass {
                Pass::Off => {
                    let used = self.run(input, sink);
                    input = &input[used..];
                }
                Pass::On => match memchr3(ESC, CAN, SUB, input) {
                    None => {
                        self.run_all(input, sink);
                        input = &[];
                    }
                    Some(i) => {
                        self.run_all(&input[..i], sink);
                        if input[i] == ESC {
                            self.pass = Pass::OnEsc;
                        } else {
                            self.abort_passthrough();
                        }
                        input = &input[i + 1..];
                    }
                },
                Pass::OnEsc => {
                    let b = input[0];
                    input = &input[1..];
                    self.pass = Pass::On;
                    match b {
                        ESC => self.run_all(&[ESC], sink),
                        b'\\' => self.abort_passthrough(),
                        CAN | SUB => self.abort_passthrough(),
                        _ => self.run_all(&[ESC, b], sink),
                    }
                }
            }
        }
    }

    fn abort_passthrough(&mut self) {
        self.pass = Pass::Off;
        self.state = State::Ground;
    }

    /// Runs bytes that come from inside a passthrough (they never start another one).
    fn run_all(&mut self, mut input: &[u8], sink: &mut impl FnMut(Event<'_>)) {
        while !input.is_empty() {
            let used = self.run(input, sink);
            input = &input[used..];
        }
    }

    /// Consumes a prefix of `input`; returns how much. Stops early only when a passthrough
    /// starts, so that [`Scanner::feed`] switches to unwrapping.
    fn run(&mut self, input: &[u8], sink: &mut impl FnMut(Event<'_>)) -> usize {
        let mut i = 0;
        while i < input.len() {
            match self.state {
                State::Ground => match memchr2(ESC, BEL, &input[i..]) {
                    None => return input.len(),
                    Some(j) => {
                        i += j + 1;
                        if input[i - 1] == ESC {
                            self.state = State::Esc;
                        } else {
                            sink(Event::Bell);
                        }
                    }
                },
                State::Esc => {
                    let b = input[i];
                    i += 1;
                    self.state = match b {
                        b']' => {
                            self.buf.clear();
                            self.len = 0;
                            self.overflow = false;
                            State::Osc
                        }
                        b'P' => State::DcsIntro(0),
                        ESC => State::Esc,
                        BEL => {
                            sink(Event::Bell);
                            State::Ground
                        }
                        _ => State::Ground,
                    };
                }
                State::Osc => {
                    let rest = &input[i..];
                    let run = if self.overflow {
                        // Past its cap nothing is stored: only the end is looked for (and the
                        // length counts the other C0 controls too).
                        let end = memchr3(BEL, ESC, CAN, rest).unwrap_or(rest.len());
                        memchr::memchr(SUB, &rest[..end]).unwrap_or(end)
                    } else {
                        rest.iter().position(|&b| b < 0x20).unwrap_or(rest.len())
                    };
                    self.push(&rest[..run]);
                    i += run;
                    if run < rest.len() {
                        let b = rest[run];
                        i += 1;
                        match b {
                            BEL => self.finish(Terminator::Bel, sink),
                            ESC => self.state = State::OscEsc,
                            CAN | SUB => self.state = State::Ground,
                            _ => {} // other C0 inside an OSC: ignored
                        }
                    }
                }
                State::OscEsc => {
                    if input[i] == b'\\' {
                        i += 1;
                        self.finish(Terminator::St, sink);
                    } else {
                        // The OSC is aborted; this byte is read as following a fresh ESC.
                        self.state = State::Esc;
                    }
                }
                State::DcsIntro(n) => {
                    let b = input[i];
                    i += 1;
                    if b == PASSTHROUGH_INTRO[n as usize] && self.pass == Pass::Off {
                        if n as usize + 1 == PASSTHROUGH_INTRO.len() {
                            self.state = State::Ground;
                            self.pass = Pass::On;
                            return i;
                        }
                        self.state = State::DcsIntro(n + 1);
                    } else {
                        self.state = match b {
                            ESC => State::Esc,
                            CAN | SUB => State::Ground,
                            _ => State::DcsSkip,
                        };
                    }
                }
                State::DcsSkip => match memchr3(ESC, CAN, SUB, &input[i..]) {
                    None => return input.len(),
                    Some(j) => {
                        let b = input[i + j];
                        i += j + 1;
                        self.state = if b == ESC { State::Esc } else { State::Ground };
                    }
                },
            }
        }
        i
    }

    fn push(&mut self, bytes: &[u8]) {
        self.len += bytes.len();
        if self.overflow || bytes.is_empty() {
            return;
        }
        let room = MAX_OSC_PAYLOAD.saturating_sub(self.buf.len());
        if bytes.len() <= room {
            self.buf.extend_from_slice(bytes);
            return;
        }
        self.buf.extend_from_slice(&bytes[..room]);
        let rest = &bytes[room..];
        let cap = if self.buf.starts_with(USER_VAR_PREFIX) {
            MAX_USER_VAR_PAYLOAD
        } else {
            MAX_OSC_PAYLOAD
        };
        let room = cap - self.buf.len();
        if rest.len() <= room {
            self.buf.extend_from_slice(rest);
        } else {
            self.overflow = true;
        }
    }

    fn finish(&mut self, terminator: Terminator, sink: &mut impl FnMut(Event<'_>)) {
        self.state = State::Ground;
        if self.overflow {
            let head = &self.buf[..self.buf.len().min(OVERSIZED_HEAD)];
            sink(Event::Oversized {
                head,
                len: self.len,
            });
        } else {
            sink(Event::Osc {
                payload: &self.buf,
                terminator,
                passthrough: self.pass != Pass::Off,
            });
        }
    }
}

#[cfg(test)]
#[path = "scanner_tests.rs"]
mod tests;
