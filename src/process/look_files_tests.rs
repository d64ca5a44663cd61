//! Tests of [`super`] against real processes.

use super::*;
use crate::process::foreground;
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn fd(k: &Kept) -> Option<i32> {
    k.file.as_ref().map(AsRawFd::as_raw_fd)
}

/// `sh` running one `sleep` and then another: its children change while it runs.
fn two_sleeps() -> std::process::Child {
    Command::new("sh")
        .args(["-c", "sleep 0.3; sleep 30; true"])
        .stdin(Stdio::null())
        .spawn()
        .expect("sh")
}

#[test]
fn a_kept_look_sees_what_a_look_by_path_sees_and_keeps_seeing_it_fresh() {
    let mut sh = two_sleeps();
    let pid = sh.id();
    let mut files = LookFiles::default();
    let deadline = Instant::now() + Duration::from_secs(10);
    // The first sleep, seen alike both ways.
    let first = loop {
        let (kept, by_path) = (files.look(pid), foreground::look(pid));
        if (kept == by_path && !kept.children.is_empty()) || Instant::now() > deadline {
            break kept;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let (stat, children) = (fd(&files.first), fd(&files.children));
    // The same descriptors, read again: the second sleep.
    let second = loop {
        let look = files.look(pid);
        if look.children != first.children || Instant::now() > deadline {
            break look;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = sh.kill();
    let _ = sh.wait();
    assert!(!first.children.is_empty(), "{first:?}");
    assert_eq!(first.leader, b"sh".to_vec());
    assert!(!second.children.is_empty() && second.children != first.children);
    assert!(stat.is_some() && children.is_some(), "the files are kept");
    assert_eq!((fd(&files.first), fd(&files.children)), (stat, children));
}

#[test]
fn a_process_gone_is_seen_gone_and_its_files_are_let_go() {
    let mut child = Command::new("sleep")
        .arg("30")
        .stdin(Stdio::null())
        .spawn()
        .expect("sleep");
    let pid = child.id();
    let mut files = LookFiles::default();
    let look = files.look(pid);
    assert_eq!(look.leader, b"sleep".to_vec());
    assert!(fd(&files.first).is_some());
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(files.look(pid), Look::default());
    assert!(fd(&files.first).is_none() && fd(&files.children).is_none());
}

#[test]
fn the_budget_leaves_room_for_the_daemons_other_descriptors() {
    let b = budget();
    assert!((1..=512).contains(&b), "{b}");
}
