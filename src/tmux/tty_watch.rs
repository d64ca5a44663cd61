//! Writes to a pane's terminal seen without taking its bytes: `inotify` `IN_MODIFY` on the
//! pane's tty (`/dev/pts/N`, tmux's `#{pane_tty}`), which the kernel reports for each write of
//! the program there. It costs tmux nothing (tmux reads the other end, the pty's master).
//!
//! Used for a pane whose pipe is held closed while it floods and nothing reads its bytes
//! (`daemon::flood`): the daemon still knows whether it wrote when it needs to (the terminal
//! notes wait for a still window, `daemon::terminal`). Nothing wakes the daemon for these
//! events: it drains them when it looks ([`TtyWatch::drain`]). Between two drains the kernel
//! merges a pane's writes into one pending event (and past its queue's bound reports an
//! overflow, read as "every watched pane wrote"), so a flood of a million writes a second costs
//! the daemon nothing until it asks.
//!
//! Owns: the inotify descriptor (made at the first watch) and its watches.

use std::collections::HashMap;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::inotify;

use crate::ids::PaneId;

/// The watched panes' terminals.
#[derive(Debug)]
pub struct TtyWatch {
    fd: OwnedFd,
    by_pane: HashMap<PaneId, i32>,
    by_wd: HashMap<i32, PaneId>,
}

impl TtyWatch {
    /// Makes the inotify descriptor (non-blocking).
    pub fn new() -> io::Result<TtyWatch> {
        let fd = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)?;
        Ok(TtyWatch {
            fd,
            by_pane: HashMap::new(),
            by_wd: HashMap::new(),
        })
    }

    /// Watches `pane`'s terminal at `tty`.
    pub fn watch(&mut self, pane: PaneId, tty: &Path) -> io::Result<()> {
        self.unwatch(pane);
        let wd = inotify::add_watch(&self.fd, tty, inotify::WatchFlags::MODIFY)?;
        // Two panes never share a tty; a watch of the same file twice gets the same descriptor.
        if let Some(other) = self.by_wd.insert(wd, pane) {
            self.by_pane.remove(&other);
        }
        self.by_pane.insert(pane, wd);
        Ok(())
    }

    /// Stops watching `pane`'s terminal (nothing if it is not watched).
    pub fn unwatch(&mut self, pane: PaneId) {
        if let Some(wd) = self.by_pane.remove(&pane) {
            self.by_wd.remove(&wd);
            // Fails when the kernel already dropped the watch (the tty closed): nothing to do.
            let _ = inotify::remove_watch(&self.fd, wd);
        }
    }

    /// Whether `pane`'s terminal is watched.
    pub fn watches(&self, pane: PaneId) -> bool {
        self.by_pane.contains_key(&pane)
    }

    /// The watched panes that wrote since the last drain (each once). Never blocks.
    pub fn drain(&mut self) -> Vec<PaneId> {
        let mut wds: Vec<i32> = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match rustix::io::read(&self.fd, &mut buf) {
                Ok(0) => break,
                Ok(n) => watches_in(&buf[..n], &mut wds),
                Err(rustix::io::Errno::INTR) => {}
                // AGAIN: nothing more; anything else: nothing readable either.
                Err(_) => break,
            }
        }
        if wds.contains(&OVERFLOW) {
            return self.by_pane.keys().copied().collect();
        }
        wds.iter()
            .filter_map(|wd| self.by_wd.get(wd).copied())
            .collect()
    }
}

/// The watch descriptor of the kernel's "events were dropped" record (`IN_Q_OVERFLOW`).
const OVERFLOW: i32 = -1;

/// Adds the watch descriptors of the `inotify_event` records in `bytes` to `wds` (each once).
/// A record is `wd: i32, mask: u32, cookie: u32, len: u32` in the machine's byte order, then
/// `len` bytes of name (none for a watched file); the kernel never splits one between reads.
fn watches_in(bytes: &[u8], wds: &mut Vec<i32>) {
    let mut at = 0;
    while let Some(head) = bytes.get(at..at + 16) {
        let word = |k: usize| [head[k], head[k + 1], head[k + 2], head[k + 3]];
        let wd = i32::from_ne_bytes(word(0));
        let len = u32::from_ne_bytes(word(12)) as usize;
        if !wds.contains(&wd) {
            wds.push(wd);
        }
        at += 16 + len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(wd: i32, name: &[u8]) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&wd.to_ne_bytes());
        r.extend_from_slice(&2u32.to_ne_bytes());
        r.extend_from_slice(&0u32.to_ne_bytes());
        r.extend_from_slice(&(name.len() as u32).to_ne_bytes());
        r.extend_from_slice(name);
        r
    }

    #[test]
    fn records_are_read_whole_and_each_watch_once() {
        let mut bytes = record(3, b"");
        bytes.extend(record(5, b"name\0\0\0\0"));
        bytes.extend(record(3, b""));
        bytes.extend(record(7, b""));
        let mut wds = Vec::new();
        watches_in(&bytes, &mut wds);
        assert_eq!(wds, [3, 5, 7]);
    }

    /// Each write to a watched file is seen at the next drain, merged, and none after the
    /// watch ends (a pane's terminal is a character device; the daemon's tests watch real ones
    /// in tmux).
    #[test]
    fn writes_to_a_watched_file_are_seen_until_unwatched() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, b"").unwrap();
        std::fs::write(&b, b"").unwrap();
        let mut w = TtyWatch::new().unwrap();
        w.watch(PaneId(4), &a).unwrap();
        w.watch(PaneId(9), &b).unwrap();
        assert!(w.watches(PaneId(4)) && w.watches(PaneId(9)));
        assert_eq!(w.drain(), []);
        let mut fa = std::fs::OpenOptions::new().append(true).open(&a).unwrap();
        for _ in 0..50 {
            std::io::Write::write_all(&mut fa, b"x").unwrap();
        }
        assert_eq!(w.drain(), [PaneId(4)]);
        assert_eq!(w.drain(), [], "drained");
        w.unwatch(PaneId(4));
        assert!(!w.watches(PaneId(4)));
        std::io::Write::write_all(&mut fa, b"y").unwrap();
        std::fs::write(&b, b"z").unwrap();
        assert_eq!(w.drain(), [PaneId(9)]);
    }
}
