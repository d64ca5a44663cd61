//! The panel against a tiny fake daemon on a real unix socket: it subscribes, its model takes a
//! snapshot and an event, and Enter sends Focus then Seen for the selected pane.

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
            client: None
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
