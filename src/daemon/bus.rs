//! The daemon's subscribers (`events`, the panel, remote peers): who gets what, and what happens
//! when one of them reads slower than things change. Each subscriber has a bounded queue. An
//! event that does not fit is never dropped in silence: the subscriber is marked lagged, counts
//! what it missed, and as soon as its queue has room again it gets a `lagged` reply followed by a
//! fresh snapshot, so that what it knows is whole again. Owns: the subscriber list and their lag;
//! does not own: what a snapshot holds (the daemon builds it when [`Bus::wants_snapshot`] says).

use std::time::{Duration, Instant};

use tokio::sync::mpsc::{self, error::TrySendError};

use crate::ipc::schema::Reply;

/// Room in each subscriber's queue. A subscriber that falls this far behind lags.
pub const QUEUE: usize = 1024;
/// How often a lagged subscriber is looked at again when nothing else happens.
pub const LAG_RETRY: Duration = Duration::from_millis(50);

/// What a subscriber asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wants {
    /// Events, and a fresh snapshot whenever anything changed (the panel).
    EventsAndSnapshots,
    /// Events only (`events --json`); a snapshot only to mend a lag.
    Events,
}

struct Subscriber {
    tx: mpsc::Sender<Reply>,
    wants: Wants,
    /// Replies that did not fit since the last one that did (`Some` while lagging).
    dropped: Option<u64>,
}

/// Every subscriber.
#[derive(Default)]
pub struct Bus {
    subs: Vec<Subscriber>,
}

impl Bus {
    /// Adds a subscriber; its queue is `tx` (made with [`QUEUE`] room).
    pub fn add(&mut self, tx: mpsc::Sender<Reply>, wants: Wants) {
        self.subs.push(Subscriber {
            tx,
            wants,
            dropped: None,
        });
    }

    /// Number of subscribers.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.subs.len()
    }

    /// Whether a snapshot should be built now: someone follows snapshots, or a lagged
    /// subscriber has room to be mended.
    pub fn wants_snapshot(&self, changed: bool) -> bool {
        self.subs.iter().any(|s| {
            (changed && s.wants == Wants::EventsAndSnapshots && s.dropped.is_none())
                || (s.dropped.is_some() && s.tx.capacity() >= 2)
        })
    }

    /// Sends an event to every subscriber.
    pub fn event(&mut self, event: &Reply) {
        for s in &mut self.subs {
            offer(s, event);
        }
        self.prune();
    }

    /// Sends a snapshot: to those who follow snapshots when `changed`, and to every lagged
    /// subscriber that has room, after its `lagged` marker.
    pub fn snapshot(&mut self, snapshot: &Reply, changed: bool) {
        for s in &mut self.subs {
            if let Some(n) = s.dropped {
                if s.tx.capacity() >= 2 {
                    // Both fit: the marker and the snapshot that mends the gap.
                    let _ = s.tx.try_send(Reply::Lagged { dropped: n });
                    let _ = s.tx.try_send(snapshot.clone());
                    s.dropped = None;
                }
            } else if changed && s.wants == Wants::EventsAndSnapshots {
                offer(s, snapshot);
            }
        }
        self.prune();
    }

    /// When lagged subscribers should be looked at again (nothing else may wake the daemon).
    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        self.subs
            .iter()
            .any(|s| s.dropped.is_some())
            .then_some(now + LAG_RETRY)
    }

    fn prune(&mut self) {
        self.subs.retain(|s| !s.tx.is_closed());
    }
}

/// Queues `reply` for `s`, or counts it as missed.
fn offer(s: &mut Subscriber, reply: &Reply) {
    if let Some(n) = &mut s.dropped {
        *n += 1;
        return;
    }
    match s.tx.try_send(reply.clone()) {
        Ok(()) => {}
        Err(TrySendError::Full(_)) => s.dropped = Some(1),
        Err(TrySendError::Closed(_)) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipc::schema::SCHEMA_VERSION;

    fn done(n: usize) -> Reply {
        Reply::Done {
            message: n.to_string(),
        }
    }

    fn snap() -> Reply {
        Reply::Snapshot {
            schema: SCHEMA_VERSION,
            panes: Vec::new(),
            windows: Vec::new(),
        }
    }

    /// A slow reader gets every event in order, or a `lagged` marker and a snapshot: never a
    /// silent gap.
    #[test]
    fn a_burst_to_a_slow_reader_is_whole_or_marked() {
        let mut bus = Bus::default();
        let (tx, mut rx) = mpsc::channel(QUEUE);
        bus.add(tx, Wants::Events);
        let mut got = Vec::new();
        for i in 0..10_000 {
            bus.event(&done(i));
            if bus.wants_snapshot(false) {
                bus.snapshot(&snap(), false);
            }
            // The reader takes one reply per three events.
            if i % 3 == 0 {
                if let Ok(r) = rx.try_recv() {
                    got.push(r);
                }
            }
        }
        while let Ok(r) = rx.try_recv() {
            got.push(r);
        }
        // The reader caught up: mend the last lag.
        bus.snapshot(&snap(), false);
        while let Ok(r) = rx.try_recv() {
            got.push(r);
        }
        let mut next = 0usize;
        let mut lags = 0;
        let mut i = 0;
        while i < got.len() {
            match &got[i] {
                Reply::Done { message } => {
                    let n: usize = message.parse().unwrap_or(usize::MAX);
                    assert_eq!(n, next, "an event out of order or missing");
                    next += 1;
                }
                Reply::Lagged { dropped } => {
                    lags += 1;
                    assert!(matches!(got.get(i + 1), Some(Reply::Snapshot { .. })));
                    next += usize::try_from(*dropped).unwrap_or(0);
                    i += 1;
                }
                other => panic!("unexpected {other:?}"),
            }
            i += 1;
        }
        assert!(lags > 0, "the reader was slow enough to lag");
        assert_eq!(
            next, 10_000,
            "every event is received or counted as dropped"
        );
    }

    #[test]
    fn snapshots_go_only_to_those_who_follow_them() {
        let mut bus = Bus::default();
        let (a, mut ra) = mpsc::channel(QUEUE);
        let (b, mut rb) = mpsc::channel(QUEUE);
        bus.add(a, Wants::EventsAndSnapshots);
        bus.add(b, Wants::Events);
        assert!(bus.wants_snapshot(true));
        assert!(!bus.wants_snapshot(false));
        bus.snapshot(&snap(), true);
        assert!(matches!(ra.try_recv(), Ok(Reply::Snapshot { .. })));
        assert!(rb.try_recv().is_err());
        drop(ra);
        bus.event(&done(1));
        assert_eq!(bus.len(), 1, "a closed subscriber goes");
        assert!(matches!(rb.try_recv(), Ok(Reply::Done { .. })));
    }

    #[test]
    fn a_lagged_subscriber_is_retried_on_a_deadline() {
        let mut bus = Bus::default();
        let (tx, mut rx) = mpsc::channel(2);
        bus.add(tx, Wants::Events);
        let now = Instant::now();
        assert_eq!(bus.next_deadline(now), None);
        for i in 0..3 {
            bus.event(&done(i));
        }
        assert_eq!(bus.next_deadline(now), Some(now + LAG_RETRY));
        assert!(!bus.wants_snapshot(false), "no room yet");
        let _ = rx.try_recv();
        let _ = rx.try_recv();
        assert!(bus.wants_snapshot(false));
        bus.snapshot(&snap(), false);
        assert!(matches!(rx.try_recv(), Ok(Reply::Lagged { dropped: 1 })));
        assert!(matches!(rx.try_recv(), Ok(Reply::Snapshot { .. })));
        assert_eq!(bus.next_deadline(now), None);
    }
}
