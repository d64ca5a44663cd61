//! The daemon end to end on real tmux: live classification, rule overrides and reload.

mod support;

use support::{script, wait_for, Daemon, Env, Tmux};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures/agents");

/// A fake agent named `name` that draws the given fixture frames, one per line read on stdin
/// (so the test decides when the screen changes).
fn fake_agent(env: &Env, name: &str) -> std::path::PathBuf {
    let path = env.path(&format!("bin/{name}"));
    script(
        &path,
        "#!/bin/bash\n# Draws each file named on stdin, full screen, like a TUI redraw.\nwhile read -r f; do printf '\\033[H\\033[2J'; cat \"$f\"; done\n",
    );
    path
}

fn fixture(rel: &str) -> Option<String> {
    let p = std::path::Path::new(FIXTURES).join(rel);
    p.exists().then(|| p.display().to_string())
}

#[test]
fn a_live_agent_pane_is_classified_from_its_screen() {
    let Some(blocked) = fixture("claude-code/2.1.328/008-blocked.txt") else {
        eprintln!("skipped: fixtures not found at {FIXTURES}");
        return;
    };
    let working = fixture("claude-code/2.1.328/003-working.txt").unwrap();
    let mut tmux = Tmux::new();
    let env = Env::new();
    let agent = fake_agent(&env, "claude");
    let pane = tmux.new_session("work", Some(&agent.display().to_string()));
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    let row = wait_for(10, "claude identified", || {
        env.pane_row(&tmux, &pane)
            .filter(|r| r["agent"] == "claude")
    });
    assert_eq!(row["agent_name"], "Claude Code");
    tmux.type_line(&pane, &working);
    wait_for(10, "working", || {
        env.pane_row(&tmux, &pane)
            .filter(|r| r["state"] == "working")
    });
    tmux.type_line(&pane, &blocked);
    let row = wait_for(10, "blocked", || {
        env.pane_row(&tmux, &pane)
            .filter(|r| r["state"] == "blocked")
    });
    assert_eq!(row["source"], "screen_rule");
    assert!(row["rule"].is_string());
    // explain PANE tells the same from the daemon.
    let (code, out, err) = env.run(&tmux, &["explain", &pane, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["state"], "blocked");
    assert_eq!(v["explanation"]["agent"], "claude");
}

#[test]
fn overrides_replace_and_add_agents_and_reload_without_restart() {
    let mut tmux = Tmux::new();
    let env = Env::new();
    let rules = env.path("config/thinkterm/agent-detection");
    std::fs::create_dir_all(&rules).unwrap();
    let agent = fake_agent(&env, "zork-agent");
    let screen = env.path("screen.txt");
    std::fs::write(
        &screen,
        "hello\n\n  [zork] thinking hard   (ctrl-c to stop)\n",
    )
    .unwrap();
    let pane = tmux.new_session("zz", Some(&agent.display().to_string()));
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    wait_for(10, "pane listed", || env.pane_row(&tmux, &pane));
    assert_eq!(
        env.pane_row(&tmux, &pane).unwrap()["agent"],
        serde_json::Value::Null
    );
    // A file alone adds an agent: identity and rules. The file name does not matter.
    std::fs::write(
        rules.join("whatever-name.toml"),
        r#"id = "zork"
version = "1"
name = "Zork"
[identity]
process_names = ["zork-agent"]
[[rules]]
id = "footer_working"
state = "working"
priority = 10
region = "bottom_non_empty_lines(1)"
contains = ["(ctrl-c to stop)"]
"#,
    )
    .unwrap();
    // A broken file is rejected with file:line and the rest keeps working.
    std::fs::write(rules.join("broken.toml"), "id = \"codex\"\nversion = \"1\"\n[[rules]]\nid = \"x\"\nstate = \"sleeping\"\nregion = \"whole_recent\"\ncontains = [\"x\"]\n").unwrap();
    let (code, out, err) = env.run(&tmux, &["rules", "reload"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "Detection rules reloaded; 1 file rejected.");
    wait_for(10, "rejection logged with file:line", || {
        d.log_text().contains("broken.toml:5").then_some(())
    });
    wait_for(10, "zork identified", || {
        env.pane_row(&tmux, &pane).filter(|r| r["agent"] == "zork")
    });
    tmux.type_line(&pane, &screen.display().to_string());
    let row = wait_for(10, "zork working", || {
        env.pane_row(&tmux, &pane)
            .filter(|r| r["state"] == "working")
    });
    assert_eq!(row["rule"], "footer_working");
    // Change the rule and reload by SIGHUP: the same screen now reads blocked.
    let text = std::fs::read_to_string(rules.join("whatever-name.toml"))
        .unwrap()
        .replace("state = \"working\"", "state = \"blocked\"");
    std::fs::write(rules.join("whatever-name.toml"), text).unwrap();
    let _ = std::process::Command::new("kill")
        .args(["-HUP", &d.child.id().to_string()])
        .status();
    wait_for(10, "zork blocked after SIGHUP", || {
        env.pane_row(&tmux, &pane)
            .filter(|r| r["state"] == "blocked")
    });
    // rules list shows the override's source.
    let (_, out, _) = env.run(&tmux, &["rules", "list"]);
    assert!(out.contains("whatever-name.toml"), "{out}");
    let (code, out, _) = env.run(
        &tmux,
        &[
            "rules",
            "check",
            &rules.join("broken.toml").display().to_string(),
        ],
    );
    assert_eq!(code, 1);
    assert!(out.contains("broken.toml:5"), "{out}");
}

/// Subscribes to the daemon's socket (as `events --json` does) in a thread; returns once the
/// subscription is live (its first snapshot arrived), with a receiver of the events as JSON.
fn events(env: &Env, tmux: &Tmux) -> std::sync::mpsc::Receiver<serde_json::Value> {
    use thinkterm_sidecar::ipc::schema::{Reply, Request};
    let sock = std::fs::read_dir(env.path("run/thinkterm"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "sock"))
        .expect("daemon socket");
    let _ = tmux;
    let (tx, rx) = std::sync::mpsc::channel();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let mut c = thinkterm_sidecar::ipc::Client::connect(&sock)
                .await
                .expect("connect");
            c.send(&Request::Subscribe).await.expect("subscribe");
            while let Ok(Some(reply)) = c.next().await {
                match reply {
                    Reply::Snapshot { .. } => {
                        let _ = ready_tx.send(());
                    }
                    Reply::Event(e) => {
                        if tx.send(serde_json::to_value(&e).unwrap()).is_err() {
                            return;
                        }
                    }
                    _ => {}
                }
            }
        });
    });
    ready_rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("subscription live");
    rx
}

#[test]
fn events_show_each_transition_once_in_order_with_its_source() {
    let Some(idle) = fixture("claude-code/2.1.328/001-idle.txt") else {
        eprintln!("skipped: fixtures not found at {FIXTURES}");
        return;
    };
    let working = fixture("claude-code/2.1.328/003-working.txt").unwrap();
    let blocked = fixture("claude-code/2.1.328/008-blocked.txt").unwrap();
    let mut tmux = Tmux::new();
    let env = Env::new();
    let agent = fake_agent(&env, "claude");
    let pane = tmux.new_session("ev", Some(&agent.display().to_string()));
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    tmux.type_line(&pane, &idle);
    wait_for(10, "idle", || {
        env.pane_row(&tmux, &pane).filter(|r| r["state"] == "idle")
    });
    let rx = events(&env, &tmux);
    // Frames one by one, each after the previous state was published, so the debounce never
    // merges them.
    let mut seen = Vec::new();
    let mut old = "idle";
    for (frame, want) in [
        (&working, "working"),
        (&blocked, "blocked"),
        (&working, "working"),
        (&idle, "idle"),
    ] {
        tmux.type_line(&pane, frame);
        let ev = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("no event for {want}; got {seen:?}"));
        assert_eq!(ev["pane"], pane.as_str());
        assert_eq!(ev["new"], want, "{ev}");
        assert_eq!(ev["agent"], "claude");
        assert_eq!(ev["old"], old, "{ev}");
        assert!(
            ev["source"] == "screen_rule" || ev["source"] == "screen_fallback",
            "{ev}"
        );
        old = want;
        seen.push(ev["new"].as_str().unwrap().to_string());
    }
    assert_eq!(seen, ["working", "blocked", "working", "idle"]);
    // Nothing more: each transition once.
    assert!(rx
        .recv_timeout(std::time::Duration::from_millis(800))
        .is_err());
}
