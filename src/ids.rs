//! Newtypes for tmux object ids (`%N` panes, `@N` windows, `$N` sessions), so that one kind of id
//! can never be passed where another is meant. They parse from and print as tmux spells them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! tmux_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);

        impl $name {
            /// The sigil tmux writes before the number.
            pub const PREFIX: char = $prefix;

            /// Parses `%12`-style text (the sigil is required).
            pub fn parse(s: &str) -> Option<Self> {
                let rest = s.strip_prefix($prefix)?;
                if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                rest.parse().ok().map($name)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}{}", $prefix, self.0)
            }
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                Self::parse(s).ok_or_else(|| format!("not a tmux id of the form {}N: {s:?}", $prefix))
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

tmux_id!(
    /// A tmux pane, `%N`: unique on its server for the server's lifetime.
    PaneId,
    '%'
);
tmux_id!(
    /// A tmux window, `@N` (a "Thread" in the spec).
    WindowId,
    '@'
);
tmux_id!(
    /// A tmux session, `$N` (a "Project" in the spec).
    SessionId,
    '$'
);

/// A pane named on the command line: `%3`, or `MACHINE:%3` for a pane on a connected machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaneTarget {
    /// The machine (None: this computer).
    pub machine: Option<String>,
    /// The pane.
    pub pane: PaneId,
}

impl FromStr for PaneTarget {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (machine, pane) = match s.rsplit_once(':') {
            Some((m, p)) if !m.is_empty() => (Some(m.to_string()), p),
            _ => (None, s),
        };
        let pane = PaneId::parse(pane)
            .ok_or_else(|| format!("not a pane: {s:?} (give %N, or MACHINE:%N)"))?;
        Ok(PaneTarget { machine, pane })
    }
}

impl fmt::Display for PaneTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.machine {
            Some(m) => write!(f, "{m}:{}", self.pane),
            None => write!(f, "{}", self.pane),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn pane_targets_name_a_machine_or_not() {
        use super::*;
        let t: PaneTarget = "devbox:%12".parse().expect("parses");
        assert_eq!(t.machine.as_deref(), Some("devbox"));
        assert_eq!(t.pane, PaneId(12));
        assert_eq!(t.to_string(), "devbox:%12");
        let local: PaneTarget = "%4".parse().expect("parses");
        assert_eq!(local.machine, None);
        assert!("devbox:@1".parse::<PaneTarget>().is_err());
        assert!(
            ":%1".parse::<PaneTarget>().is_err(),
            "an empty machine name"
        );
    }

    use super::*;

    #[test]
    fn ids_round_trip_and_reject_other_sigils() {
        assert_eq!(PaneId::parse("%12"), Some(PaneId(12)));
        assert_eq!(PaneId(3).to_string(), "%3");
        assert_eq!(WindowId::parse("@0"), Some(WindowId(0)));
        assert_eq!(SessionId::parse("$7"), Some(SessionId(7)));
        assert_eq!(PaneId::parse("@1"), None);
        assert_eq!(PaneId::parse("%"), None);
        assert_eq!(PaneId::parse("%1x"), None);
        assert_eq!(PaneId::parse("%+1"), None);
    }
}
