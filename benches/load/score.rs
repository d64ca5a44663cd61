//! Scoring detections against the replayers' logs: for each labelled transition, the first
//! detection of the new state on its pane at or after it (or up to 2 s before, but after the
//! previous transition: a status report can lead its screen) and before the pane's next
//! transition; none = missed.

use std::collections::BTreeMap;

use super::world::Load;

/// A labelled transition: (unix ms its write began, ms the write took, new state, label).
pub type Transition = (u64, u64, String, String);
/// A detection: (unix ms, pane, new state).
pub type Detection = (u64, String, String);

#[derive(Default)]
pub struct Score {
    pub latencies_ms: Vec<u64>,
    /// (latency, "pane agent state (label)") for every detected transition.
    pub detail: Vec<(u64, String)>,
    /// Latencies by the state the transition goes to.
    pub by_state: BTreeMap<String, Vec<u64>>,
    /// Latencies by agent (its fixture).
    pub by_agent: BTreeMap<String, Vec<u64>>,
    pub missed: Vec<String>,
    pub total: usize,
    /// Detections that came before the labelled write began (a status report sent ahead of
    /// the screen it belongs to): scored as 0 ms.
    pub early: usize,
    /// State changes the observer reported on each agent's panes, labelled or not. The
    /// recordings pass through states between their labelled frames, so this is more than
    /// the labelled transitions; replays being the same, more here means changes that were
    /// not on the screen (a look at a half-drawn frame).
    pub reported: BTreeMap<String, usize>,
}

impl Score {
    pub fn merge(&mut self, other: Score) {
        self.latencies_ms.extend(other.latencies_ms);
        self.detail.extend(other.detail);
        for (k, v) in other.by_state {
            self.by_state.entry(k).or_default().extend(v);
        }
        for (k, v) in other.by_agent {
            self.by_agent.entry(k).or_default().extend(v);
        }
        self.missed.extend(other.missed);
        for (k, n) in other.reported {
            *self.reported.entry(k).or_default() += n;
        }
        self.total += other.total;
        self.early += other.early;
        self.sort();
    }

    fn sort(&mut self) {
        self.latencies_ms.sort_unstable();
        self.detail.sort_by_key(|d| std::cmp::Reverse(d.0));
        for v in self.by_state.values_mut().chain(self.by_agent.values_mut()) {
            v.sort_unstable();
        }
    }
}

/// A labelled write that took the pty this long is named with its length in the report.
const SLOW_WRITE_MS: u64 = 20;

/// How long before its labelled write a detection may come and still count: an agent's status
/// report can go out in the chunks before the frame whose screen shows the new state.
const EARLY_MS: u64 = 2000;

/// Labelled transitions written in `[from, to)` on the agents `which` accepts, by pane (with
/// the agent's fixture).
pub fn transitions(
    load: &Load,
    from: u64,
    to: u64,
    which: &dyn Fn(&str) -> bool,
) -> BTreeMap<String, (String, Vec<Transition>)> {
    let mut out = BTreeMap::new();
    for a in &load.agents {
        if !which(a.kind.fixture) {
            continue;
        }
        let text = std::fs::read_to_string(&a.log).unwrap_or_default();
        let v: Vec<Transition> = text
            .lines()
            .filter_map(|l| {
                let mut it = l.splitn(4, ' ');
                let t = it.next()?.parse().ok()?;
                let wrote = it.next()?.parse().ok()?;
                Some((
                    t,
                    wrote,
                    it.next()?.to_string(),
                    it.next().unwrap_or("").to_string(),
                ))
            })
            .filter(|(t, ..)| *t >= from && *t < to)
            .collect();
        out.insert(a.pane.clone(), (a.kind.fixture.to_string(), v));
    }
    out
}

pub fn score(
    trans: &BTreeMap<String, (String, Vec<Transition>)>,
    detections: &[Detection],
    end_ms: u64,
) -> Score {
    let mut s = Score::default();
    for (pane, (agent, _)) in trans {
        let n = detections.iter().filter(|(_, dp, _)| dp == pane).count();
        *s.reported.entry(agent.clone()).or_default() += n;
    }
    for (pane, (agent, list)) in trans {
        for (i, (t, wrote, state, label)) in list.iter().enumerate() {
            s.total += 1;
            let until = list.get(i + 1).map(|n| n.0).unwrap_or(end_ms);
            // From the previous transition on (it went to another state), at most EARLY_MS
            // before this one's write.
            let from = t
                .saturating_sub(EARLY_MS)
                .max(if i > 0 { list[i - 1].0 + 1 } else { 0 });
            let hit = detections
                .iter()
                .filter(|(dt, dp, ds)| dp == pane && ds == state && *dt >= from && *dt < until)
                .map(|(dt, _, _)| *dt)
                .min();
            if hit.is_some_and(|dt| dt < *t) {
                s.early += 1;
            }
            let hit = hit.map(|dt| dt.max(*t));
            // A write the pty took slowly (tmux reads a pane at its own pace): the screen
            // showed the new state only near its end.
            let what = if *wrote >= SLOW_WRITE_MS {
                format!("{pane} {agent} {state} ({label} at {t}; its write took {wrote} ms)")
            } else {
                format!("{pane} {agent} {state} ({label} at {t})")
            };
            match hit {
                Some(dt) => {
                    s.latencies_ms.push(dt - t);
                    s.detail.push((dt - t, what));
                    s.by_state.entry(state.clone()).or_default().push(dt - t);
                    s.by_agent.entry(agent.clone()).or_default().push(dt - t);
                }
                None => {
                    s.by_agent.entry(agent.clone()).or_default();
                    s.missed.push(what)
                }
            }
        }
    }
    s.sort();
    s
}

pub fn pct(v: &[u64], p: f64) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    let i = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    Some(v[i])
}

pub fn ms(v: Option<u64>) -> String {
    v.map(|v| format!("{v} ms")).unwrap_or_else(|| "n/a".into())
}
