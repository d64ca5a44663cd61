//! What a pipe's reader keeps of a pane's bytes for the daemon.
//!
//! The reader takes everything the pipe holds at each read, however fast the pane writes: tmux
//! keeps whatever a pipe does not take in its own memory, without bound (a `yes` read at one
//! pipe-full a period grew the server by 17 MB a second). What goes to the daemon is bounded
//! instead, here: the bytes as they are while the pane writes at most [`RATE`] on average (a
//! [`BURST`] at once), and past that only the escape sequences the daemon reads, re-encoded
//! whole (titles, status reports, user variables, notifications, prompt marks, progress). The
//! text and drawing left out are counted ([`Keeper::skipped`]): the daemon looks at the screen
//! again instead.
//!
//! The keeper runs its own escape-sequence scanner over every byte, so a sequence that starts
//! before a cut and ends after it is kept whole. At the cut from bytes as they are to sequences
//! only, a CAN (0x18) is written: it ends any sequence the daemon's scanner had half-read, as a
//! terminal does, and what follows are whole sequences. Bytes as they are come back only where
//! the keeper's scanner is outside every sequence, so both scanners agree again. A BEL outside
//! sequences, which nothing acts on, is not kept.
//!
//! Pure: the clock is passed in.

use std::time::{Duration, Instant};

use crate::osc::scanner::{Event, Scanner, Terminator, MAX_USER_VAR_PAYLOAD, USER_VAR_PREFIX};

/// Bytes a second the daemon gets as they are, on average (as much as one read of 256 KiB every
/// 100 ms, the reader's pace before it read whole floods).
pub const RATE: u64 = 2_560_000;
/// Bytes the daemon can get as they are at once (a Gemini CLI start is 1.2 MB): also the most
/// kept for a daemon that is behind.
pub const BURST: usize = 1024 * 1024;
/// Most bytes of re-encoded sequences kept between two deliveries; later ones are left out.
pub const MAX_SEQUENCES: usize = 64 * 1024;
/// Room the rate must have made again before bytes are kept as they are after a cut.
const RESUME: usize = 64 * 1024;

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;
const CAN: u8 = 0x18;

/// One pipe's keeper.
#[derive(Debug)]
pub struct Keeper {
    scanner: Scanner,
    /// Bytes that may go as they are now.
    room: usize,
    refilled: Instant,
    /// Past a cut: only sequences are kept.
    cut: bool,
    /// Bytes left out since the last [`Keeper::delivered`].
    skipped: u64,
    /// Bytes of re-encoded sequences since the last delivery.
    sequences: usize,
}

impl Keeper {
    /// A keeper with a full burst of room.
    pub fn new(now: Instant) -> Keeper {
        Keeper {
            scanner: Scanner::new(),
            room: BURST,
            refilled: now,
            cut: false,
            skipped: 0,
            sequences: 0,
        }
    }

    /// Takes `chunk`, the next bytes read, appending what is kept to `out` (the bytes not yet
    /// delivered).
    pub fn take(&mut self, now: Instant, chunk: &[u8], out: &mut Vec<u8>) {
        self.refill(now);
        let mut rest = chunk;
        if !self.cut {
            let room = self.room.min(BURST.saturating_sub(out.len()));
            let n = rest.len().min(room);
            let (kept, after) = rest.split_at(n);
            self.scanner.feed(kept, &mut |_| {});
            out.extend_from_slice(kept);
            self.room -= n;
            rest = after;
            if rest.is_empty() {
                return;
            }
            self.cut = true;
            out.push(CAN);
        }
        self.skipped += rest.len() as u64;
        let (scanner, sequences) = (&mut self.scanner, &mut self.sequences);
        scanner.feed(rest, &mut |ev| {
            let before = out.len();
            encode(ev, out);
            let added = out.len() - before;
            if *sequences + added > MAX_SEQUENCES {
                out.truncate(before);
            } else {
                *sequences += added;
            }
        });
        if self.scanner.is_idle() && self.room >= RESUME && out.len() + RESUME <= BURST {
            self.cut = false;
        }
    }

    /// Bytes left out since the last delivery.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// What was kept went to the daemon.
    pub fn delivered(&mut self) {
        self.skipped = 0;
        self.sequences = 0;
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.refilled);
        let earned = (elapsed.as_micros() as u64).saturating_mul(RATE) / 1_000_000;
        if earned == 0 {
            return;
        }
        self.room = (self.room as u64 + earned).min(BURST as u64) as usize;
        // Only the time that earned whole bytes is spent.
        self.refilled += Duration::from_micros(earned.saturating_mul(1_000_000) / RATE);
        if self.room == BURST {
            self.refilled = now;
        }
    }
}

/// Appends `ev` as the bytes that make the daemon's scanner see it again.
fn encode(ev: Event<'_>, out: &mut Vec<u8>) {
    match ev {
        Event::Bell => {}
        Event::Osc {
            payload,
            terminator,
            passthrough,
        } => {
            let term: &[u8] = match terminator {
                Terminator::Bel => &[BEL],
                Terminator::St => b"\x1b\\",
            };
            if passthrough {
                // Inside passthrough every ESC is doubled (the payload holds none).
                out.extend_from_slice(b"\x1bPtmux;\x1b\x1b]");
                out.extend_from_slice(payload);
                match terminator {
                    Terminator::Bel => out.push(BEL),
                    Terminator::St => out.extend_from_slice(b"\x1b\x1b\\"),
                }
                out.extend_from_slice(b"\x1b\\");
            } else {
                out.extend_from_slice(&[ESC, b']']);
                out.extend_from_slice(payload);
                out.extend_from_slice(term);
            }
        }
        // An oversized THINKTERM_AGENT clears the value (S8): say it again, as long. Others
        // only log.
        Event::Oversized { head, .. } if head.starts_with(USER_VAR_PREFIX) => {
            out.extend_from_slice(&[ESC, b']']);
            out.extend_from_slice(USER_VAR_PREFIX);
            out.resize(
                out.len() + MAX_USER_VAR_PAYLOAD + 1 - USER_VAR_PREFIX.len(),
                b'A',
            );
            out.push(BEL);
        }
        Event::Oversized { .. } => {}
    }
}

#[cfg(test)]
#[path = "keep_tests.rs"]
mod tests;
