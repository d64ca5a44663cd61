//! Terminal notifications (issue 15): the escape sequence that asks the person's terminal
//! emulator to show a desktop notification, for a sidecar on a server with no desktop of its
//! own. Pure: which protocol a terminal gets, and the exact bytes.
//!
//! Three protocols:
//! - OSC 777 (`ESC ] 777 ; notify ; TITLE ; BODY BEL`): foot, Ghostty, WezTerm, kitty ≥ 0.24,
//!   Konsole, urxvt (with its `notify` extension), Windows Terminal;
//! - OSC 9 (`ESC ] 9 ; TEXT BEL`): iTerm2, Ghostty, WezTerm;
//! - OSC 99 (kitty's protocol: `ESC ] 99 ; i=ID:d=0:e=1:p=title ; BASE64 ESC \`, then the
//!   body as the closing chunk `d=1:p=body`): kitty, foot.
//!
//! `auto` picks from what is known of the client's terminal ([`TerminalFacts`]): tmux's
//! `client_termname` (its `TERM`) and `client_termtype` (the terminal's own answer to tmux's
//! version query), and a few variables of the tmux client process's environment that terminals
//! set and ssh forwards (`LC_TERMINAL` is sent by OpenSSH's default `SendEnv LC_*`). The table
//! is [`auto_protocol`]; a terminal it does not know gets OSC 777, which a terminal without it
//! ignores as an unknown OSC.
//!
//! A client that runs inside another tmux (its environment has `TMUX`, or its `TERM` is
//! `tmux…`) gets the sequence wrapped in tmux's passthrough (`ESC P tmux ; … ESC \`, every ESC
//! inside doubled); the outer tmux forwards it when its `allow-passthrough` is on.
//!
//! Text is made safe for a terminal before it is framed: control characters (C0, DEL, C1),
//! line breaks and runs of spaces fold to one space, so no byte of a pane's report can end the
//! sequence early or start another; OSC 777's title loses its `;` (the field separator).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::notification::{cut, one_line};

/// Longest title, in characters.
pub const TITLE_MAX_CHARS: usize = 80;
/// Longest body, in characters.
pub const BODY_MAX_CHARS: usize = 200;

/// A terminal notification protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// `OSC 777 ; notify ; title ; body`.
    Osc777,
    /// `OSC 9 ; text`.
    Osc9,
    /// kitty's `OSC 99`.
    Osc99,
}

impl Protocol {
    /// The config word.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Osc777 => "osc777",
            Protocol::Osc9 => "osc9",
            Protocol::Osc99 => "osc99",
        }
    }
}

/// The `terminal_notifications` setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// No terminal notifications (the default).
    Off,
    /// The protocol from what is known of the client's terminal.
    Auto,
    /// Always this protocol.
    Fixed(Protocol),
}

impl Setting {
    /// The words the config accepts.
    pub const WORDS: &'static [&'static str] = &["off", "auto", "osc777", "osc9", "osc99"];

    /// Parses a config word.
    pub fn parse(s: &str) -> Option<Setting> {
        Some(match s {
            "off" => Setting::Off,
            "auto" => Setting::Auto,
            "osc777" => Setting::Fixed(Protocol::Osc777),
            "osc9" => Setting::Fixed(Protocol::Osc9),
            "osc99" => Setting::Fixed(Protocol::Osc99),
            _ => return None,
        })
    }
}

/// What is known of a client's terminal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TerminalFacts {
    /// `client_termname` (the client's `TERM`).
    pub termname: String,
    /// `client_termtype` (what the terminal answered to tmux's version query; may be empty).
    pub termtype: String,
    /// The tmux client process's environment, as far as [`ENV_KEYS`] go.
    pub env: Vec<(String, String)>,
}

/// The environment variables [`auto_protocol`] looks at.
pub const ENV_KEYS: &[&str] = &[
    "TMUX",
    "TERM_PROGRAM",
    "LC_TERMINAL",
    "KITTY_WINDOW_ID",
    "WEZTERM_PANE",
    "GHOSTTY_RESOURCES_DIR",
    "ITERM_SESSION_ID",
    "KONSOLE_VERSION",
    "WT_SESSION",
];

impl TerminalFacts {
    fn var(&self, key: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Keeps the [`ENV_KEYS`] of a `/proc/PID/environ` image (NUL-separated `KEY=value`).
    pub fn env_from_environ(image: &[u8]) -> Vec<(String, String)> {
        image
            .split(|b| *b == 0)
            .filter_map(|entry| {
                let entry = std::str::from_utf8(entry).ok()?;
                let (k, v) = entry.split_once('=')?;
                ENV_KEYS
                    .contains(&k)
                    .then(|| (k.to_string(), v.to_string()))
            })
            .collect()
    }

    /// Whether the client runs inside another tmux.
    pub fn nested(&self) -> bool {
        self.var("TMUX").is_some_and(|v| !v.is_empty()) || self.termname.starts_with("tmux")
    }
}

/// How a notification reaches one client's terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// The protocol.
    pub protocol: Protocol,
    /// Wrapped for an outer tmux's passthrough.
    pub nested: bool,
}

/// The route for a client, or `None` when the setting is off.
pub fn route(setting: Setting, facts: &TerminalFacts) -> Option<Route> {
    let protocol = match setting {
        Setting::Off => return None,
        Setting::Fixed(p) => p,
        Setting::Auto => auto_protocol(facts),
    };
    Some(Route {
        protocol,
        nested: facts.nested(),
    })
}

/// The `auto` table, first match wins:
///
/// | the terminal is | known by | protocol |
/// |---|---|---|
/// | kitty | `TERM=xterm-kitty`, termtype `kitty…`, `KITTY_WINDOW_ID` | OSC 99 |
/// | iTerm2 | termtype `iTerm2…`, `LC_TERMINAL=iTerm2`, `TERM_PROGRAM=iTerm.app`, `ITERM_SESSION_ID` | OSC 9 |
/// | foot, Ghostty, WezTerm, Konsole, urxvt, Windows Terminal, anything else | — | OSC 777 |
///
/// Inside another tmux, `TERM` and `TERM_PROGRAM` name that tmux; the variables the outer
/// terminal set (`KITTY_WINDOW_ID`, `LC_TERMINAL`) still tell.
pub fn auto_protocol(facts: &TerminalFacts) -> Protocol {
    let termtype = facts.termtype.to_ascii_lowercase();
    let has = |k: &str| facts.var(k).is_some_and(|v| !v.is_empty());
    if facts.termname == "xterm-kitty" || termtype.starts_with("kitty") || has("KITTY_WINDOW_ID") {
        return Protocol::Osc99;
    }
    if termtype.starts_with("iterm2")
        || facts.var("LC_TERMINAL") == Some("iTerm2")
        || facts.var("TERM_PROGRAM") == Some("iTerm.app")
        || has("ITERM_SESSION_ID")
    {
        return Protocol::Osc9;
    }
    Protocol::Osc777
}

/// Text safe inside a sequence: one line, no control character, cut to `max` characters.
fn safe(s: &str, max: usize) -> String {
    cut(&one_line(s), max)
}

/// The bytes of one notification: the sequence for `route.protocol` (`id` names it for OSC 99,
/// which lets a terminal replace or close it), wrapped for passthrough when nested, then a BEL
/// if `bell` (outside the wrapping: an outer tmux marks its window too).
pub fn sequence(route: Route, id: u64, title: &str, body: &str, bell: bool) -> Vec<u8> {
    let title = safe(title, TITLE_MAX_CHARS);
    let body = safe(body, BODY_MAX_CHARS);
    let inner = match route.protocol {
        Protocol::Osc777 => {
            format!("\x1b]777;notify;{};{}\x07", title.replace(';', ","), body)
        }
        Protocol::Osc9 => {
            let mut text = if body.is_empty() {
                title
            } else {
                format!("{title}: {body}")
            };
            // ConEmu and Windows Terminal read `9;<digits>;` as a command, not a message.
            let digits = text.bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 && text.as_bytes().get(digits) == Some(&b';') {
                text.replace_range(digits..=digits, ",");
            }
            format!("\x1b]9;{text}\x07")
        }
        Protocol::Osc99 => {
            let id = format!("thinkterm{id}");
            if body.is_empty() {
                format!(
                    "\x1b]99;i={id}:e=1:p=title;{}\x1b\\",
                    STANDARD.encode(title)
                )
            } else {
                format!(
                    "\x1b]99;i={id}:d=0:e=1:p=title;{}\x1b\\\x1b]99;i={id}:d=1:e=1:p=body;{}\x1b\\",
                    STANDARD.encode(title),
                    STANDARD.encode(body)
                )
            }
        }
    };
    let mut out = if route.nested {
        wrap_for_tmux(inner.as_bytes())
    } else {
        inner.into_bytes()
    };
    if bell {
        out.push(0x07);
    }
    out
}

/// `ESC P tmux ; <seq with every ESC doubled> ESC \`: what an outer tmux passes through.
pub fn wrap_for_tmux(seq: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(seq.len() + 16);
    out.extend_from_slice(b"\x1bPtmux;");
    for &b in seq {
        if b == 0x1b {
            out.push(0x1b);
        }
        out.push(b);
    }
    out.extend_from_slice(b"\x1b\\");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: Route = Route {
        protocol: Protocol::Osc777,
        nested: false,
    };

    fn facts(termname: &str, termtype: &str, env: &[(&str, &str)]) -> TerminalFacts {
        TerminalFacts {
            termname: termname.into(),
            termtype: termtype.into(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn each_protocol_has_its_exact_bytes() {
        assert_eq!(
            sequence(
                PLAIN,
                1,
                "devbox · build: waiting for you",
                "Approve?",
                false
            ),
            "\x1b]777;notify;devbox · build: waiting for you;Approve?\x07".as_bytes()
        );
        let nine = Route {
            protocol: Protocol::Osc9,
            nested: false,
        };
        assert_eq!(
            sequence(nine, 1, "build: finished", "", false),
            b"\x1b]9;build: finished\x07"
        );
        assert_eq!(sequence(nine, 1, "12;x", "", false), b"\x1b]9;12,x\x07");
        let kitty = Route {
            protocol: Protocol::Osc99,
            nested: false,
        };
        assert_eq!(
            sequence(kitty, 7, "T", "B", true),
            b"\x1b]99;i=thinkterm7:d=0:e=1:p=title;VA==\x1b\\\x1b]99;i=thinkterm7:d=1:e=1:p=body;Qg==\x1b\\\x07"
        );
        assert_eq!(
            sequence(kitty, 8, "T", "", false),
            b"\x1b]99;i=thinkterm8:e=1:p=title;VA==\x1b\\"
        );
    }

    #[test]
    fn text_cannot_end_the_sequence_or_start_another() {
        let bytes = sequence(PLAIN, 1, "a;b\x07c", "x\x1b]0;pwned\x07\ny\u{9c}z", false);
        assert_eq!(bytes, "\x1b]777;notify;a,b c;x ]0;pwned y z\x07".as_bytes());
        let long = "é".repeat(500);
        let bytes = sequence(PLAIN, 1, &long, &long, false);
        let text = String::from_utf8(bytes).expect("utf-8");
        assert_eq!(text.chars().filter(|c| *c == 'é').count(), 79 + 199);
    }

    #[test]
    fn nested_clients_get_tmux_passthrough_with_every_esc_doubled() {
        let nested = Route {
            protocol: Protocol::Osc99,
            nested: true,
        };
        let bytes = sequence(nested, 1, "T", "", true);
        assert_eq!(
            bytes,
            b"\x1bPtmux;\x1b\x1b]99;i=thinkterm1:e=1:p=title;VA==\x1b\x1b\\\x1b\\\x07"
        );
        assert_eq!(
            wrap_for_tmux(b"\x1b]9;hi\x07"),
            b"\x1bPtmux;\x1b\x1b]9;hi\x07\x1b\\"
        );
    }

    #[test]
    fn auto_follows_the_table() {
        let p = |f: TerminalFacts| route(Setting::Auto, &f).expect("on");
        assert_eq!(p(facts("xterm-kitty", "", &[])).protocol, Protocol::Osc99);
        assert_eq!(
            p(facts("xterm-256color", "kitty(0.35.2)", &[])).protocol,
            Protocol::Osc99
        );
        assert_eq!(
            p(facts("xterm-256color", "iTerm2 3.5.0", &[])).protocol,
            Protocol::Osc9
        );
        assert_eq!(
            p(facts("xterm-256color", "", &[("LC_TERMINAL", "iTerm2")])).protocol,
            Protocol::Osc9
        );
        for (name, kind) in [
            ("foot", "foot(1.16.2)"),
            ("xterm-ghostty", "ghostty 1.1.0"),
            ("xterm-256color", "WezTerm 20240203"),
            ("rxvt-unicode-256color", ""),
            ("xterm-256color", ""),
        ] {
            assert_eq!(
                p(facts(name, kind, &[])).protocol,
                Protocol::Osc777,
                "{name}"
            );
        }
        // Inside another tmux: wrapped, and the outer terminal's variables still count.
        let inner = p(facts(
            "tmux-256color",
            "tmux 3.3a",
            &[
                ("TMUX", "/tmp/tmux-0/default,1,0"),
                ("KITTY_WINDOW_ID", "3"),
            ],
        ));
        assert_eq!(
            inner,
            Route {
                protocol: Protocol::Osc99,
                nested: true
            }
        );
        assert!(route(Setting::Off, &facts("xterm-kitty", "", &[])).is_none());
        assert_eq!(
            route(
                Setting::Fixed(Protocol::Osc9),
                &facts("xterm-kitty", "", &[])
            ),
            Some(Route {
                protocol: Protocol::Osc9,
                nested: false
            })
        );
    }

    #[test]
    fn only_the_known_variables_are_kept_from_an_environ_image() {
        let env = TerminalFacts::env_from_environ(
            b"PATH=/bin\0TMUX=/tmp/x,1,0\0LC_TERMINAL=iTerm2\0SECRET=1\0\xff\xfe=1\0",
        );
        assert_eq!(
            env,
            vec![
                ("TMUX".to_string(), "/tmp/x,1,0".to_string()),
                ("LC_TERMINAL".to_string(), "iTerm2".to_string())
            ]
        );
    }
}
