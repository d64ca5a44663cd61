//! A text-only model of a terminal screen, as tmux keeps a pane's: fed the bytes a program
//! writes, it holds each visible row's characters and wrap flag, and gives the screen's text as
//! `capture-pane -p -J` shows it.
//!
//! Why not a full emulator (vt100, before): a look at an agent's screen needs its text, and
//! building the text of all 40 rows after each write was a quarter of the daemon's CPU at the
//! scale load (issue 18), while a write of an agent changes 1.3 rows on average (the paced
//! recordings). This model keeps each row's text until the row changes, moves rows with their
//! text when the screen scrolls, and keeps no colours or attributes.
//!
//! It does with each sequence ([`dispatch`]) what tmux 3.3a does ([`term`]), on rows cut as tmux's
//! grid cuts them ([`grid`]); `vte` parses the bytes. Pure.

mod dispatch;
mod grid;
mod term;

/// One screen's text model.
pub struct TextScreen {
    parser: vte::Parser,
    term: term::Term,
    /// The start of a UTF-8 character that a write cut: held until the write that ends it.
    held: Vec<u8>,
}

impl std::fmt::Debug for TextScreen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextScreen").finish_non_exhaustive()
    }
}

impl TextScreen {
    /// An empty screen of this size (at least one cell).
    pub fn new(rows: u16, cols: u16) -> Self {
        TextScreen {
            parser: vte::Parser::new(),
            term: term::Term::new(rows, cols),
            held: Vec::new(),
        }
    }

    /// The program wrote these bytes (a sequence or a character may end in a later call).
    ///
    /// A character cut between two writes is handed to the parser whole: vte 0.15 completes a
    /// cut character itself, but then skips the valid characters that follow it up to the next
    /// incomplete one (it drops the "e" of "\u{301}e" when the write was cut inside U+0301).
    pub fn process(&mut self, bytes: &[u8]) {
        let mut bytes = bytes;
        if !self.held.is_empty() {
            let want = utf8_len(self.held[0]);
            let take = bytes
                .iter()
                .take(want - self.held.len())
                .take_while(|b| is_continuation(**b))
                .count();
            self.held.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.held.len() < want && bytes.is_empty() {
                return;
            }
            let held = std::mem::take(&mut self.held);
            self.parser.advance(&mut self.term, &held);
        }
        let cut = cut_character(bytes);
        self.parser.advance(&mut self.term, &bytes[..cut]);
        self.held.extend_from_slice(&bytes[cut..]);
    }

    /// The screen's text: each line as `capture-pane -J` joins wrapped rows, trailing spaces
    /// and trailing empty lines dropped. Reads again only the rows that changed.
    pub fn text(&mut self) -> String {
        self.term.grid.text()
    }

    /// The screen's text with every row read again, as a check on [`TextScreen::text`] (for
    /// tests and fuzzing).
    #[doc(hidden)]
    pub fn text_uncached(&mut self) -> String {
        self.term.grid.text_uncached()
    }

    /// The cursor: column (the width while a wrap is pending) and row.
    #[cfg(test)]
    pub fn cursor(&self) -> (u16, u16) {
        self.term.cursor()
    }
}

/// How many bytes a UTF-8 character that starts with `lead` has (1 for a byte that starts none).
fn utf8_len(lead: u8) -> usize {
    match lead {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    }
}

fn is_continuation(b: u8) -> bool {
    (0x80..0xc0).contains(&b)
}

/// Where the character that `bytes` end inside of starts: `bytes.len()` when they end whole.
fn cut_character(bytes: &[u8]) -> usize {
    let n = bytes.len();
    for back in 1..=3.min(n) {
        let b = bytes[n - back];
        if is_continuation(b) {
            continue;
        }
        return if utf8_len(b) > back { n - back } else { n };
    }
    n
}

#[cfg(test)]
mod tests;
