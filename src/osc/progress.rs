//! OSC 9;4 progress reports (ConEmu / Windows Terminal): `ESC ] 9 ; 4 ; <state> ; <percent> ST`
//! with state 0 hidden, 1 normal, 2 error, 3 indeterminate, 4 paused (S3.3 item 3).
//!
//! Choices: a missing state is 0 (hidden), as ConEmu reads it; a percent over 100 is clamped to
//! 100 (Windows Terminal does the same); a percent that is not digits, or a state above 4, drops
//! the sequence; a normal report without a percent is 0 %; the percent of `hidden` and
//! `indeterminate` is ignored.

/// One progress report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Progress {
    /// State 0: no progress shown.
    Hidden,
    /// State 1: running at this percent.
    Normal(u8),
    /// State 2: failed, with the percent if given.
    Error(Option<u8>),
    /// State 3: running, amount unknown.
    Indeterminate,
    /// State 4: paused, with the percent if given.
    Paused(Option<u8>),
}

impl Progress {
    /// Whether it means "something is running" (normal or indeterminate).
    pub fn running(self) -> bool {
        matches!(self, Progress::Normal(_) | Progress::Indeterminate)
    }

    /// The percent, when there is one.
    pub fn percent(self) -> Option<u8> {
        match self {
            Progress::Normal(p) => Some(p),
            Progress::Error(p) | Progress::Paused(p) => p,
            Progress::Hidden | Progress::Indeterminate => None,
        }
    }

    /// The report as the rules' `osc_progress` region reads it: `4;STATE;PERCENT` (`4;STATE`
    /// without a percent), the payload after `9;`.
    pub fn region_text(self) -> String {
        match self.percent() {
            Some(p) => format!("4;{};{p}", self.code()),
            None => format!("4;{}", self.code()),
        }
    }

    /// The state number on the wire.
    pub fn code(self) -> u8 {
        match self {
            Progress::Hidden => 0,
            Progress::Normal(_) => 1,
            Progress::Error(_) => 2,
            Progress::Indeterminate => 3,
            Progress::Paused(_) => 4,
        }
    }
}

fn percent(s: Option<&[u8]>) -> Result<Option<u8>, ()> {
    match s {
        None | Some(b"") => Ok(None),
        Some(d) if d.len() <= 20 && d.iter().all(u8::is_ascii_digit) => {
            let v = d.iter().fold(0u64, |v, &b| {
                v.saturating_mul(10).saturating_add(u64::from(b - b'0'))
            });
            Ok(Some(v.min(100) as u8))
        }
        Some(_) => Err(()),
    }
}

/// Parses a whole OSC payload (`9;4;1;50`); `None` when it is not a valid progress report.
pub fn parse(payload: &[u8]) -> Option<Progress> {
    let rest = payload.strip_prefix(b"9;4")?;
    let rest = match rest {
        [] => &[][..],
        [b';', r @ ..] => r,
        _ => return None,
    };
    let mut parts = rest.splitn(3, |&b| b == b';');
    let state = match parts.next() {
        None | Some(b"") => 0,
        Some([d]) if d.is_ascii_digit() => d - b'0',
        Some(_) => return None,
    };
    let pct = percent(parts.next()).ok()?;
    Some(match state {
        0 => Progress::Hidden,
        1 => Progress::Normal(pct.unwrap_or(0)),
        2 => Progress::Error(pct),
        3 => Progress::Indeterminate,
        4 => Progress::Paused(pct),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_and_percent() {
        let rows: &[(&[u8], Option<Progress>)] = &[
            (b"9;4;0;0", Some(Progress::Hidden)),
            (b"9;4;0", Some(Progress::Hidden)),
            (b"9;4", Some(Progress::Hidden)),
            (b"9;4;", Some(Progress::Hidden)),
            (b"9;4;1;50", Some(Progress::Normal(50))),
            (b"9;4;1", Some(Progress::Normal(0))),
            (b"9;4;1;100", Some(Progress::Normal(100))),
            (b"9;4;1;101", Some(Progress::Normal(100))),
            (b"9;4;1;99999999999999999999", Some(Progress::Normal(100))),
            (b"9;4;2", Some(Progress::Error(None))),
            (b"9;4;2;30", Some(Progress::Error(Some(30)))),
            (b"9;4;3;70", Some(Progress::Indeterminate)),
            (b"9;4;4;10", Some(Progress::Paused(Some(10)))),
            (b"9;4;5;10", None),
            (b"9;4;1;-1", None),
            (b"9;4;1;5x", None),
            (b"9;4;11", None),
            (b"9;42", None),
            (b"9;hello", None),
            (b"99;4;1", None),
        ];
        for (p, want) in rows {
            assert_eq!(parse(p), *want, "{:?}", String::from_utf8_lossy(p));
        }
    }

    #[test]
    fn running_and_percent() {
        assert!(Progress::Normal(3).running());
        assert!(Progress::Indeterminate.running());
        assert!(!Progress::Paused(Some(3)).running());
        assert!(!Progress::Error(None).running());
        assert_eq!(Progress::Error(Some(4)).percent(), Some(4));
        assert_eq!(Progress::Paused(None).code(), 4);
    }
}
