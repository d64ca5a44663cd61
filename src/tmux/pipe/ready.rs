//! Which of the pipes read on the read grid hold bytes, asked once per grid instant for all of
//! them (issue 18). A pipe whose pane keeps drawing is not watched by the runtime (a write would
//! wake the process each time) but read at each instant of the read grid; of five agents that
//! draw, a grid instant found one or two pipes with bytes, and the reads of the others were
//! system calls that found nothing. The unwatched pipes sit in an `epoll` set of their own,
//! level-triggered, which nobody waits on (so a write wakes no one): the first reader of a grid
//! instant asks it, with no wait, which pipes hold bytes (or were closed), and every reader of
//! that instant reads only if its pipe is among them.
//!
//! Where no set can be made, or asking it fails, every pipe counts as holding bytes: the reads
//! are as they were without it.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rustix::event::epoll;

/// The shared set; cheap to clone.
#[derive(Clone, Debug, Default)]
pub(super) struct GridReady {
    inner: Option<Arc<Mutex<Inner>>>,
}

#[derive(Debug)]
struct Inner {
    set: OwnedFd,
    /// The instant the set was last asked at, and the pipes (serials) it said hold bytes.
    asked: Option<Instant>,
    ready: Vec<u64>,
    /// Room for the set's answer (it grows when an answer fills it).
    room: usize,
}

/// The room an answer starts with.
const FIRST_ROOM: usize = 16;

impl GridReady {
    /// A new, empty set; without one (`epoll` refused), every pipe counts as holding bytes.
    pub(super) fn new() -> GridReady {
        match epoll::create(epoll::CreateFlags::CLOEXEC) {
            Ok(set) => GridReady {
                inner: Some(Arc::new(Mutex::new(Inner {
                    set,
                    asked: None,
                    ready: Vec::new(),
                    room: FIRST_ROOM,
                }))),
            },
            Err(e) => {
                tracing::debug!(error = %e, "no epoll set for the grid's reads: every pipe is read");
                GridReady::default()
            }
        }
    }

    /// Puts pipe `serial` in the set (it is read on the grid from now on). False when it could
    /// not be added: it then counts as holding bytes.
    pub(super) fn add(&self, serial: u64, pipe: impl AsFd) -> bool {
        let Some(mut s) = self.inner.as_ref().and_then(|i| i.lock().ok()) else {
            return false;
        };
        let flags = epoll::EventFlags::IN | epoll::EventFlags::RDHUP;
        match epoll::add(&s.set, pipe, epoll::EventData::new_u64(serial), flags) {
            Ok(()) => {
                s.asked = None;
                true
            }
            Err(e) => {
                tracing::debug!(error = %e, serial, "cannot add a pipe to the grid's set: it is read at each instant");
                false
            }
        }
    }

    /// Takes a pipe out of the set (the runtime watches it again, or it is let go). A pipe
    /// that is closed leaves the set by itself (its reader aborted, say).
    pub(super) fn remove(&self, pipe: impl AsFd) {
        let Some(mut s) = self.inner.as_ref().and_then(|i| i.lock().ok()) else {
            return;
        };
        if epoll::delete(&s.set, pipe).is_ok() {
            s.asked = None;
        }
    }

    /// Whether pipe `serial` (in the set) holds bytes or was closed, as of grid instant `at`:
    /// the set is asked once per instant, with no wait. True when the set cannot tell.
    pub(super) fn holds(&self, serial: u64, at: Instant) -> bool {
        let Some(mut s) = self.inner.as_ref().and_then(|i| i.lock().ok()) else {
            return true;
        };
        if s.asked != Some(at) {
            let zero = rustix::time::Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            let events = loop {
                let mut events = Vec::with_capacity(s.room);
                if epoll::wait(
                    &s.set,
                    rustix::buffer::spare_capacity(&mut events),
                    Some(&zero),
                )
                .is_err()
                {
                    return true;
                }
                // An answer that filled the room may have left pipes out: ask again with more.
                if events.len() < s.room {
                    break events;
                }
                s.room *= 2;
            };
            s.ready.clear();
            s.ready.extend(events.iter().map(|e| e.data.u64()));
            s.asked = Some(at);
        }
        s.ready.contains(&serial)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;
    use std::os::unix::net::UnixStream;

    #[test]
    fn the_set_tells_which_pipes_hold_bytes_once_per_instant() {
        let ready = GridReady::new();
        let (a, mut a_peer) = UnixStream::pair().expect("pair");
        let (b, b_peer) = UnixStream::pair().expect("pair");
        let (c, mut c_peer) = UnixStream::pair().expect("pair");
        assert!(ready.add(1, &a));
        assert!(ready.add(2, &b));
        let t0 = Instant::now();
        assert!(!ready.holds(1, t0) && !ready.holds(2, t0));
        a_peer.write_all(b"x").expect("write");
        // The answer for an instant is kept: what came after it is seen at the next one.
        assert!(!ready.holds(1, t0));
        let t1 = t0 + std::time::Duration::from_millis(1);
        assert!(ready.holds(1, t1) && !ready.holds(2, t1));
        // A closed peer counts: the read finds the end.
        drop(b_peer);
        let t2 = t1 + std::time::Duration::from_millis(1);
        assert!(ready.holds(1, t2) && ready.holds(2, t2));
        // A pipe taken out is not reported, whatever it holds; one added is.
        ready.remove(&a);
        c_peer.write_all(b"y").expect("write");
        assert!(ready.add(3, &c));
        let t3 = t2 + std::time::Duration::from_millis(1);
        assert!(!ready.holds(1, t3) && ready.holds(3, t3));
    }

    #[test]
    fn more_pipes_with_bytes_than_the_first_room_are_all_told() {
        let ready = GridReady::new();
        let pairs: Vec<_> = (0..FIRST_ROOM as u64 + 5)
            .map(|serial| {
                let (ours, mut theirs) = UnixStream::pair().expect("pair");
                assert!(ready.add(serial, &ours));
                theirs.write_all(b"z").expect("write");
                (serial, ours, theirs)
            })
            .collect();
        let at = Instant::now();
        for (serial, _, _) in &pairs {
            assert!(ready.holds(*serial, at), "pipe {serial}");
        }
    }

    #[test]
    fn without_a_set_every_pipe_holds_bytes() {
        let ready = GridReady::default();
        let (a, _peer) = UnixStream::pair().expect("pair");
        assert!(!ready.add(1, &a));
        assert!(ready.holds(1, Instant::now()));
    }
}
