//! Floods and a tmux server that stops, dies and comes back (issue 20), on real tmux. Each test
//! has a fast size that runs in `cargo test` and the size the issue names, run with
//! `cargo test --test faults -- --ignored` (the `long_` tests).

use std::time::{Duration, Instant};

use super::support::{drawing_agent, fixtures, rss_kib, script, wait_for, Daemon, Env, Tmux};
use super::{kill, Continue};

fn frame(rel: &str) -> String {
    fixtures::path(rel).display().to_string()
}

/// CPU time of a process (user + system), from `/proc/PID/stat` (10 ms ticks).
fn cpu(pid: u32) -> Duration {
    Duration::from_millis(super::support::cpu_ticks(pid) * 10)
}

/// A pane writes `mib` MiB as fast as tmux takes it, another an OSC that never ends; the
/// daemon's memory stays bounded, its CPU a small part of the flood's time, and a third pane's
/// agent is still classified while both run.
fn flood(mib: u64) {
    let mut tmux = Tmux::new();
    let env = Env::new();
    let agent = drawing_agent(&env, "claude");
    let pane = tmux.new_session("work", Some(&agent.display().to_string()));
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    env.wait_row(&tmux, &pane, "agent", "claude", 15);
    let pid = d.child.id();
    let rss_before = rss_kib(pid);
    let cpu_before = cpu(pid);

    let done = env.path("flood-done");
    let big = env.path("bin/big");
    script(
        &big,
        &format!(
            "#!/bin/bash\nyes 'flood line with some \u{1b}[1mbold\u{1b}[0m text' | head -c {}M\ntouch '{}'\nexec sleep 600\n",
            mib,
            done.display()
        ),
    );
    let endless = env.path("bin/endless");
    script(
        &endless,
        "#!/bin/bash\nprintf '\\033]9;'\nexec yes 'no terminator here ' | tr -d '\\n'\n",
    );
    let started = Instant::now();
    tmux.new_window("work", Some(&big.display().to_string()));
    tmux.new_window("work", Some(&endless.display().to_string()));

    // Meanwhile the agent works, then waits: both are seen.
    tmux.type_line(&pane, &frame("claude-code/2.1.328/003-working.txt"));
    env.wait_row(&tmux, &pane, "state", "working", 20);
    tmux.type_line(&pane, &frame("claude-code/2.1.328/008-blocked.txt"));
    env.wait_row(&tmux, &pane, "state", "blocked", 20);
    let mut peak = rss_kib(pid);
    wait_for(600, "the flood to end", || {
        peak = peak.max(rss_kib(pid));
        done.exists().then_some(())
    });
    let took = started.elapsed();
    // Keep the endless OSC going a little longer, then measure.
    std::thread::sleep(Duration::from_secs(2));
    peak = peak.max(rss_kib(pid));
    let used = cpu(pid).saturating_sub(cpu_before);
    eprintln!(
        "flood of {mib} MiB in {took:?}: daemon RSS {rss_before} KiB -> peak {peak} KiB, CPU {used:?}"
    );
    assert!(
        peak < rss_before + 32 * 1024,
        "daemon RSS grew from {rss_before} KiB to {peak} KiB"
    );
    assert!(
        used < took / 2,
        "the daemon used {used:?} of CPU during a {took:?} flood"
    );
    // Still classifying.
    tmux.type_line(&pane, &frame("claude-code/2.1.328/001-idle.txt"));
    env.wait_row(&tmux, &pane, "state", "idle", 20);
}

#[test]
fn a_flood_and_an_endless_osc_leave_memory_bounded_and_other_panes_classified() {
    flood(32);
}

#[test]
#[ignore = "long: 1 GiB (cargo test --test faults -- --ignored)"]
fn long_a_gibibyte_flood_and_an_endless_osc() {
    flood(1024);
}

/// tmux stopped for `secs` while an agent changes state (its bytes wait in the pty): the daemon
/// answers meanwhile and shows the true state once tmux continues.
fn stopped(secs: u64) {
    let mut tmux = Tmux::new();
    let env = Env::new();
    // An agent that works, then blocks a second later, by itself.
    let agent = env.path("bin/claude");
    script(
        &agent,
        &format!(
            "#!/bin/bash\nprintf '\\033[H\\033[2J'; cat '{}'\nread -r _\nprintf '\\033[H\\033[2J'; cat '{}'\nsleep 1\nprintf '\\033[H\\033[2J'; cat '{}'\nsleep 600\n",
            frame("claude-code/2.1.328/001-idle.txt"),
            frame("claude-code/2.1.328/003-working.txt"),
            frame("claude-code/2.1.328/008-blocked.txt"),
        ),
    );
    let pane = tmux.new_session("work", Some(&agent.display().to_string()));
    let server = tmux.pid.unwrap();
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    env.wait_row(&tmux, &pane, "state", "idle", 15);
    tmux.type_line(&pane, "go");
    env.wait_row(&tmux, &pane, "state", "working", 10);
    kill("-STOP", server);
    let _continue = Continue(server);
    let until = Instant::now() + Duration::from_secs(secs);
    let mut answers = 0;
    while Instant::now() < until {
        let row = env
            .pane_row(&tmux, &pane)
            .expect("agents answers while tmux is stopped");
        assert_eq!(row["state"], "working", "nothing new can be known");
        answers += 1;
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(answers >= 2);
    kill("-CONT", server);
    env.wait_row(&tmux, &pane, "state", "blocked", 15);
    assert!(tmux.try_cmd(&["display-message", "-p", "ok"]).is_some());
}

#[test]
fn tmux_stopped_then_continued_the_daemon_answers_and_catches_up() {
    stopped(3);
}

#[test]
#[ignore = "long: 30 s stop (cargo test --test faults -- --ignored)"]
fn long_tmux_stopped_for_thirty_seconds() {
    stopped(30);
}

/// The server SIGKILLed and started again `rounds` times: the daemon follows each new server,
/// and the done mark of the old server's window is not inherited by the new window of the same
/// id.
fn restarts(rounds: usize) {
    let mut tmux = Tmux::new();
    let env = Env::new();
    let agent = drawing_agent(&env, "claude");
    let mut pane = tmux.new_session("work", Some(&agent.display().to_string()));
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    for round in 0..rounds {
        env.wait_row(&tmux, &pane, "agent", "claude", 20);
        let window = tmux.window_of(&pane);
        tmux.type_line(&pane, &frame("claude-code/2.1.328/003-working.txt"));
        env.wait_row(&tmux, &pane, "state", "working", 10);
        tmux.type_line(&pane, &frame("claude-code/2.1.328/007-idle.txt"));
        wait_for(10, "the done mark", || {
            (tmux.window_option(&window, "@thinkterm_mark") == "done").then_some(())
        });
        let old = tmux.pid.take().unwrap();
        kill("-KILL", old);
        wait_for(10, "the old server to go", || {
            (!std::path::Path::new(&format!("/proc/{old}")).exists()).then_some(())
        });
        pane = tmux.new_session("work", Some(&agent.display().to_string()));
        let new = tmux.pid.unwrap();
        assert_ne!(new, old);
        // Same ids in the new server: its window is not done.
        assert_eq!(tmux.window_of(&pane), window, "round {round}");
        let row = env.wait_row(&tmux, &pane, "agent", "claude", 20);
        if row["window_mark"] == "done" {
            // Why the daemon took the new server for the old one (TT_TEST_LOG=debug says more).
            eprintln!("the daemon's log:\n{}", d.log_text());
        }
        assert_ne!(row["window_mark"], "done", "round {round}: {row}");
        assert_ne!(
            tmux.window_option(&window, "@thinkterm_mark"),
            "done",
            "round {round}"
        );
    }
    let mut d = d;
    assert!(d.child.try_wait().unwrap().is_none(), "the daemon exited");
}

#[test]
fn the_server_killed_and_restarted_is_followed_and_done_marks_are_not_inherited() {
    restarts(3);
}

#[test]
#[ignore = "long: 20 restarts (cargo test --test faults -- --ignored)"]
fn long_the_server_killed_and_restarted_twenty_times() {
    restarts(20);
}
