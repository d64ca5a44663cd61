//! Synchronized updates (DEC private mode 2026): a program that draws a frame between
//! `CSI ? 2026 h` and `CSI ? 2026 l` says that the screen in between is half drawn. A terminal
//! that knows the mode shows nothing of it until the frame ends; tmux 3.3a does not know it and
//! draws the bytes as they come, and so does a terminal model. A look at the pane in between can
//! see a frame whose bottom half is still the last one's: Pi's spinner line without the words
//! after it, the editor box not drawn yet, read as idle by the rules.
//!
//! Pi, Codex and OpenCode wrap every frame in one. Each is one `write` of the program, but tmux
//! reads a pane 4 KiB at a time and a busy machine can hand the daemon a frame in two reads, so
//! a look at a pane while one of its updates is open reads the last whole frame (from the
//! screen model, which keeps it: [`SyncUpdate::frame_until`]) or, when it must capture, waits
//! until the update ends (its bytes come as output, which asks for a look anyway):
//! [`SyncUpdate::held_until`]. Either for at most [`HOLD`], as terminals do, so a program that
//! never ends one is still seen. A capture waits at most [`HOLD`] however many frames follow
//! each other, each read ending in the next one: a program drawing without pause, its frames
//! cut by tmux's reads, is still captured.
//!
//! Per pane, pure, clock-injected: [`SyncUpdate::feed`] with the pane's bytes (as the program
//! wrote them), the two holds when a look is due.

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use memchr::memmem::FinderRev;

/// The longest a look waits for an update to end, counted from its start.
pub const HOLD: Duration = Duration::from_millis(500);

/// `CSI ? 2026`, then `h` (begin) or `l` (end); anything else after it (a `$p` query) is no
/// change.
const PREFIX: &[u8] = b"\x1b[?2026";

/// The searcher for [`PREFIX`], built once.
static FINDER: LazyLock<FinderRev<'static>> = LazyLock::new(|| FinderRev::new(PREFIX));

/// One pane's synchronized update.
#[derive(Clone, Debug, Default)]
pub struct SyncUpdate {
    /// When the open update began (as the daemon read it).
    since: Option<Instant>,
    /// Since when every read has ended inside an update (the first of the frames since).
    run_since: Option<Instant>,
    /// The last bytes of the previous feed, when they could begin a sequence cut by the read.
    tail: Vec<u8>,
}

impl SyncUpdate {
    /// The pane wrote `bytes` (read at `now`): the last begin or end in them decides. Returns
    /// where in `bytes` the update that is open after them began, when it began in them (a
    /// mark cut by the previous read counts as beginning at 0): the screen as it was there is
    /// the last whole frame.
    pub fn feed(&mut self, now: Instant, bytes: &[u8]) -> Option<usize> {
        // A mark cut by the last read comes before any in `bytes`.
        let mut crossed_begin = false;
        match self.across(bytes) {
            Some(false) => self.since = None,
            Some(true) => crossed_begin = self.since.is_none(),
            None => {}
        }
        let began = match last_mark(bytes) {
            None if crossed_begin => Some(0),
            Some(Mark { begin: true, .. }) => match last_end(bytes) {
                // Ended, and another began after the end: at the first begin after it.
                Some(end) => first_begin(&bytes[end..]).map(|b| end + b),
                // Open from before: a begin while one is open changes nothing, so the hold
                // is bounded from the first.
                None if self.since.is_some() => None,
                None if crossed_begin => Some(0),
                None => first_begin(bytes),
            },
            Some(Mark { begin: false, .. }) => {
                self.since = None;
                None
            }
            None => None,
        };
        if began.is_some() {
            self.since = Some(now);
        }
        if self.since.is_some() {
            self.run_since.get_or_insert(now);
        } else {
            self.run_since = None;
        }
        self.keep_tail(bytes);
        began
    }

    /// Whether an update is open (however long ago it began).
    pub fn is_open(&self) -> bool {
        self.since.is_some()
    }

    /// Until when a look at the pane reads the last whole frame (an update is open and began
    /// less than [`HOLD`] ago); `None`: the screen as it is.
    pub fn frame_until(&self, now: Instant) -> Option<Instant> {
        self.since.map(|s| s + HOLD).filter(|until| *until > now)
    }

    /// Until when a capture of the pane waits (every read for less than [`HOLD`] has ended
    /// inside an update); `None`: capture now.
    pub fn held_until(&self, now: Instant) -> Option<Instant> {
        self.run_since
            .map(|s| s + HOLD)
            .filter(|until| *until > now)
    }

    /// The pane's bytes were lost or its program changed: nothing is known to be open.
    pub fn reset(&mut self) {
        self.since = None;
        self.run_since = None;
        self.tail.clear();
    }

    /// A mark cut by the read: the last feed's tail joined with the head of `bytes`.
    fn across(&self, bytes: &[u8]) -> Option<bool> {
        if self.tail.is_empty() {
            return None;
        }
        let head = &bytes[..bytes.len().min(PREFIX.len())];
        let mut joined = Vec::with_capacity(self.tail.len() + head.len());
        joined.extend_from_slice(&self.tail);
        joined.extend_from_slice(head);
        // Only a mark that ends inside `bytes` is new (one wholly in the tail was seen).
        let end = last_mark_end(&joined)?;
        (end > self.tail.len()).then(|| joined[end - 1] == b'h')
    }

    /// Keeps the end of `bytes` from its last ESC on, if that could be the start of a mark.
    fn keep_tail(&mut self, bytes: &[u8]) {
        let from = bytes.len().saturating_sub(PREFIX.len());
        self.tail.clear();
        if let Some(i) = memchr::memrchr(0x1b, &bytes[from..]) {
            let rest = &bytes[from + i..];
            if PREFIX.starts_with(rest) {
                self.tail.extend_from_slice(rest);
            }
        }
    }
}

/// A begin or end mark found in some bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mark {
    /// A begin (`h`), else an end (`l`).
    begin: bool,
    /// Where it starts.
    at: usize,
}

/// The last begin or end mark in `bytes`.
fn last_mark(bytes: &[u8]) -> Option<Mark> {
    let mut upto = bytes.len();
    while let Some(at) = FINDER.rfind(&bytes[..upto]) {
        match bytes.get(at + PREFIX.len()) {
            Some(b'h') => return Some(Mark { begin: true, at }),
            Some(b'l') => return Some(Mark { begin: false, at }),
            _ => upto = at,
        }
    }
    None
}

/// Where the last end mark in `bytes` ends.
fn last_end(bytes: &[u8]) -> Option<usize> {
    let mut upto = bytes.len();
    while let Some(m) = last_mark(&bytes[..upto]) {
        if !m.begin {
            return Some(m.at + PREFIX.len() + 1);
        }
        upto = m.at;
    }
    None
}

/// Where the first begin mark in `bytes` starts.
fn first_begin(bytes: &[u8]) -> Option<usize> {
    memchr::memmem::find_iter(bytes, PREFIX).find(|at| bytes.get(at + PREFIX.len()) == Some(&b'h'))
}

/// Where the last complete mark in `bytes` ends.
fn last_mark_end(bytes: &[u8]) -> Option<usize> {
    last_mark(bytes).map(|m| m.at + PREFIX.len() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t0: Instant, n: u64) -> Instant {
        t0 + Duration::from_millis(n)
    }

    #[test]
    fn a_look_waits_for_the_update_to_end_or_the_hold() {
        let t0 = Instant::now();
        let mut s = SyncUpdate::default();
        assert_eq!(s.held_until(t0), None);
        s.feed(t0, b"\x1b[?2026h\x1b[H top half");
        assert_eq!(s.held_until(ms(t0, 10)), Some(ms(t0, 500)));
        // More of the frame, and a second begin: the hold still counts from the first.
        s.feed(ms(t0, 100), b"more\x1b[?2026h");
        assert_eq!(s.held_until(ms(t0, 100)), Some(ms(t0, 500)));
        assert_eq!(
            s.held_until(ms(t0, 500)),
            None,
            "a program that never ends one"
        );
        s.feed(ms(t0, 120), b"bottom half\x1b[?2026l");
        assert_eq!(s.held_until(ms(t0, 120)), None);
        // The next frame, whole in one read: nothing is held after it.
        s.feed(ms(t0, 200), b"\x1b[?2026hframe\x1b[?2026l");
        assert_eq!(s.held_until(ms(t0, 200)), None);
        // Bytes with no mark change nothing.
        s.feed(ms(t0, 300), b"\x1b[?2026hstart");
        s.feed(ms(t0, 310), b"plain text\x1b[31m");
        assert_eq!(s.held_until(ms(t0, 310)), Some(ms(t0, 800)));
        s.reset();
        assert_eq!(s.held_until(ms(t0, 310)), None);
    }

    #[test]
    fn feed_says_where_the_open_frame_began() {
        let t0 = Instant::now();
        let mut s = SyncUpdate::default();
        let frame = b"\x1b[?2026hA\x1b[?2026l";
        assert_eq!(s.feed(t0, frame), None, "a whole frame");
        // The end of one frame and the start of the next in one read.
        let mut two = b"\x1b[?2026hB".to_vec();
        assert_eq!(s.feed(t0, &two), Some(0));
        two = b"B\x1b[?2026l\x1b[?2026hC".to_vec();
        assert_eq!(s.feed(ms(t0, 400), &two), Some(9));
        assert_eq!(
            s.frame_until(ms(t0, 400)),
            Some(ms(t0, 900)),
            "the new frame's"
        );
        // A capture waits from the first of the frames that followed each other.
        assert_eq!(s.held_until(ms(t0, 400)), Some(ms(t0, 500)));
        assert_eq!(s.held_until(ms(t0, 500)), None);
        // More of it: still the same frame.
        assert_eq!(s.feed(ms(t0, 700), b"CC\x1b[?2026h"), None);
        assert!(s.is_open());
        assert_eq!(s.frame_until(ms(t0, 700)), Some(ms(t0, 900)));
        assert_eq!(s.feed(ms(t0, 800), b"C\x1b[?2026l"), None);
        assert!(!s.is_open());
        assert_eq!(s.held_until(ms(t0, 800)), None);
        assert_eq!(s.frame_until(ms(t0, 800)), None);
        assert_eq!(s.feed(ms(t0, 900), b"text \x1b[?2026hD"), Some(5));
    }

    #[test]
    fn a_query_of_the_mode_is_no_mark() {
        let t0 = Instant::now();
        let mut s = SyncUpdate::default();
        // Claude Code asks whether the terminal knows the mode (DECRQM).
        s.feed(t0, b"\x1b[?2026h\x1b[?2026$p");
        assert!(
            s.held_until(t0).is_some(),
            "the begin before the query counts"
        );
        s.feed(t0, b"\x1b[?2026l\x1b[?2026$p");
        assert_eq!(s.held_until(t0), None);
    }

    #[test]
    fn a_mark_cut_by_the_read_is_seen() {
        let t0 = Instant::now();
        for cut in 1..PREFIX.len() + 1 {
            let mut s = SyncUpdate::default();
            let mark = b"\x1b[?2026h";
            let mut first = b"frame before\x1b[?2026l".to_vec();
            first.extend_from_slice(&mark[..cut]);
            s.feed(t0, &first);
            assert_eq!(s.held_until(t0), None, "cut at {cut}: nothing open yet");
            s.feed(t0, &[&mark[cut..], b"half"].concat());
            assert!(s.held_until(t0).is_some(), "cut at {cut}");
            // And the end, cut the same way.
            let end = b"\x1b[?2026l";
            s.feed(t0, &end[..cut]);
            s.feed(t0, &end[cut..]);
            assert_eq!(s.held_until(t0), None, "end cut at {cut}");
        }
        // A tail that was a whole mark is not counted again with the next read.
        let mut s = SyncUpdate::default();
        s.feed(t0, b"x\x1b[?2026h");
        s.feed(t0, b"\x1b[?2026l");
        s.feed(t0, b"abc");
        assert_eq!(s.held_until(t0), None);
    }
}
