//! The `/proc` files of a pane's cheap looks ([`foreground::look`]), kept open from one look to
//! the next: a look is then one `pread` of each file, where opening it by its path each time
//! took a path walk, two reads and a close (8 system calls for a shell's look, 2 now). A
//! descriptor stays bound to the process it was opened for: once that process is gone its
//! reads fail (`ESRCH`), even if the number is taken again, and the file is opened again by
//! its path, once, so a look sees what a look by path would.
//!
//! A server's panes could hold more descriptors this way than the daemon may open (each pane
//! also has its pipe), so at most [`budget`] files are kept open across all panes; a look past
//! it reads by path as before.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::foreground::{name_tpgid, Look, PROC_READ};

/// Files kept open now, by every pane's looks.
static KEPT: AtomicUsize = AtomicUsize::new(0);

/// How many files all looks keep open at most: a quarter of the daemon's descriptor limit, and
/// no more than 512 (two or three per pane: a server of 200 panes keeps every one).
pub fn budget() -> usize {
    static BUDGET: OnceLock<usize> = OnceLock::new();
    *BUDGET.get_or_init(|| {
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        limit.map_or(512, |l| usize::try_from(l / 4).unwrap_or(512).min(512))
    })
}

/// Which file of a process.
#[derive(Clone, Copy, Debug)]
enum Which {
    Stat,
    Children,
}

impl Which {
    fn path(self, pid: u32) -> String {
        match self {
            Which::Stat => format!("/proc/{pid}/stat"),
            Which::Children => format!("/proc/{pid}/task/{pid}/children"),
        }
    }
}

/// One file of one process, open while the budget allows.
#[derive(Debug, Default)]
struct Kept {
    pid: u32,
    file: Option<File>,
}

impl Kept {
    /// Reads `which` of `pid` into `buf`; false when it cannot be read (the process is gone).
    fn read(&mut self, pid: u32, which: Which, buf: &mut Vec<u8>) -> bool {
        if self.pid != pid {
            self.close();
            self.pid = pid;
        }
        if let Some(f) = &self.file {
            if read_from_start(f, buf) {
                return true;
            }
            // Its process is gone: a process with its number is read by path, once.
            self.close();
        }
        let Ok(f) = File::open(which.path(pid)) else {
            return false;
        };
        if !read_from_start(&f, buf) {
            return false;
        }
        if KEPT.fetch_add(1, Ordering::Relaxed) < budget() {
            self.file = Some(f);
        } else {
            KEPT.fetch_sub(1, Ordering::Relaxed);
        }
        true
    }

    fn close(&mut self) {
        if self.file.take().is_some() {
            KEPT.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        self.close();
    }
}

/// The whole file, read from its start with `pread`: procfs makes these files anew at offset
/// 0, and fills all the room a read gives while it has text, so a read that leaves room is
/// the end (one system call for a `stat` or a short list of children).
fn read_from_start(f: &File, buf: &mut Vec<u8>) -> bool {
    buf.clear();
    buf.resize(PROC_READ, 0);
    let mut n = 0;
    loop {
        match f.read_at(&mut buf[n..], n as u64) {
            Ok(k) => {
                n += k;
                if n < buf.len() {
                    break;
                }
                buf.resize(buf.len() * 2, 0);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    buf.truncate(n);
    true
}

/// One pane's look files: its first process's `stat` and children, and the foreground job
/// leader's `stat` when that is another process.
#[derive(Debug, Default)]
pub struct LookFiles {
    first: Kept,
    children: Kept,
    leader: Kept,
}

impl LookFiles {
    /// [`super::foreground::look`] at a pane whose first process is `pane_pid`, through the
    /// kept files.
    pub fn look(&mut self, pane_pid: u32) -> Look {
        thread_local! {
            /// One buffer per thread, not per pane.
            static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        SCRATCH.with_borrow_mut(|buf| {
            let first = self
                .first
                .read(pane_pid, Which::Stat, buf)
                .then(|| name_tpgid(buf))
                .flatten();
            let Some((name, tpgid)) = first else {
                // The process is gone: nothing of it is kept.
                self.children.close();
                self.leader.close();
                return Look::default();
            };
            let leader = match tpgid {
                Some(t) if t != pane_pid => {
                    let read = self.leader.read(t, Which::Stat, buf);
                    read.then(|| name_tpgid(buf))
                        .flatten()
                        .map(|(n, _)| n)
                        .unwrap_or_default()
                }
                _ => {
                    self.leader.close();
                    name
                }
            };
            let children = if self.children.read(pane_pid, Which::Children, buf) {
                String::from_utf8(buf.clone()).unwrap_or_default()
            } else {
                String::new()
            };
            Look {
                tpgid,
                leader,
                children,
            }
        })
    }
}

#[cfg(test)]
#[path = "look_files_tests.rs"]
mod tests;
