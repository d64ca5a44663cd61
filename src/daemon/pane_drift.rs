//! The drift alarm's place in the daemon: each verdict a pane's screen gets is fed to its
//! [`Drift`](crate::rules::drift::Drift) detector, which says when the agent's rules no longer
//! recognise the screen; one log line, naming the pane, the agent and its version, says when
//! that starts and ends. The mark is read by `agents` and `explain`.

use std::time::Instant;

use super::panes::PaneEntry;
use crate::ids::PaneId;
use crate::rules::drift::{DriftChange, Observation};

impl PaneEntry {
    /// Feeds the drift alarm with the verdict just made of pane `pane`; logs once when it is
    /// raised or cleared. `same`: the verdict was made from the screen and title of the one
    /// before (kept by the pane's memo), so they did not change and are not hashed again.
    pub(super) fn watch_drift(&mut self, now: Instant, pane: PaneId, same: bool) {
        let Some(v) = &self.verdict else {
            return;
        };
        let changed = !same && {
            let seen = screen_hash(&self.screen, self.signals.title());
            std::mem::replace(&mut self.drift_seen, seen) != seen
        };
        let obs = Observation {
            changed,
            fallback: v.fallback,
            state: (!v.skip_state_update).then_some(v.state),
        };
        let version = self.agent_version.as_deref().unwrap_or("unknown");
        match self.drift.observe(now, obs) {
            Some(DriftChange::Raised(reason)) => tracing::warn!(
                pane = %pane,
                agent = self.agent().unwrap_or("?"),
                version,
                %reason,
                "pane unrecognised: its rules no longer recognise this screen \
                 (`thinkterm-sidecar explain PANE --save DIR` keeps it as a fixture)"
            ),
            Some(DriftChange::Cleared) => tracing::info!(
                pane = %pane,
                agent = self.agent().unwrap_or("?"),
                version,
                "pane recognised again"
            ),
            None => {}
        }
    }
}

/// A hash of a screen and title (the drift alarm counts how often they change).
fn screen_hash(screen: &str, title: Option<&str>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    screen.hash(&mut h);
    title.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::identify::Identity;
    use crate::rules::Catalog;

    /// Issue 17: a known agent whose screen keeps changing while no rule of its manifest
    /// matches is unrecognised once the drift window has passed (fake clock), `explain` says
    /// so with the screen a fixture needs; a screen its rules know again clears it.
    #[test]
    fn an_agent_screen_no_rule_knows_is_unrecognised_after_the_window() {
        let t = Instant::now();
        let c = Catalog::bundled();
        let mut p = PaneEntry::new(1, t, 0);
        p.identity = Identity::Agent {
            agent: "claude".into(),
            pid: 2,
        };
        p.agent_version = Some("2.1.999".into());
        let at = |s: u64| t + std::time::Duration::from_secs(s);
        for s in 0..30 {
            p.classify(
                at(s),
                PaneId(1),
                &c,
                format!("a layout no rule knows, frame {s}"),
            );
            assert_eq!(p.drift.unrecognised(), None, "at {s} s");
        }
        p.classify(
            at(30),
            PaneId(1),
            &c,
            "a layout no rule knows, frame 30".into(),
        );
        assert!(p.drift.unrecognised().is_some());
        let v = p.explain(&c);
        assert_eq!(v["unrecognised"], true);
        assert_eq!(v["agent_version"], "2.1.999");
        assert_eq!(v["screen"], "a layout no rule knows, frame 30");
        assert!(v["unrecognised_reason"]
            .as_str()
            .is_some_and(|r| r.contains("no rule matched for 30 s")));
        let idle = crate::test_fixtures::read_to_string("claude-code/2.1.332/001-idle.txt");
        for s in 31..=41 {
            p.classify(at(s), PaneId(1), &c, idle.clone());
        }
        assert_eq!(
            p.drift.unrecognised(),
            None,
            "cleared after 10 s of matching rules"
        );
    }
}
