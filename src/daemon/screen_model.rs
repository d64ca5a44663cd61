//! A terminal model of an agent pane's screen, fed by the bytes its pipe delivers, so that most
//! looks at the screen cost tmux nothing (issue 18: captures were about half of what the sidecar
//! made the tmux server do).
//!
//! The model is trusted only as far as tmux has confirmed it. It starts unsynced (its pane
//! wrote before it existed); the first capture seeds it with the captured screen and the cursor
//! state tmux reported beside it; a later capture that shows the same screen as the model
//! verifies it; only a verified model serves looks, and only until its check is older than the
//! check interval: then the pane is captured again, and a capture that differs seeds it anew
//! and withdraws the trust. Each capture in a row that agrees with the model doubles the
//! interval, up to [`MAX_STRETCH`] times the configured one (a model tmux keeps confirming is
//! checked less often; the first capture that differs brings it back). Bytes that never
//! reached the model (a flood's text left out, a read through a control client) make it
//! unsynced; so does a new size (tmux reflows, the model does not). The pipe and the capture's
//! reply come on two channels, so a seed can be a few bytes early or late: the check that must
//! follow it before any look is served catches that.
//!
//! Screens are compared as the rules read them ([`screen_lines`]: trailing blanks dropped).
//! Pure: every method takes `now`.

use std::time::{Duration, Instant};

use crate::rules::region::screen_lines;
use crate::vt::TextScreen;

/// How far captures that keep agreeing stretch the check interval: at most this many times the
/// configured one (2 s: 4 s after the second capture in a row that agrees, 8 s after the third,
/// 32 s from the fifth). On the 50-pane load, checks every 2 s were about a tenth of the
/// daemon's own CPU, and in 7 minutes of five agents 944 of the 946 checks after the first seeds
/// found the model right; each check costs tmux a turn of its loop (about 0.3 ms there) and the
/// daemon a capture to read, so a model tmux keeps confirming is left to serve for longer.
pub const MAX_STRETCH: u32 = 16;

/// What tmux reports of a pane's cursor beside a capture (`#{cursor_x} #{cursor_y}
/// #{alternate_on} #{scroll_region_upper} #{scroll_region_lower}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CursorState {
    /// Column, from 0 (tmux reports the width itself while a wrap is pending).
    pub x: u16,
    /// Row, from 0.
    pub y: u16,
    /// The program draws on the alternate screen.
    pub alternate: bool,
    /// The scroll region's first and last rows.
    pub region: (u16, u16),
}

impl CursorState {
    /// The format to ask tmux for, as `display-message -p` takes it.
    pub const FORMAT: &'static str = "#{cursor_x} #{cursor_y} #{alternate_on} \
                                      #{scroll_region_upper} #{scroll_region_lower}";

    /// Parses tmux's answer to [`CursorState::FORMAT`]; `None` for anything else.
    pub fn parse(s: &str) -> Option<CursorState> {
        let mut it = s.split_whitespace().map(str::parse::<u16>);
        let mut next = || it.next()?.ok();
        let (x, y, alt, top, bottom) = (next()?, next()?, next()?, next()?, next()?);
        Some(CursorState {
            x,
            y,
            alternate: alt == 1,
            region: (top, bottom),
        })
    }
}

/// How far the model is trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trust {
    /// It missed bytes, or never had a screen to start from.
    Unsynced,
    /// Set from a capture; the next capture must show the same screen before it serves.
    Seeded,
    /// A capture showed the screen it holds, at this instant; `agreed` captures in a row have
    /// (since it was last seeded).
    Verified { at: Instant, agreed: u32 },
}

/// What a capture did to the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checked {
    /// The capture showed the model's screen: it is verified.
    Matched,
    /// It differed (or the model was unsynced): the model now holds the capture.
    Seeded,
    /// It differed and tmux's cursor state was not read: the model waits for a capture that
    /// reads it.
    Unsynced,
}

/// Counts of what the model did, for `explain` and the benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModelCounts {
    /// Looks served from the model.
    pub served: u64,
    /// Captures that showed the model's screen.
    pub matched: u64,
    /// Captures that seeded it.
    pub seeded: u64,
}

/// One pane's terminal model.
pub struct ScreenModel {
    screen: TextScreen,
    rows: u16,
    cols: u16,
    trust: Trust,
    counts: ModelCounts,
    /// The screen as the synchronized update still open began: the last whole frame.
    frame: Option<String>,
}

impl std::fmt::Debug for ScreenModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScreenModel")
            .field("size", &(self.rows, self.cols))
            .field("trust", &self.trust)
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}

impl ScreenModel {
    /// An unsynced model of a pane of this size.
    pub fn new(rows: u16, cols: u16) -> Self {
        ScreenModel {
            screen: TextScreen::new(rows, cols),
            rows,
            cols,
            trust: Trust::Unsynced,
            counts: ModelCounts::default(),
            frame: None,
        }
    }

    /// Its size, rows and columns.
    #[cfg(test)]
    pub fn size(&self) -> (u16, u16) {
        (self.rows, self.cols)
    }

    /// How far it is trusted.
    #[cfg(test)]
    pub fn trust(&self) -> Trust {
        self.trust
    }

    /// What it did so far.
    #[cfg(test)]
    pub fn counts(&self) -> ModelCounts {
        self.counts
    }

    /// Its trust and counts, as `explain --json` shows them.
    pub fn explain(&self) -> serde_json::Value {
        let (trust, agreed) = match self.trust {
            Trust::Unsynced => ("unsynced", 0),
            Trust::Seeded => ("seeded", 0),
            Trust::Verified { agreed, .. } => ("verified", agreed),
        };
        let c = self.counts;
        serde_json::json!({
            "trust": trust,
            "agreed_in_a_row": agreed,
            "served": c.served,
            "matched": c.matched,
            "seeded": c.seeded,
        })
    }

    /// The pane wrote these bytes. `frame_began`: where in them a synchronized update began
    /// that is still open after them (the screen there is the last whole frame, kept for looks
    /// until the update ends); `open`: whether one is open after them.
    pub fn feed(&mut self, bytes: &[u8], frame_began: Option<usize>, open: bool) {
        match frame_began.filter(|at| *at <= bytes.len()) {
            Some(at) => {
                self.screen.process(&bytes[..at]);
                self.frame = Some(self.text());
                self.screen.process(&bytes[at..]);
            }
            None => self.screen.process(bytes),
        }
        if !open {
            self.frame = None;
        }
    }

    /// Bytes of the pane never reached the model.
    pub fn lost(&mut self) {
        self.trust = Trust::Unsynced;
    }

    /// The pane now has this size: tmux reflowed its screen, the model cannot follow.
    pub fn resize(&mut self, rows: u16, cols: u16) {
        if (rows, cols) != (self.rows, self.cols) {
            *self = ScreenModel {
                counts: self.counts,
                ..ScreenModel::new(rows, cols)
            };
        }
    }

    /// Whether a look at `now` may be served from the model: verified less than its check
    /// interval ago ([`ScreenModel::check_due`]).
    pub fn serves(&self, now: Instant, every: Duration) -> bool {
        self.check_due(every).is_some_and(|due| now < due)
    }

    /// When the verified model must be checked against a capture again: `every` after the
    /// capture that verified it, doubled for each earlier capture in a row that agreed, up to
    /// [`MAX_STRETCH`] times `every`.
    pub fn check_due(&self, every: Duration) -> Option<Instant> {
        match self.trust {
            Trust::Verified { at, agreed } => Some(at + every * stretch(agreed)),
            _ => None,
        }
    }

    /// Whether a capture must read the cursor state too (the model may need a seed).
    pub fn wants_cursor(&self) -> bool {
        !matches!(self.trust, Trust::Verified { .. })
    }

    /// A look served from the model: its screen as a capture shows it, lines trimmed; with
    /// `framed`, the last whole frame when the program is drawing the next one.
    pub fn serve(&mut self, framed: bool) -> String {
        self.counts.served += 1;
        match &self.frame {
            Some(f) if framed => f.clone(),
            _ => self.text(),
        }
    }

    /// Its screen: each line as `capture-pane -J` joins wrapped rows, trailing blanks dropped
    /// (as the rules read a screen). Only the rows that changed since the last call are read.
    pub fn text(&mut self) -> String {
        self.screen.text()
    }

    /// A capture of the pane (`capture-pane -p -J`) came back, with the cursor state read
    /// beside it when [`ScreenModel::wants_cursor`] asked for it.
    pub fn check(&mut self, now: Instant, screen: &str, cursor: Option<CursorState>) -> Checked {
        if self.trust != Trust::Unsynced && screen_lines(&self.text()) == screen_lines(screen) {
            self.counts.matched += 1;
            let agreed = match self.trust {
                Trust::Verified { agreed, .. } => agreed.saturating_add(1),
                _ => 1,
            };
            self.trust = Trust::Verified { at: now, agreed };
            return Checked::Matched;
        }
        let Some(cursor) = cursor else {
            self.trust = Trust::Unsynced;
            return Checked::Unsynced;
        };
        self.seed(screen, cursor);
        self.counts.seeded += 1;
        self.trust = Trust::Seeded;
        Checked::Seeded
    }

    /// Makes the model hold `screen` with tmux's cursor state: a fresh terminal that writes
    /// each captured line (a joined line wraps again at the same width), then takes the scroll
    /// region and the cursor position.
    fn seed(&mut self, screen: &str, cursor: CursorState) {
        let mut model = TextScreen::new(self.rows, self.cols);
        let mut bytes = Vec::with_capacity(screen.len() + 64);
        if cursor.alternate {
            bytes.extend_from_slice(b"\x1b[?1049h");
        }
        for (i, line) in screen.split('\n').take(usize::from(self.rows)).enumerate() {
            if i > 0 {
                bytes.extend_from_slice(b"\r\n");
            }
            bytes.extend_from_slice(line.as_bytes());
        }
        let (top, bottom) = cursor.region;
        if top < bottom && (top, bottom) != (0, self.rows.saturating_sub(1)) {
            bytes.extend_from_slice(format!("\x1b[{};{}r", top + 1, bottom + 1).as_bytes());
        }
        let x = cursor.x.min(self.cols.saturating_sub(1));
        bytes.extend_from_slice(format!("\x1b[{};{}H", cursor.y + 1, x + 1).as_bytes());
        model.process(&bytes);
        self.screen = model;
    }
}

/// The factor of the check interval after `agreed` captures in a row agreed: 1, 2, then
/// [`MAX_STRETCH`].
fn stretch(agreed: u32) -> u32 {
    1u32.checked_shl(agreed.saturating_sub(1))
        .unwrap_or(u32::MAX)
        .min(MAX_STRETCH)
}

#[cfg(test)]
#[path = "screen_model_tests.rs"]
mod tests;
