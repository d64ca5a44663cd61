//! One timer for every deadline of the daemon and its control-client readers: a `timerfd` set to
//! the earliest instant anyone waits for. Waiters at the same instant wake together, in one
//! wake-up of the process.
//!
//! Why not tokio's timer: its wheel keeps deadlines more than a 64 ms block away on a coarser
//! level and wakes the process at the block's start to move them down, then again at the
//! deadline. The readers and capture rounds wait 50–100 ms at a time, so about every other wait
//! cost a wake-up that did nothing (measured: one every 64 ms under five drawing agents).
//! Falls back to tokio's timer where no `timerfd` can be made.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::time::{
    clock_gettime, timerfd_create, timerfd_settime, ClockId, Itimerspec, TimerfdClockId,
    TimerfdFlags, TimerfdTimerFlags, Timespec,
};
use tokio::net::unix::pipe;
use tokio::sync::{watch, Notify};

/// A waiter counts as woken when its instant is at most this far ahead of the clock: the
/// `timerfd` and [`Instant`] read the same clock at slightly different moments.
const EARLY: Duration = Duration::from_millis(1);

/// Wakes tasks at instants, with one `timerfd`. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Timer {
    inner: Option<Arc<Inner>>,
}

#[derive(Debug)]
struct Inner {
    /// Instants waited for, with how many wait for each.
    wanted: Mutex<BTreeMap<Instant, usize>>,
    /// Told when an instant earlier than the armed one is wanted.
    earlier: Notify,
    /// The latest instant reached (every waiter at or before it may go), or that the timer
    /// broke (every waiter falls back to tokio's timer).
    reached: watch::Sender<Reached>,
}

impl Timer {
    /// Starts the timer task on the current runtime; without a `timerfd`, waits use tokio's
    /// timer.
    pub fn start() -> Timer {
        let fd = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )
        .map_err(std::io::Error::from)
        // tokio's unchecked pipe reader is a registered, non-blocking, readable descriptor and
        // nothing more: it reads the timerfd's 8-byte count without an `unsafe` registration.
        .and_then(pipe::Receiver::from_owned_fd_unchecked);
        match fd {
            Ok(fd) => {
                let (reached, _) = watch::channel(Reached {
                    at: Instant::now(),
                    broken: false,
                    company: 0,
                });
                let inner = Arc::new(Inner {
                    wanted: Mutex::default(),
                    earlier: Notify::new(),
                    reached,
                });
                tokio::spawn(run(fd, inner.clone()));
                Timer { inner: Some(inner) }
            }
            Err(e) => {
                tracing::debug!(error = %e, "no timerfd: using tokio's timer");
                Timer::tokio()
            }
        }
    }

    /// A timer that uses tokio's (no task of its own).
    pub fn tokio() -> Timer {
        Timer { inner: None }
    }

    /// Waits until `at`. Cancel-safe: a dropped wait no longer arms the timer.
    pub async fn sleep_until(&self, at: Instant) {
        let Some(inner) = &self.inner else {
            tokio::time::sleep_until(at.into()).await;
            return;
        };
        let mut reached = inner.reached.subscribe();
        let now = *reached.borrow();
        if now.at >= at || at <= Instant::now() {
            return;
        }
        if !now.broken {
            let _wait = Wait::new(inner, at);
            // The sender lives as long as `inner`, which we hold.
            let _ = reached.wait_for(|r| r.broken || r.at >= at).await;
        }
        // A broken timerfd must not leave anyone waiting forever.
        if reached.borrow().broken {
            tokio::time::sleep_until(at.into()).await;
        }
    }
}

impl Timer {
    /// Whether the wake-up that let a wait for `at` go let another wait go with it (the latest
    /// wake-up, if a later one came since): a task that can choose to wait for the next instant
    /// of a grid or for its own event learns whether waiting on the grid joins wake-ups the
    /// process makes anyway. False with tokio's timer.
    pub fn woke_in_company(&self, at: Instant) -> bool {
        self.inner.as_ref().is_some_and(|inner| {
            let r = *inner.reached.borrow();
            r.at >= at && r.company >= 2
        })
    }

    /// `fut`'s output, or `None` when it takes longer than `limit`. The limit is one of this
    /// timer's instants: a time limit that is not reached (the usual case) costs no wake-up and
    /// no tokio timer.
    pub async fn timeout<T>(
        &self,
        limit: Duration,
        fut: impl std::future::Future<Output = T>,
    ) -> Option<T> {
        let at = Instant::now() + limit;
        tokio::select! {
            biased;
            out = fut => Some(out),
            () = self.sleep_until(at) => None,
        }
    }
}

/// What the timer task tells its waiters.
#[derive(Clone, Copy, Debug)]
struct Reached {
    at: Instant,
    broken: bool,
    /// How many waits the wake-up that reached `at` let go.
    company: usize,
}

/// One registered wait; deregisters when dropped.
struct Wait<'a> {
    inner: &'a Inner,
    at: Instant,
}

impl<'a> Wait<'a> {
    fn new(inner: &'a Inner, at: Instant) -> Wait<'a> {
        if let Ok(mut w) = inner.wanted.lock() {
            let first = w.keys().next().is_none_or(|f| at < *f);
            *w.entry(at).or_insert(0) += 1;
            if first {
                inner.earlier.notify_one();
            }
        }
        Wait { inner, at }
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        if let Ok(mut w) = self.inner.wanted.lock() {
            if let Some(n) = w.get_mut(&self.at) {
                *n -= 1;
                if *n == 0 {
                    w.remove(&self.at);
                }
            }
        }
    }
}

async fn run(fd: pipe::Receiver, shared: Arc<Inner>) {
    let mut armed: Option<Instant> = None;
    loop {
        let first = shared
            .wanted
            .lock()
            .ok()
            .and_then(|w| w.keys().next().copied());
        if first != armed {
            if arm(&fd, first).is_err() {
                tracing::warn!("cannot set the timerfd: using tokio's timer");
                shared.reached.send_modify(|r| r.broken = true);
                return;
            }
            armed = first;
        }
        tokio::select! {
            ready = fd.readable() => {
                if ready.is_err() {
                    shared.reached.send_modify(|r| r.broken = true);
                    return;
                }
                // Reading resets the expiry count; reading on to `WouldBlock` lets the runtime
                // wait for the next expiry.
                let mut count = [0u8; 8];
                let mut fired = false;
                while fd.try_read(&mut count).is_ok_and(|n| n > 0) {
                    fired = true;
                }
                if fired {
                    armed = None;
                    release(&shared, Instant::now() + EARLY);
                    // The woken waiters run first and ask for their next instants: the timer
                    // is then armed once, for the earliest of them.
                    tokio::task::yield_now().await;
                }
            }
            _ = shared.earlier.notified() => {}
        }
    }
}

/// Lets every waiter at or before `now` go: they leave the wanted set at once, so the timer is
/// armed next for an instant someone still waits for.
fn release(shared: &Inner, now: Instant) {
    let Ok(mut wanted) = shared.wanted.lock() else {
        return;
    };
    let later = wanted.split_off(&now);
    let due = wanted.keys().next_back().copied();
    let company = wanted.values().sum();
    *wanted = later;
    drop(wanted);
    if let Some(t) = due {
        shared.reached.send_if_modified(|r| {
            let moved = t > r.at;
            if moved {
                r.at = t;
                r.company = company;
            }
            moved
        });
    }
}

/// Sets the `timerfd` to fire at `at` (never, for `None`).
fn arm(fd: &impl std::os::fd::AsFd, at: Option<Instant>) -> rustix::io::Result<()> {
    let value = match at {
        None => Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        Some(at) => {
            let now = Instant::now();
            let mono = clock_gettime(ClockId::Monotonic);
            let ahead = at.saturating_duration_since(now);
            // Zero would disarm: a deadline already passed fires in one nanosecond.
            add(mono, ahead.max(Duration::from_nanos(1)))
        }
    };
    let spec = Itimerspec {
        it_interval: Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: value,
    };
    timerfd_settime(fd, TimerfdTimerFlags::ABSTIME, &spec).map(|_| ())
}

fn add(t: Timespec, d: Duration) -> Timespec {
    let nanos = i64::from(d.subsec_nanos()) + t.tv_nsec;
    let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX / 2);
    Timespec {
        tv_sec: t
            .tv_sec
            .saturating_add(secs)
            .saturating_add(nanos / 1_000_000_000),
        tv_nsec: nanos % 1_000_000_000,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    }

    #[test]
    fn wakes_at_the_instant_and_not_before() {
        rt().block_on(async {
            let timer = Timer::start();
            let start = Instant::now();
            let at = start + Duration::from_millis(30);
            timer.sleep_until(at).await;
            let now = Instant::now();
            assert!(now + EARLY >= at, "woke {:?} early", at - now);
        });
    }

    #[test]
    fn waiters_at_one_instant_all_wake_and_an_earlier_one_first() {
        rt().block_on(async {
            let timer = Timer::start();
            let t0 = Instant::now();
            let late = t0 + Duration::from_millis(60);
            let early = t0 + Duration::from_millis(20);
            let order = Arc::new(Mutex::new(Vec::new()));
            let mut tasks = Vec::new();
            for (name, at) in [("late1", late), ("late2", late), ("early", early)] {
                let (timer, order) = (timer.clone(), order.clone());
                tasks.push(tokio::spawn(async move {
                    timer.sleep_until(at).await;
                    order.lock().expect("not poisoned").push(name);
                }));
            }
            for t in tasks {
                t.await.expect("the task ran");
            }
            let order = order.lock().expect("not poisoned").clone();
            assert_eq!(order.first(), Some(&"early"));
            assert_eq!(order.len(), 3);
            assert!(Instant::now() + EARLY >= late);
        });
    }

    #[test]
    fn a_wait_learns_whether_its_wake_up_let_another_wait_go() {
        rt().block_on(async {
            let timer = Timer::start();
            let t0 = Instant::now();
            // Alone at its instant.
            let alone = t0 + Duration::from_millis(20);
            timer.sleep_until(alone).await;
            assert!(!timer.woke_in_company(alone));
            // Two at one instant: each learns of the other.
            let together = t0 + Duration::from_millis(50);
            let wait = || async {
                timer.sleep_until(together).await;
                timer.woke_in_company(together)
            };
            let (a, b) = tokio::join!(wait(), wait());
            assert!(a && b);
            // Alone again at a later instant.
            let later = t0 + Duration::from_millis(80);
            timer.sleep_until(later).await;
            assert!(!timer.woke_in_company(later));
            // tokio's timer tells nothing.
            assert!(!Timer::tokio().woke_in_company(later));
        });
    }

    #[test]
    fn a_dropped_wait_no_longer_arms_the_timer() {
        rt().block_on(async {
            let timer = Timer::start();
            let at = Instant::now() + Duration::from_millis(10);
            let _ = tokio::time::timeout(Duration::from_millis(1), timer.sleep_until(at)).await;
            let inner = timer.inner.as_ref().expect("a timerfd here");
            assert!(inner.wanted.lock().expect("not poisoned").is_empty());
            // A later wait still works after the abandoned one.
            timer.sleep_until(at + Duration::from_millis(5)).await;
            assert!(Instant::now() + EARLY >= at + Duration::from_millis(5));
        });
    }

    #[test]
    fn a_passed_instant_returns_at_once() {
        rt().block_on(async {
            let timer = Timer::start();
            let past = Instant::now();
            tokio::time::timeout(Duration::from_secs(1), timer.sleep_until(past))
                .await
                .expect("no wait for a passed instant");
        });
    }

    #[test]
    fn waiters_fall_back_to_tokio_when_the_timerfd_breaks() {
        rt().block_on(async {
            let timer = Timer::start();
            let at = Instant::now() + Duration::from_millis(20);
            let waiter = {
                let timer = timer.clone();
                tokio::spawn(async move { timer.sleep_until(at).await })
            };
            tokio::task::yield_now().await;
            let inner = timer.inner.as_ref().expect("a timerfd here");
            inner.reached.send_modify(|r| r.broken = true);
            tokio::time::timeout(Duration::from_secs(2), waiter)
                .await
                .expect("the waiter still wakes")
                .expect("the task ran");
            assert!(Instant::now() >= at);
            // Later waits go straight to tokio's timer.
            timer.sleep_until(at + Duration::from_millis(5)).await;
        });
    }

    #[test]
    fn tokio_fallback_waits_too() {
        rt().block_on(async {
            let at = Instant::now() + Duration::from_millis(5);
            Timer::tokio().sleep_until(at).await;
            assert!(Instant::now() >= at);
        });
    }
}
