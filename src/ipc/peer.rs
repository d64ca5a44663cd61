//! Who may talk to the daemon: only the user it runs as. The socket's mode (0600, in a 0700
//! directory) is the first gate; the second is the peer's credentials, which the kernel records
//! when the peer connects (`SO_PEERCRED`) and no peer can forge. A connection from any other
//! uid, root's included, is closed before a byte of it is read, with one log line: the
//! daemon's answers hold what this user's panes show, and its requests move this user's
//! windows. The refusal lines are paced ([`Refusals`]) so that a flood of connections cannot
//! fill the log.

use std::time::{Duration, Instant};

/// Whether a peer is let in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The peer runs as the daemon's own uid.
    Owner,
    /// Another uid.
    Stranger {
        /// The peer's effective uid when it connected.
        uid: u32,
    },
    /// The kernel gave no credentials (treated as a stranger).
    Unknown,
}

/// Judges a peer by its uid (`None`: the credentials could not be read) against the daemon's.
pub fn judge(peer: Option<u32>, owner: u32) -> Verdict {
    match peer {
        Some(uid) if uid == owner => Verdict::Owner,
        Some(uid) => Verdict::Stranger { uid },
        None => Verdict::Unknown,
    }
}

/// The uid the daemon serves: its effective uid, which owns the socket it created.
pub fn owner() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// At most one refusal line per this long; the refusals in between are counted on the next.
pub const LOG_EVERY: Duration = Duration::from_secs(1);

/// Paces the refusal log lines.
#[derive(Debug, Default)]
pub struct Refusals {
    last: Option<Instant>,
    unlogged: u64,
}

impl Refusals {
    /// A refusal happened at `now`: `Some(n)` when a line should be written now, `n` being how
    /// many refusals since the last line went unlogged; `None` to stay quiet (it is counted).
    pub fn refused(&mut self, now: Instant) -> Option<u64> {
        match self.last {
            Some(t) if now.saturating_duration_since(t) < LOG_EVERY => {
                self.unlogged += 1;
                None
            }
            _ => {
                self.last = Some(now);
                Some(std::mem::take(&mut self.unlogged))
            }
        }
    }
}

/// The refusal's log line.
pub fn refusal_line(verdict: Verdict, pid: Option<i32>, owner: u32, unlogged: u64) -> String {
    let who = match verdict {
        Verdict::Stranger { uid } => format!("uid {uid}"),
        _ => "a peer whose credentials could not be read".into(),
    };
    let pid = pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
    let more = if unlogged > 0 {
        format!("; {unlogged} more refused since the last such line")
    } else {
        String::new()
    };
    format!("refused a connection on the socket from {who}{pid}: it serves uid {owner} only{more}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_owner_is_let_in_root_included() {
        assert_eq!(judge(Some(1000), 1000), Verdict::Owner);
        assert_eq!(judge(Some(0), 1000), Verdict::Stranger { uid: 0 });
        assert_eq!(judge(Some(1001), 1000), Verdict::Stranger { uid: 1001 });
        assert_eq!(judge(None, 1000), Verdict::Unknown);
        assert_eq!(judge(Some(0), 0), Verdict::Owner);
    }

    #[test]
    fn refusal_lines_are_paced_and_count_the_quiet_ones() {
        let mut r = Refusals::default();
        let t = Instant::now();
        assert_eq!(r.refused(t), Some(0));
        for i in 1..=5 {
            assert_eq!(r.refused(t + Duration::from_millis(i * 100)), None);
        }
        assert_eq!(r.refused(t + LOG_EVERY), Some(5));
        assert_eq!(r.refused(t + LOG_EVERY * 3), Some(0));
    }

    #[test]
    fn the_line_names_the_peer_and_the_owner() {
        let line = refusal_line(Verdict::Stranger { uid: 65534 }, Some(42), 1000, 0);
        assert_eq!(
            line,
            "refused a connection on the socket from uid 65534 (pid 42): it serves uid 1000 only"
        );
        let line = refusal_line(Verdict::Unknown, None, 1000, 3);
        assert!(
            line.ends_with("; 3 more refused since the last such line"),
            "{line}"
        );
    }
}
