//! The panel against a tiny fake daemon on a real unix socket: it subscribes, its model takes a
//! snapshot and an event, and Enter sends Focus then Seen for the selected pane. The window card
//! (`card`, its popup and its menu) on real tmux is in `tests/panel/card.rs`.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use thinkterm_sidecar::ids::PaneId;
use thinkterm_sidecar::ipc::schema::Request;
use thinkterm_sidecar::panel::{runtime::carry_out, App, Link, Msg};
use thinkterm_sidecar::state::AgentState;

const PANE: &str = r#"{"pane":"%7","window":"@2","session":"$1","session_name":"proj","window_index":1,"window_name":"Thread 1","pane_index":0,"title":"fix the build","active":true,"window_active":true,"current_path":"/","current_command":"codex","fg_pid":null,"fg_process":null,"process_less":false,"agent":"codex","agent_name":"Codex","agent_mark":null,"state":"idle","source":"screen_rule","rule":null,"message":null,"kind":null,"progress":null,"since_ms":1,"window_mark":"idle"}"#;
const EVENT: &str = r#"{"reply":"event","time_ms":5,"pane":"%7","window":"@2","session":"$1","session_name":"proj","window_name":"Thread 1","agent":"codex","old":"idle","new":"working","source":"status_report","rule":null,"message":"building","kind":null,"progress":40,"window_mark":"running"}"#;

#[test]
fn the_panel_takes_a_snapshot_and_an_event_and_enter_sends_focus() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sock = dir.path().join("s.sock");
    let listener = UnixListener::bind(&sock).expect("bind");
    let (got_tx, got_rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        let mut w = stream.try_clone().expect("clone");
        let mut r = BufReader::new(stream);
        for _ in 0..3 {
            let mut line = String::new();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let sent = got_tx.send(line.trim().to_string()).is_ok();
            if line.contains("subscribe") && sent {
                let snap = format!(
                    "{{\"reply\":\"snapshot\",\"schema\":1,\"panes\":[{PANE}],\"windows\":[]}}\n"
                );
                w.write_all(snap.as_bytes()).expect("snapshot");
                w.write_all(format!("{EVENT}\n").as_bytes()).expect("event");
            } else {
                w.write_all(b"{\"reply\":\"done\",\"message\":\"ok\"}\n")
                    .expect("done");
            }
        }
    });
    let (tx, rx) = mpsc::channel();
    let link = Link::spawn(sock, tx);
    let mut app = App::new(dir.path().join("panel.json"), Some(PaneId(7)));
    let deadline = Instant::now() + Duration::from_secs(5);
    while app.model.pane(PaneId(7)).and_then(|p| p.state) != Some(AgentState::Working) {
        let left = deadline
            .checked_duration_since(Instant::now())
            .expect("snapshot and event in time");
        let msg = rx.recv_timeout(left).expect("a message from the link");
        app.handle(msg, 10);
    }
    let sub = got_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("subscribe");
    assert_eq!(sub, r#"{"request":"subscribe"}"#);
    assert_eq!(app.model.pane(PaneId(7)).and_then(|p| p.progress), Some(40));
    let out = app.handle(
        Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
        10,
    );
    assert_eq!(
        out.requests[0],
        Request::Focus {
            pane: PaneId(7),
            client: None,
            machine: None,
        }
    );
    assert!(
        carry_out(&mut app, &link, &rx, out),
        "Enter closes the panel"
    );
    let focus = got_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("focus line");
    assert_eq!(focus, r#"{"request":"focus","pane":"%7","client":null}"#);
    let seen = got_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("seen line");
    assert_eq!(seen, r#"{"request":"seen","pane":"%7"}"#);
}

#[path = "panel/card.rs"]
mod card;
mod support;

/// The panel end to end on real tmux: agents in three sessions (two reporting through `report`,
/// one drawing real Claude frames), the panel in a pane of a fourth; its screen shows the cards
/// and counts, follows a state change without a keypress, and Enter moves the attached client to
/// the chosen pane.
#[test]
fn the_panel_shows_live_agents_and_enter_moves_the_client() {
    let working = support::fixtures::path("claude-code/2.1.328/003-working.txt");
    let bin = env!("CARGO_BIN_EXE_thinkterm-sidecar");
    let mut tmux = support::Tmux::new();
    let env = support::Env::new();
    let claude = support::drawing_agent(&env, "claude");
    let reporter = env.path("bin/reporter.sh");
    support::script(
        &reporter,
        &format!("#!/bin/bash\nread app\n{bin} report --app \"$app\" --state working --msg \"building $app\"\nread\n{bin} report --app \"$app\" --state blocked --kind question --msg 'Which one?'\nread\n"),
    );
    let c_pane = tmux.new_session("alpha", Some(&claude.display().to_string()));
    let r1 = tmux.new_session("beta", Some(&reporter.display().to_string()));
    let r2 = tmux.new_session("gamma", Some(&reporter.display().to_string()));
    let panel_pane = tmux.new_session("panel", None);
    let client = support::Client::attach(&tmux, "panel", 120, 40);
    let d = support::Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    support::wait_for(10, "panes listed", || env.pane_row(&tmux, &r2));
    tmux.type_line(&r1, "tool-one");
    tmux.type_line(&r2, "tool-two");
    tmux.type_line(&c_pane, &working.display().to_string());
    support::wait_for(10, "three agents", || {
        let v = env.agents(&tmux)?;
        (v["panes"]
            .as_array()?
            .iter()
            .filter(|p| p["state"] == "working")
            .count()
            == 3)
            .then_some(())
    });
    // The panel, started like the popup binding does, with the daemon's environment.
    let mut cmd = format!(
        "env XDG_RUNTIME_DIR={} XDG_STATE_HOME={} {bin} -L {} panel",
        env.path("run").display(),
        env.path("state").display(),
        tmux.name
    );
    cmd.push_str("; sleep 300");
    tmux.type_line(&panel_pane, &cmd);
    let screen = |t: &support::Tmux| t.cmd(&["capture-pane", "-p", "-t", &panel_pane]);
    let s = support::wait_for(10, "panel shows three running agents", || {
        let s = screen(&tmux);
        (s.contains("Running  3")
            && s.contains("tool-one")
            && s.contains("tool-two")
            && s.contains('✳'))
        .then_some(s)
    });
    assert!(
        s.contains("alpha") && s.contains("beta") && s.contains("gamma"),
        "{s}"
    );
    // A state change shows without a keypress.
    tmux.cmd(&["send-keys", "-t", &r2, "Enter"]);
    // Needs attention comes first. Waited for whole: a capture can catch the panel between
    // the lines of one redraw, with the new heading above a card of the old frame.
    let s = support::wait_for(10, "gamma needs attention, above the running cards", || {
        let s = screen(&tmux);
        let (ask, run) = (s.find("Which one?")?, s.find("building tool-one")?);
        (s.contains("Needs attention  1") && ask < run).then_some(s)
    });
    // The selection stayed on the card it was on (alpha's), so one step up reaches gamma's;
    // Enter goes there.
    assert!(s.find("Which one?") < s.find("building tool-one"), "{s}");
    tmux.cmd(&["send-keys", "-t", &panel_pane, "Up"]);
    tmux.cmd(&["send-keys", "-t", &panel_pane, "Enter"]);
    support::wait_for(10, "client moved to gamma", || {
        let out = tmux.cmd(&[
            "list-clients",
            "-F",
            "#{client_control_mode} #{session_name} #{pane_id}",
        ]);
        out.lines()
            .any(|l| l == format!("0 gamma {r2}"))
            .then_some(())
    });
    drop(client);
}

/// The panel outlives the daemon: it says it is reconnecting, and shows the agents again once a
/// new daemon runs.
#[test]
fn the_panel_survives_a_daemon_restart() {
    let working = support::fixtures::path("claude-code/2.1.328/003-working.txt");
    let bin = env!("CARGO_BIN_EXE_thinkterm-sidecar");
    let mut tmux = support::Tmux::new();
    let env = support::Env::new();
    let claude = support::drawing_agent(&env, "claude");
    let agent = tmux.new_session("alpha", Some(&claude.display().to_string()));
    let panel_pane = tmux.new_session("panel", None);
    let mut d = support::Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    tmux.type_line(&agent, &working.display().to_string());
    env.wait_row(&tmux, &agent, "state", "working", 10);
    let cmd = format!(
        "env XDG_RUNTIME_DIR={} XDG_STATE_HOME={} {bin} -L {} panel",
        env.path("run").display(),
        env.path("state").display(),
        tmux.name
    );
    tmux.type_line(&panel_pane, &cmd);
    let screen = |t: &support::Tmux| t.cmd(&["capture-pane", "-p", "-t", &panel_pane]);
    support::wait_for(10, "card shown", || {
        screen(&tmux).contains("Running  1").then_some(())
    });
    d.stop();
    support::wait_for(10, "reconnecting shown", || {
        screen(&tmux)
            .contains("Reconnecting to the sidecar")
            .then_some(())
    });
    let d2 = support::Daemon::start(&env, &tmux);
    d2.wait_ready(&env, &tmux);
    support::wait_for(15, "cards back after the restart", || {
        let s = screen(&tmux);
        (s.contains("Running  1") && !s.contains("Reconnecting")).then_some(())
    });
    tmux.cmd(&["send-keys", "-t", &panel_pane, "q"]);
    support::wait_for(10, "panel quit on q", || {
        let cmd = tmux.cmd(&[
            "display-message",
            "-p",
            "-t",
            &panel_pane,
            "#{pane_current_command}",
        ]);
        (cmd.trim() == "bash").then_some(())
    });
}
