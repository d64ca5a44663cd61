//! One timer for every deadline of the daemon and its control-client readers: a `timerfd` set to
//! the earliest instant anyone waits for. Waiters at the same instant wake together, in one
//! wake-up of the process.
//!
//! Why not tokio's timer: its wheel keeps deadlines more than a 64 ms block away on a coarser
//! level and wakes the process at the block's start to move them down, then again at the
//! deadline. The readers and capture rounds wait 50–100 ms at a time, so about every other wait
//! cost a wake-up that did nothing (measured: one every 64 ms under five drawing agents).
//! Falls back to tokio's timer where no `timerfd` can be made.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use rustix::time::{
    clock_gettime, timerfd_create, timerfd_settime, ClockId, Itimerspec, TimerfdClockId,
    TimerfdFlags, TimerfdTimerFlags, Timespec,
};
use tokio::net::unix::pipe;
use tokio::sync::Notify;

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
    state: Mutex<State>,
    /// Told when an instant earlier than the armed one is wanted.
    earlier: Notify,
}

/// What the timer task and its waiters share.
#[derive(Debug, Default)]
struct State {
    /// The waits, by instant and a number of their own, each with its task's waker: a
    /// wake-up wakes the tasks whose instants came, and no other.
    wanted: BTreeMap<(Instant, u64), Waker>,
    /// The last number given to a wait.
    last_id: u64,
    /// The latest instant reached (every waiter at or before it may go).
    reached: Option<Instant>,
    /// How many waits the wake-up that reached it let go.
    company: usize,
    /// The timer broke: every waiter falls back to tokio's timer.
    broken: bool,
}

impl Inner {
    fn state(&self) -> Option<MutexGuard<'_, State>> {
        self.state.lock().ok()
    }
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
                let inner = Arc::new(Inner {
                    state: Mutex::new(State {
                        reached: Some(Instant::now()),
                        ..State::default()
                    }),
                    earlier: Notify::new(),
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
        if at <= Instant::now() {
            return;
        }
        let broken = Wait {
            inner,
            at,
            id: None,
        }
        .await;
        // A broken timerfd must not leave anyone waiting forever.
        if broken {
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
        self.inner
            .as_ref()
            .and_then(|inner| inner.state())
            .is_some_and(|s| s.reached.is_some_and(|r| r >= at) && s.company >= 2)
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

/// One wait for an instant: registered with its task's waker at its first poll, gone from the
/// wanted set when dropped. Its output says whether the timer broke.
struct Wait<'a> {
    inner: &'a Inner,
    at: Instant,
    id: Option<u64>,
}

impl Future for Wait<'_> {
    type Output = bool;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let at = self.at;
        let Some(mut s) = self.inner.state() else {
            return Poll::Ready(true);
        };
        if s.broken || s.reached.is_some_and(|r| r >= at) {
            return Poll::Ready(s.broken);
        }
        let id = match self.id {
            Some(id) => id,
            None => {
                s.last_id += 1;
                s.last_id
            }
        };
        let first = s.wanted.keys().next().is_none_or(|f| at < f.0);
        match s.wanted.entry((at, id)) {
            Entry::Occupied(mut e) => {
                if !e.get().will_wake(cx.waker()) {
                    e.insert(cx.waker().clone());
                }
            }
            Entry::Vacant(e) => {
                e.insert(cx.waker().clone());
                if first {
                    self.inner.earlier.notify_one();
                }
            }
        }
        drop(s);
        self.id = Some(id);
        Poll::Pending
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        if let (Some(id), Some(mut s)) = (self.id, self.inner.state()) {
            s.wanted.remove(&(self.at, id));
        }
    }
}

async fn run(fd: pipe::Receiver, shared: Arc<Inner>) {
    let mut armed: Option<Instant> = None;
    loop {
        let first = shared
            .state()
            .and_then(|s| s.wanted.keys().next().map(|k| k.0));
        if first != armed {
            if arm(&fd, first).is_err() {
                tracing::warn!("cannot set the timerfd: using tokio's timer");
                break_down(&shared);
                return;
            }
            armed = first;
        }
        tokio::select! {
            ready = fd.readable() => {
                if ready.is_err() {
                    break_down(&shared);
                    return;
                }
                // One read resets the expiry count. The timer is one-shot and only this task
                // arms it, so it cannot fire again before the next arming: the read says
                // `WouldBlock` to the runtime even when it took the count, which forgets the
                // readiness at once instead of a second read that would find nothing.
                let mut fired = false;
                let read = fd.try_io(|| {
                    let mut count = [0u8; 8];
                    fired = rustix::io::read(&fd, &mut count)? > 0;
                    Err::<(), _>(std::io::ErrorKind::WouldBlock.into())
                });
                match read {
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    _ => {
                        tracing::warn!(?read, "cannot read the timerfd: using tokio's timer");
                        break_down(&shared);
                        return;
                    }
                }
                if fired {
                    armed = None;
                    release(&shared, Instant::now() + EARLY);
                    // The woken waiters run first and ask for their next instants: the timer
                    // is then armed once, for the earliest of them.
                    after_the_woken().await;
                }
            }
            _ = shared.earlier.notified() => {}
        }
    }
}

/// Lets the tasks woken so far run before this task goes on: they are ahead of it in the run
/// queue. Unlike `tokio::task::yield_now`, which waits for the runtime to look at its I/O
/// first (a system call with nothing to find, at every wake-up of the timer). Meant for spawned
/// tasks: in the future `block_on` polls, the order holds too, but its wake-up makes the
/// runtime look at its I/O all the same.
pub async fn after_the_woken() {
    let mut queued = false;
    std::future::poll_fn(|cx| {
        if queued {
            Poll::Ready(())
        } else {
            queued = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await
}

/// Lets every waiter at or before `now` go: they leave the wanted set at once, so the timer is
/// armed next for an instant someone still waits for. Only their tasks are woken.
fn release(shared: &Inner, now: Instant) {
    let Some(mut s) = shared.state() else {
        return;
    };
    let later = s.wanted.split_off(&(now, 0));
    let due = std::mem::replace(&mut s.wanted, later);
    if let Some(&(t, _)) = due.keys().next_back() {
        if s.reached.is_none_or(|r| t > r) {
            s.reached = Some(t);
            s.company = due.len();
        }
    }
    drop(s);
    due.into_values().for_each(Waker::wake);
}

/// The timer broke: every waiter, now and later, uses tokio's timer.
fn break_down(shared: &Inner) {
    let Some(mut s) = shared.state() else {
        return;
    };
    s.broken = true;
    let all = std::mem::take(&mut s.wanted);
    drop(s);
    all.into_values().for_each(Waker::wake);
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

    /// A task that wakes others and then awaits `after_the_woken` goes on after them (without
    /// the wait, it would go on first).
    #[test]
    fn after_the_woken_lets_the_woken_tasks_run_first() {
        rt().block_on(async {
            let order = Arc::new(Mutex::new(Vec::new()));
            let gates: Vec<_> = (0..2)
                .map(|_| Arc::new(tokio::sync::Notify::new()))
                .collect();
            let mut tasks = Vec::new();
            for (name, gate) in ["b", "c"].into_iter().zip(&gates) {
                let (gate, order) = (gate.clone(), order.clone());
                tasks.push(tokio::spawn(async move {
                    gate.notified().await;
                    order.lock().expect("not poisoned").push(name);
                }));
            }
            let waker = {
                let order = order.clone();
                tokio::spawn(async move {
                    // Let b and c wait first.
                    after_the_woken().await;
                    for g in &gates {
                        g.notify_one();
                    }
                    after_the_woken().await;
                    order.lock().expect("not poisoned").push("x");
                })
            };
            waker.await.expect("joined");
            for t in tasks {
                t.await.expect("joined");
            }
            assert_eq!(*order.lock().expect("not poisoned"), ["b", "c", "x"]);
        });
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

    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// A future that counts how often it is polled.
    struct Counted<F> {
        fut: Pin<Box<F>>,
        polls: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl<F: Future> Future for Counted<F> {
        type Output = F::Output;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
            self.polls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.fut.as_mut().poll(cx)
        }
    }

    #[test]
    fn a_wake_up_wakes_only_the_waits_whose_instant_came() {
        rt().block_on(async {
            let timer = Timer::start();
            let t0 = Instant::now();
            let polls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let late = tokio::spawn(Counted {
                fut: Box::pin({
                    let timer = timer.clone();
                    async move { timer.sleep_until(t0 + Duration::from_millis(300)).await }
                }),
                polls: polls.clone(),
            });
            // Three earlier wake-ups while the late wait waits.
            for ms in [20, 40, 60] {
                timer.sleep_until(t0 + Duration::from_millis(ms)).await;
            }
            let between = polls.load(std::sync::atomic::Ordering::Relaxed);
            late.await.expect("the task ran");
            assert_eq!(between, 1, "polled only when it first waited");
            assert_eq!(polls.load(std::sync::atomic::Ordering::Relaxed), 2);
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
            assert!(inner.state().expect("not poisoned").wanted.is_empty());
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
            break_down(inner);
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
