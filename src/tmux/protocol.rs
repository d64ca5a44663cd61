//! The control-mode line protocol: splitting the byte stream into lines, and decoding each line
//! into a [`Notification`] or, between `%begin` and its matching `%end`/`%error`, into the body
//! of a command reply. Pure: no I/O, fed in arbitrary chunks.

use memchr::memchr;

use super::escape::Escaped;
use crate::ids::{PaneId, SessionId, WindowId};

/// Longest line kept while waiting for its newline; longer lines are dropped whole (tmux's own
/// output lines are far shorter: it splits `%output` at its buffer size).
pub const MAX_LINE: usize = 4 * 1024 * 1024;

/// Splits a byte stream into lines (without the `\n`), carrying partial lines between chunks.
#[derive(Default, Debug)]
pub struct LineSplitter {
    partial: Vec<u8>,
    overflow: bool,
}

impl LineSplitter {
    /// Feeds a chunk; `on_line` is called for each complete line, in order.
    pub fn feed(&mut self, mut chunk: &[u8], mut on_line: impl FnMut(&[u8])) {
        while let Some(i) = memchr(b'\n', chunk) {
            if self.overflow {
                self.overflow = false;
                self.partial.clear();
            } else if self.partial.is_empty() {
                on_line(&chunk[..i]);
            } else {
                self.partial.extend_from_slice(&chunk[..i]);
                on_line(&self.partial);
                self.partial.clear();
            }
            chunk = &chunk[i + 1..];
        }
        if !self.overflow {
            if self.partial.len() + chunk.len() > MAX_LINE {
                self.overflow = true;
                self.partial = Vec::new();
            } else {
                self.partial.extend_from_slice(chunk);
            }
        }
    }
}

/// The reply to one command: the lines between `%begin` and `%end` (or `%error`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The command number tmux assigned.
    pub number: u64,
    /// Whether the command came from this client (flags bit 1); others are tmux's own.
    pub from_client: bool,
    /// `%end` (true) or `%error` (false).
    pub ok: bool,
    /// Body lines, as tmux wrote them (not escaped).
    pub body: Body,
}

/// The lines of a reply, kept as one text joined with `\n`: a captured screen arrives as the
/// text the rules read, with no allocation per line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Body {
    text: String,
    lines: usize,
}

impl Body {
    /// A body of these lines.
    pub fn from_lines<S: AsRef<str>>(lines: &[S]) -> Body {
        let mut b = Body::default();
        for l in lines {
            b.push(l.as_ref().as_bytes());
        }
        b
    }

    fn push(&mut self, line: &[u8]) {
        if self.lines > 0 {
            self.text.push('\n');
        }
        self.text.push_str(&String::from_utf8_lossy(line));
        self.lines += 1;
    }

    /// The lines.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        (self.lines > 0)
            .then(|| self.text.split('\n'))
            .into_iter()
            .flatten()
    }

    /// The lines, each its own string.
    pub fn to_lines(&self) -> Vec<String> {
        self.lines().map(str::to_string).collect()
    }

    /// The lines joined with `\n`.
    pub fn into_text(self) -> String {
        self.text
    }
}

/// One control-mode notification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notification {
    /// `%output %P DATA`: what the pane's program wrote.
    Output {
        /// The pane.
        pane: PaneId,
        /// The bytes, still escaped as tmux wrote them.
        data: Escaped,
    },
    /// `%extended-output %P AGE ... : DATA` (with `pause-after`).
    ExtendedOutput {
        /// The pane.
        pane: PaneId,
        /// Milliseconds the output waited in tmux.
        age_ms: u64,
        /// The bytes, still escaped as tmux wrote them.
        data: Escaped,
    },
    /// A command reply (complete block).
    Reply(Reply),
    /// `%window-add @W`.
    WindowAdd(WindowId),
    /// `%window-close @W`.
    WindowClose(WindowId),
    /// `%unlinked-window-add @W`.
    UnlinkedWindowAdd(WindowId),
    /// `%unlinked-window-close @W`.
    UnlinkedWindowClose(WindowId),
    /// `%window-renamed @W NAME`, or `%unlinked-window-renamed @W NAME` for a window of
    /// another session than the client's.
    WindowRenamed(WindowId, String),
    /// `%window-pane-changed @W %P`: the window's active pane changed.
    WindowPaneChanged(WindowId, PaneId),
    /// `%layout-change @W ...`: panes added, removed or resized.
    LayoutChange(WindowId),
    /// `%session-changed $S NAME`: this client now shows session S.
    SessionChanged(SessionId, String),
    /// `%session-renamed $S NAME`.
    SessionRenamed(SessionId, String),
    /// `%session-window-changed $S @W`: a session's current window changed.
    SessionWindowChanged(SessionId, WindowId),
    /// `%sessions-changed`: a session was created or destroyed.
    SessionsChanged,
    /// `%client-session-changed CLIENT $S NAME`: another client switched session.
    ClientSessionChanged(String),
    /// `%client-detached CLIENT`.
    ClientDetached(String),
    /// `%subscription-changed NAME $S @W IDX %P ... : VALUE`.
    SubscriptionChanged {
        /// Subscription name.
        name: String,
        /// Session.
        session: Option<SessionId>,
        /// Window, for window and pane subscriptions.
        window: Option<WindowId>,
        /// Pane, for pane subscriptions.
        pane: Option<PaneId>,
        /// The format's new value.
        value: String,
    },
    /// `%pane-mode-changed %P`.
    PaneModeChanged(PaneId),
    /// `%pause %P`: tmux stopped sending this pane's output (we fell behind).
    Pause(PaneId),
    /// `%continue %P`.
    Continue(PaneId),
    /// `%exit [REASON]`: the client is detaching.
    Exit(Option<String>),
    /// Any other `%` line (`%message`, `%paste-buffer-changed`, ...), kept for logging.
    Other(String),
}

#[derive(Debug)]
struct OpenBlock {
    time: String,
    number: u64,
    flags: String,
    body: Body,
}

/// Decodes lines into notifications, assembling command-reply blocks.
#[derive(Debug, Default)]
pub struct Decoder {
    block: Option<OpenBlock>,
}

/// One decoded line, borrowing what it can from the line.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// `%output %P DATA`, with DATA still escaped, borrowed from the line.
    Output(PaneId, &'a [u8]),
    /// Any other notification.
    Note(Notification),
    /// A line inside a reply block, a block's opening line, or not a notification.
    Nothing,
}

impl Decoder {
    /// Decodes one line (without its `\n`) without copying `%output` data: the common line
    /// costs one search for its pane id's end.
    pub fn decode_line<'a>(&mut self, line: &'a [u8]) -> Line<'a> {
        if self.block.is_none() {
            if let Some(rest) = line.strip_prefix(b"%output ") {
                let (pane, data) = split_word(rest);
                return match std::str::from_utf8(pane).ok().and_then(PaneId::parse) {
                    Some(pane) => Line::Output(pane, data),
                    None => Line::Nothing,
                };
            }
        }
        match self.decode_other(line) {
            Some(n) => Line::Note(n),
            None => Line::Nothing,
        }
    }

    /// Decodes one line (without its `\n`). Returns `None` for lines inside a block, for the
    /// block's opening line, and for lines that are not notifications.
    pub fn decode(&mut self, line: &[u8]) -> Option<Notification> {
        match self.decode_line(line) {
            Line::Output(pane, wire) => Some(Notification::Output {
                pane,
                data: Escaped::from_wire(wire),
            }),
            Line::Note(n) => Some(n),
            Line::Nothing => None,
        }
    }

    /// Every line but `%output` outside a block.
    fn decode_other(&mut self, line: &[u8]) -> Option<Notification> {
        if let Some(block) = &mut self.block {
            if let Some((ok, t, n, f)) = block_end(line) {
                if t == block.time && n == block.number && f == block.flags {
                    let block = self.block.take()?;
                    let from_client = block
                        .flags
                        .parse::<u32>()
                        .map(|f| f & 1 == 1)
                        .unwrap_or(false);
                    return Some(Notification::Reply(Reply {
                        number: block.number,
                        from_client,
                        ok,
                        body: block.body,
                    }));
                }
            }
            block.body.push(line);
            return None;
        }
        if let Some(rest) = line.strip_prefix(b"%extended-output ") {
            let (pane, rest) = split_word(rest);
            let pane = PaneId::parse(std::str::from_utf8(pane).ok()?)?;
            let (age, rest) = split_word(rest);
            let age_ms = std::str::from_utf8(age).ok()?.parse().ok()?;
            // Arguments end at a lone ':' word.
            let colon = find_colon_word(rest)?;
            return Some(Notification::ExtendedOutput {
                pane,
                age_ms,
                data: Escaped::from_wire(&rest[colon..]),
            });
        }
        let text = String::from_utf8_lossy(line);
        decode_text(&text, &mut self.block)
    }
}

fn decode_text(text: &str, block: &mut Option<OpenBlock>) -> Option<Notification> {
    let mut words = text.splitn(2, ' ');
    let head = words.next()?;
    let rest = words.next().unwrap_or("");
    let mut args = rest.split(' ');
    let mut arg = || args.next().unwrap_or("");
    let n = match head {
        "%begin" => {
            let (time, number, flags) = (arg().to_string(), arg(), arg().to_string());
            let number = number.parse().ok()?;
            *block = Some(OpenBlock {
                time,
                number,
                flags,
                body: Body::default(),
            });
            return None;
        }
        "%window-add" => Notification::WindowAdd(WindowId::parse(arg())?),
        "%window-close" => Notification::WindowClose(WindowId::parse(arg())?),
        "%unlinked-window-add" => Notification::UnlinkedWindowAdd(WindowId::parse(arg())?),
        "%unlinked-window-close" => Notification::UnlinkedWindowClose(WindowId::parse(arg())?),
        "%window-renamed" | "%unlinked-window-renamed" => {
            let w = WindowId::parse(arg())?;
            Notification::WindowRenamed(w, after_words(rest, 1).to_string())
        }
        "%window-pane-changed" => {
            Notification::WindowPaneChanged(WindowId::parse(arg())?, PaneId::parse(arg())?)
        }
        "%layout-change" => Notification::LayoutChange(WindowId::parse(arg())?),
        "%session-changed" => {
            let s = SessionId::parse(arg())?;
            Notification::SessionChanged(s, after_words(rest, 1).to_string())
        }
        "%session-renamed" => {
            let s = SessionId::parse(arg())?;
            Notification::SessionRenamed(s, after_words(rest, 1).to_string())
        }
        "%session-window-changed" => {
            Notification::SessionWindowChanged(SessionId::parse(arg())?, WindowId::parse(arg())?)
        }
        "%sessions-changed" => Notification::SessionsChanged,
        "%client-session-changed" => Notification::ClientSessionChanged(arg().to_string()),
        "%client-detached" => Notification::ClientDetached(arg().to_string()),
        "%subscription-changed" => return subscription(rest),
        "%pane-mode-changed" => Notification::PaneModeChanged(PaneId::parse(arg())?),
        "%pause" => Notification::Pause(PaneId::parse(arg())?),
        "%continue" => Notification::Continue(PaneId::parse(arg())?),
        "%exit" => Notification::Exit((!rest.is_empty()).then(|| rest.to_string())),
        h if h.starts_with('%') => Notification::Other(text.to_string()),
        _ => return None,
    };
    Some(n)
}

/// `NAME $S @W IDX %P ... : VALUE`; `-` stands for an absent id.
fn subscription(rest: &str) -> Option<Notification> {
    let (args, value) = match rest.find(" : ") {
        Some(i) => (&rest[..i], &rest[i + 3..]),
        None => (rest.strip_suffix(" :")?, ""),
    };
    let mut it = args.split(' ');
    let name = it.next()?.to_string();
    let session = it.next().and_then(SessionId::parse);
    let window = it.next().and_then(WindowId::parse);
    let _index = it.next();
    let pane = it.next().and_then(PaneId::parse);
    Some(Notification::SubscriptionChanged {
        name,
        session,
        window,
        pane,
        value: value.to_string(),
    })
}

fn block_end(line: &[u8]) -> Option<(bool, &str, u64, &str)> {
    // Most lines of a reply are its body (a captured screen): one byte tells them apart.
    if line.first() != Some(&b'%') {
        return None;
    }
    let text = std::str::from_utf8(line).ok()?;
    let (ok, rest) = if let Some(r) = text.strip_prefix("%end ") {
        (true, r)
    } else {
        (false, text.strip_prefix("%error ")?)
    };
    let mut it = rest.split(' ');
    let t = it.next()?;
    let n = it.next()?.parse().ok()?;
    let f = it.next()?;
    if it.next().is_some() {
        return None;
    }
    Some((ok, t, n, f))
}

fn split_word(s: &[u8]) -> (&[u8], &[u8]) {
    match memchr(b' ', s) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, &[]),
    }
}

fn find_colon_word(s: &[u8]) -> Option<usize> {
    if let Some(r) = s.strip_prefix(b": ") {
        return Some(s.len() - r.len());
    }
    let i = memchr::memmem::find(s, b" : ")?;
    Some(i + 3)
}

fn after_words(s: &str, n: usize) -> &str {
    let mut rest = s;
    for _ in 0..n {
        rest = rest.split_once(' ').map(|(_, r)| r).unwrap_or("");
    }
    rest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(input: &[u8]) -> Vec<Notification> {
        let mut splitter = LineSplitter::default();
        let mut dec = Decoder::default();
        let mut out = Vec::new();
        splitter.feed(input, |l| out.extend(dec.decode(l)));
        out
    }

    const SAMPLE: &[u8] = b"%begin 1796158992 269 0\n%end 1796158992 269 0\n\
%session-changed $0 my session\n\
%output %4 \\033]7501;state=working\\033\\134 caf\xc3\xa9 \xff\n\
%begin 1796158992 274 1\nline one\n%end 1796158992 999 1\n%end 1 274 1\n\n%end 1796158992 274 1\n\
%begin 1796158992 275 1\nparse error\n%error 1796158992 275 1\n\
%subscription-changed t $0 @4 1 %4 : vm : x\n\
%subscription-changed c $0 @4 1 %4 :\n\
%window-add @4\n%window-close @4\n%unlinked-window-close @3\n%unlinked-window-add @3\n\
%window-renamed @4 my window\n%unlinked-window-renamed @3 other\n%window-pane-changed @4 %9\n%layout-change @4 b25f,80x24,0,0,2 b25f,80x24,0,0,2 *\n\
%session-window-changed $0 @4\n%sessions-changed\n%session-renamed $1 new name\n\
%pane-mode-changed %4\n%pause %4\n%continue %4\n\
%extended-output %4 120 : hi\\012\n%client-session-changed /dev/pts/3 $1 two\n%client-detached /dev/pts/3\n\
%message hello\n%exit\n%exit server exited\n";

    fn expected() -> Vec<Notification> {
        use Notification::*;
        vec![
            Reply(super::Reply {
                number: 269,
                from_client: false,
                ok: true,
                body: Body::default(),
            }),
            SessionChanged(SessionId(0), "my session".into()),
            Output {
                pane: PaneId(4),
                data: Escaped::from_raw(b"\x1b]7501;state=working\x1b\\ caf\xc3\xa9 \xff"),
            },
            Reply(super::Reply {
                number: 274,
                from_client: true,
                ok: true,
                body: Body::from_lines(&["line one", "%end 1796158992 999 1", "%end 1 274 1", ""]),
            }),
            Reply(super::Reply {
                number: 275,
                from_client: true,
                ok: false,
                body: Body::from_lines(&["parse error"]),
            }),
            SubscriptionChanged {
                name: "t".into(),
                session: Some(SessionId(0)),
                window: Some(WindowId(4)),
                pane: Some(PaneId(4)),
                value: "vm : x".into(),
            },
            SubscriptionChanged {
                name: "c".into(),
                session: Some(SessionId(0)),
                window: Some(WindowId(4)),
                pane: Some(PaneId(4)),
                value: "".into(),
            },
            WindowAdd(WindowId(4)),
            WindowClose(WindowId(4)),
            UnlinkedWindowClose(WindowId(3)),
            UnlinkedWindowAdd(WindowId(3)),
            WindowRenamed(WindowId(4), "my window".into()),
            WindowRenamed(WindowId(3), "other".into()),
            WindowPaneChanged(WindowId(4), PaneId(9)),
            LayoutChange(WindowId(4)),
            SessionWindowChanged(SessionId(0), WindowId(4)),
            SessionsChanged,
            SessionRenamed(SessionId(1), "new name".into()),
            PaneModeChanged(PaneId(4)),
            Pause(PaneId(4)),
            Continue(PaneId(4)),
            ExtendedOutput {
                pane: PaneId(4),
                age_ms: 120,
                data: Escaped::from_raw(b"hi\n"),
            },
            ClientSessionChanged("/dev/pts/3".into()),
            ClientDetached("/dev/pts/3".into()),
            Other("%message hello".into()),
            Exit(None),
            Exit(Some("server exited".into())),
        ]
    }

    #[test]
    fn decodes_every_notification_and_matches_block_numbers_exactly() {
        assert_eq!(decode_all(SAMPLE), expected());
    }

    #[test]
    fn same_result_at_every_split_point() {
        for cut in 0..=SAMPLE.len() {
            let mut splitter = LineSplitter::default();
            let mut dec = Decoder::default();
            let mut out = Vec::new();
            splitter.feed(&SAMPLE[..cut], |l| out.extend(dec.decode(l)));
            splitter.feed(&SAMPLE[cut..], |l| out.extend(dec.decode(l)));
            assert_eq!(out, expected(), "split at {cut}");
        }
    }

    #[test]
    fn byte_by_byte_feeding_gives_the_same_result() {
        let mut splitter = LineSplitter::default();
        let mut dec = Decoder::default();
        let mut out = Vec::new();
        for b in SAMPLE {
            splitter.feed(std::slice::from_ref(b), |l| out.extend(dec.decode(l)));
        }
        assert_eq!(out, expected());
    }

    #[test]
    fn decode_line_borrows_output_and_agrees_with_decode() {
        let mut splitter = LineSplitter::default();
        let (mut fast, mut slow) = (Decoder::default(), Decoder::default());
        let mut n = 0;
        splitter.feed(SAMPLE, |l| {
            let owned = slow.decode(l);
            match fast.decode_line(l) {
                Line::Output(pane, wire) => {
                    n += 1;
                    assert_eq!(
                        owned,
                        Some(Notification::Output {
                            pane,
                            data: Escaped::from_wire(wire)
                        })
                    );
                }
                Line::Note(note) => assert_eq!(owned, Some(note)),
                Line::Nothing => assert_eq!(owned, None),
            }
        });
        assert_eq!(n, 1);
        // Inside a reply block, an `%output` line is body text, not output.
        let mut d = Decoder::default();
        assert_eq!(d.decode_line(b"%begin 1 2 1"), Line::Nothing);
        assert_eq!(d.decode_line(b"%output %1 x"), Line::Nothing);
        assert!(
            matches!(d.decode_line(b"%end 1 2 1"), Line::Note(Notification::Reply(r)) if r.body.to_lines() == ["%output %1 x"])
        );
    }

    #[test]
    fn a_body_keeps_empty_lines_and_tells_none_from_one_empty_line() {
        assert_eq!(Body::default().lines().count(), 0);
        assert_eq!(Body::from_lines(&[""]).to_lines(), [""]);
        let b = Body::from_lines(&["a", "", "b"]);
        assert_eq!(b.to_lines(), ["a", "", "b"]);
        assert_eq!(b.into_text(), "a\n\nb");
    }

    #[test]
    fn garbage_lines_are_ignored() {
        assert!(decode_all(b"not a notification\n%output bogus data\n%window-add x\n").is_empty());
    }
}
