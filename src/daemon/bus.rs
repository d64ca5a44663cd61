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
/// A follower (another sidecar, often over ssh) gets a fresh snapshot at most this often.
pub const FOLLOW_SNAPSHOTS: Duration = Duration::from_millis(500);

/// What a subscriber asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wants {
    /// Events, and a fresh snapshot whenever anything changed (the panel).
    EventsAndSnapshots,
    /// Events only (`events --json`); a snapshot only to mend a lag.
    Events,
    /// Another sidecar: this machine's own events, its snapshot at most every
    /// [`FOLLOW_SNAPSHOTS`], and with `notifications` the decisions to notify and ring.
    Follow {
        /// It takes this machine's notifications and sounds.
        notifications: bool,
    },
}

/// Which panes a snapshot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// This machine's and every connected machine's (what people look at).
    All,
    /// This machine's own (what a follower gets: its machines are not ours to relay).
    Local,
}

struct Subscriber {
    tx: mpsc::Sender<Reply>,
    wants: Wants,
    /// Replies that did not fit since the last one that did (`Some` while lagging).
    dropped: Option<u64>,
    /// A snapshot is owed: something changed since the last one this subscriber got (it was
    /// not due yet, or its reader was behind).
    owed: bool,
    /// When a follower last got a snapshot.
    last: Option<Instant>,
    /// How many replies were queued after the last snapshot queued here (None: none queued).
    /// While more than that wait, that snapshot is still in the queue.
    after_snapshot: Option<usize>,
}

impl Subscriber {
    fn scope(&self) -> Scope {
        match self.wants {
            Wants::Follow { .. } => Scope::Local,
            _ => Scope::All,
        }
    }

    /// Replies queued and not yet taken by the connection.
    fn waiting(&self) -> usize {
        self.tx.max_capacity() - self.tx.capacity()
    }

    /// Whether a snapshot may join the queue now: the last one queued has been taken (a queue
    /// never holds two), and there is room for a `lagged` marker before it.
    fn has_room(&self) -> bool {
        self.tx.capacity() >= 2 && self.after_snapshot.is_none_or(|n| self.waiting() <= n)
    }

    /// Remembers a change for a subscriber that follows snapshots.
    fn note(&mut self, changed: bool) {
        if changed && self.wants != Wants::Events {
            self.owed = true;
        }
    }

    /// When the owed snapshot may go (followers are paced); None when none is owed.
    fn owed_at(&self, now: Instant) -> Option<Instant> {
        if !self.owed && self.dropped.is_none() {
            return None;
        }
        let paced = match self.wants {
            Wants::Follow { .. } if self.dropped.is_none() => self.owed_at_or(now),
            _ => now,
        };
        Some(if self.has_room() {
            paced
        } else {
            paced.max(now + LAG_RETRY)
        })
    }

    /// Whether a snapshot should go to this subscriber now (after [`Subscriber::note`]).
    fn wants_snapshot(&self, now: Instant) -> bool {
        self.owed_at(now).is_some_and(|t| t <= now)
    }

    fn owed_at_or(&self, now: Instant) -> Instant {
        self.last.map_or(now, |t| t + FOLLOW_SNAPSHOTS)
    }
}

/// Every subscriber.
#[derive(Default)]
pub struct Bus {
    subs: Vec<Subscriber>,
}

impl Bus {
    /// Adds a subscriber; its queue is `tx` (made with [`QUEUE`] room). Subscribers that went
    /// away since the last event are let go first: on a quiet server no event may come for
    /// hours, and each keeps its queue's memory while it is listed.
    pub fn add(&mut self, tx: mpsc::Sender<Reply>, wants: Wants) {
        self.prune();
        self.subs.push(Subscriber {
            tx,
            wants,
            dropped: None,
            owed: false,
            last: None,
            after_snapshot: None,
        });
    }

    /// Number of subscribers.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.subs.len()
    }

    /// Streams whose reader is still connected (`doctor` shows it).
    pub fn open_streams(&self) -> usize {
        self.subs.iter().filter(|s| !s.tx.is_closed()).count()
    }

    /// Whether a follower takes this machine's notifications and sounds now.
    pub fn takes_notifications(&self) -> bool {
        self.subs.iter().any(|s| {
            matches!(
                s.wants,
                Wants::Follow {
                    notifications: true
                }
            ) && !s.tx.is_closed()
        })
    }

    /// Whether a snapshot of `scope` should be built now: someone who follows snapshots is
    /// owed one and can take it, or a lagged subscriber has room to be mended. `changed`:
    /// something changed since the last turn (remembered for those who cannot take it yet).
    pub fn wants_snapshot(&mut self, scope: Scope, changed: bool, now: Instant) -> bool {
        let mut wanted = false;
        for s in self.subs.iter_mut().filter(|s| s.scope() == scope) {
            s.note(changed);
            wanted |= s.wants_snapshot(now);
        }
        wanted
    }

    /// Sends an event to every subscriber; `local`: about this machine's own panes (followers
    /// get only those).
    pub fn event(&mut self, event: &Reply, local: bool) {
        for s in &mut self.subs {
            if s.scope() == Scope::Local && !local {
                continue;
            }
            offer(s, event);
        }
        self.prune();
    }

    /// Sends a decision (`notify`, `sound`) to the followers that take them.
    pub fn decision(&mut self, reply: &Reply) {
        for s in &mut self.subs {
            if let Wants::Follow {
                notifications: true,
            } = s.wants
            {
                offer(s, reply);
            }
        }
        self.prune();
    }

    /// Sends a snapshot of `scope` to each subscriber owed one that can take it now: those who
    /// follow snapshots when something `changed` (followers at most every
    /// [`FOLLOW_SNAPSHOTS`]), and every lagged subscriber, after its `lagged` marker. A reader
    /// that has not yet taken the last snapshot gets no other until it has, and then the latest: a snapshot holds every pane, and a panel stopped for
    /// an hour would otherwise have a thousand of them queued.
    pub fn snapshot(&mut self, scope: Scope, snapshot: &Reply, changed: bool, now: Instant) {
        for s in self.subs.iter_mut().filter(|s| s.scope() == scope) {
            s.note(changed);
            if !s.wants_snapshot(now) {
                continue;
            }
            if let Some(n) = s.dropped {
                // Both fit: the marker and the snapshot that mends the gap.
                let _ = s.tx.try_send(Reply::Lagged { dropped: n });
                let _ = s.tx.try_send(snapshot.clone());
                s.dropped = None;
            } else {
                offer(s, snapshot);
            }
            s.owed = false;
            s.last = Some(now);
            s.after_snapshot = Some(0);
        }
        self.prune();
    }

    /// When a subscriber should be looked at again though nothing happens: a lagged one, or
    /// one owed a snapshot (a follower's next paced one, or one whose reader is behind).
    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        self.subs.iter().filter_map(|s| s.owed_at(now)).min()
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
        Ok(()) => {
            if let Some(n) = &mut s.after_snapshot {
                *n += 1;
            }
        }
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
            machines: Vec::new(),
            clients: Vec::new(),
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
            bus.event(&done(i), true);
            if bus.wants_snapshot(Scope::All, false, Instant::now()) {
                bus.snapshot(Scope::All, &snap(), false, Instant::now());
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
        bus.snapshot(Scope::All, &snap(), false, Instant::now());
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

    /// Regression: subscribers that went away stayed listed, each with its queue, until the next
    /// event; on a quiet server a thousand vanishing clients kept 2 MiB for good.
    #[test]
    fn a_new_subscriber_lets_go_of_those_that_went_away() {
        let mut bus = Bus::default();
        for _ in 0..100 {
            let (tx, rx) = mpsc::channel(QUEUE);
            bus.add(tx, Wants::Events);
            drop(rx);
        }
        let (tx, _rx) = mpsc::channel(QUEUE);
        bus.add(tx, Wants::Events);
        assert_eq!(bus.len(), 1);
    }

    /// Regression: a panel that stopped reading (suspended, or its terminal gone) had a snapshot
    /// queued at every change, up to a thousand of them, each holding every pane. Now it holds at
    /// most one snapshot; the change is owed, and once it has taken that one, it gets the
    /// latest.
    #[test]
    fn a_reader_that_is_behind_gets_the_latest_snapshot_once_caught_up() {
        let mut bus = Bus::default();
        let (tx, mut rx) = mpsc::channel(QUEUE);
        bus.add(tx, Wants::EventsAndSnapshots);
        let t = Instant::now();
        for i in 0..1000 {
            bus.event(&done(i), true);
            if bus.wants_snapshot(Scope::All, true, t) {
                bus.snapshot(Scope::All, &snap(), true, t);
            }
        }
        let mut queued = Vec::new();
        while let Ok(r) = rx.try_recv() {
            queued.push(r);
        }
        let snapshots = queued
            .iter()
            .filter(|r| matches!(r, Reply::Snapshot { .. }))
            .count();
        assert_eq!(queued.len() - snapshots, 1000, "every event");
        assert!(snapshots <= 1, "{snapshots} snapshots queued");
        // Caught up: the owed snapshot goes now, with nothing new having changed.
        assert_eq!(bus.next_deadline(t), Some(t));
        assert!(bus.wants_snapshot(Scope::All, false, t));
        bus.snapshot(Scope::All, &snap(), false, t);
        assert!(matches!(rx.try_recv(), Ok(Reply::Snapshot { .. })));
        assert_eq!(bus.next_deadline(t), None);
    }

    /// A reader that keeps up gets a snapshot at every change at once, however many events came
    /// before it in the same turn.
    #[test]
    fn a_reader_that_keeps_up_gets_every_snapshot_at_once() {
        let mut bus = Bus::default();
        let (tx, mut rx) = mpsc::channel(QUEUE);
        bus.add(tx, Wants::EventsAndSnapshots);
        let t = Instant::now();
        for round in 0..3 {
            for i in 0..20 {
                bus.event(&done(i), true);
            }
            assert!(bus.wants_snapshot(Scope::All, true, t), "round {round}");
            bus.snapshot(Scope::All, &snap(), true, t);
            let got: Vec<Reply> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
            assert_eq!(got.len(), 21, "round {round}");
            assert!(matches!(got.last(), Some(Reply::Snapshot { .. })));
        }
    }

    #[test]
    fn snapshots_go_only_to_those_who_follow_them() {
        let mut bus = Bus::default();
        let (a, mut ra) = mpsc::channel(QUEUE);
        let (b, mut rb) = mpsc::channel(QUEUE);
        bus.add(a, Wants::EventsAndSnapshots);
        bus.add(b, Wants::Events);
        let t = Instant::now();
        assert!(!bus.wants_snapshot(Scope::All, false, t), "nothing changed");
        assert!(bus.wants_snapshot(Scope::All, true, t));
        bus.snapshot(Scope::All, &snap(), true, t);
        assert!(matches!(ra.try_recv(), Ok(Reply::Snapshot { .. })));
        assert!(rb.try_recv().is_err());
        assert!(!bus.wants_snapshot(Scope::All, false, t), "nothing owed");
        drop(ra);
        bus.event(&done(1), true);
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
            bus.event(&done(i), true);
        }
        assert_eq!(bus.next_deadline(now), Some(now + LAG_RETRY));
        assert!(!bus.wants_snapshot(Scope::All, false, now), "no room yet");
        let _ = rx.try_recv();
        let _ = rx.try_recv();
        assert!(bus.wants_snapshot(Scope::All, false, now));
        bus.snapshot(Scope::All, &snap(), false, now);
        assert!(matches!(rx.try_recv(), Ok(Reply::Lagged { dropped: 1 })));
        assert!(matches!(rx.try_recv(), Ok(Reply::Snapshot { .. })));
        assert_eq!(bus.next_deadline(now), None);
    }

    #[test]
    fn followers_get_their_machine_s_events_paced_snapshots_and_the_decisions() {
        let mut bus = Bus::default();
        let (f, mut rf) = mpsc::channel(QUEUE);
        let (p, mut rp) = mpsc::channel(QUEUE);
        bus.add(
            f,
            Wants::Follow {
                notifications: true,
            },
        );
        bus.add(p, Wants::EventsAndSnapshots);
        assert!(bus.takes_notifications());
        let t = Instant::now();
        // A remote machine's event reaches the panel, not the follower.
        bus.event(&done(1), false);
        assert!(rf.try_recv().is_err());
        assert!(matches!(rp.try_recv(), Ok(Reply::Done { .. })));
        bus.event(&done(2), true);
        assert!(matches!(rf.try_recv(), Ok(Reply::Done { .. })));
        assert!(
            matches!(rp.try_recv(), Ok(Reply::Done { .. })),
            "local events reach all"
        );
        // Snapshots: the first at once, the next not before FOLLOW_SNAPSHOTS has passed.
        assert!(bus.wants_snapshot(Scope::Local, true, t));
        bus.snapshot(Scope::Local, &snap(), true, t);
        assert!(matches!(rf.try_recv(), Ok(Reply::Snapshot { .. })));
        let soon = t + Duration::from_millis(10);
        assert!(!bus.wants_snapshot(Scope::Local, true, soon));
        bus.snapshot(Scope::Local, &snap(), true, soon);
        assert!(rf.try_recv().is_err(), "paced");
        assert_eq!(bus.next_deadline(soon), Some(t + FOLLOW_SNAPSHOTS));
        let later = t + FOLLOW_SNAPSHOTS;
        assert!(bus.wants_snapshot(Scope::Local, false, later));
        bus.snapshot(Scope::Local, &snap(), false, later);
        assert!(matches!(rf.try_recv(), Ok(Reply::Snapshot { .. })));
        // Decisions go to the follower that takes them only.
        bus.decision(&done(3));
        assert!(matches!(rf.try_recv(), Ok(Reply::Done { .. })));
        assert!(rp.try_recv().is_err());
        drop(rf);
        bus.decision(&done(4));
        assert!(!bus.takes_notifications());
    }
}
