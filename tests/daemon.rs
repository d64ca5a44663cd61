//! The daemon end to end on real tmux: live classification, rule overrides and reload.
#![allow(clippy::unwrap_used)]

mod support;

use support::{fixtures, script, wait_for, Daemon, Env, Tmux};

#[path = "detection/drift_alarm.rs"]
mod drift_alarm;
#[path = "daemon/drive.rs"]
mod drive;

/// The path of a recorded fixture (`agent/version/file`), as the drawing agents read it; fails
/// when it is missing.
fn fixture(rel: &str) -> String {
    fixtures::path(rel).display().to_string()
}

#[test]
fn a_live_agent_pane_is_classified_from_its_screen() {
    let blocked = fixture("claude-code/2.1.328/008-blocked.txt");
    let working = fixture("claude-code/2.1.328/003-working.txt");
    let mut tmux = Tmux::new();
    let env = Env::new();
    let agent = support::drawing_agent(&env, "claude");
    let pane = tmux.new_session("work", Some(&agent.display().to_string()));
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    let row = env.wait_row(&tmux, &pane, "agent", "claude", 10);
    assert_eq!(row["agent_name"], "Claude Code");
    tmux.type_line(&pane, &working);
    env.wait_row(&tmux, &pane, "state", "working", 10);
    tmux.type_line(&pane, &blocked);
    let row = env.wait_row(&tmux, &pane, "state", "blocked", 10);
    assert_eq!(row["source"], "screen_rule");
    assert!(row["rule"].is_string());
    // explain PANE tells the same from the daemon.
    let (code, out, err) = env.run(&tmux, &["explain", &pane, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["state"], "blocked");
    assert_eq!(v["explanation"]["agent"], "claude");
    // The working and the blocked screens were each classified (not taken from the memo).
    let runs = v["classifications"]["run"].as_u64();
    assert!(runs >= Some(2), "classifications: {}", v["classifications"]);
}

/// The screen's lines as the rules read them: trailing blanks dropped.
fn lines(screen: &str) -> Vec<String> {
    let mut v: Vec<String> = screen.lines().map(|l| l.trim_end().to_string()).collect();
    while v.last().is_some_and(|l| l.is_empty()) {
        v.pop();
    }
    v
}

#[test]
fn a_drawing_agent_is_read_from_its_screen_model_and_the_model_is_checked_against_tmux() {
    let working = fixture("claude-code/2.1.328/003-working.txt");
    let blocked = fixture("claude-code/2.1.328/008-blocked.txt");
    let mut tmux = Tmux::new();
    let env = Env::new();
    // Draws the working screen, then redraws its first line 20 times a second for 4 s (a
    // spinner), then the blocked screen, and waits.
    let agent = env.path("bin/claude");
    support::script(
        &agent,
        "#!/bin/bash\nread -r f; printf '\\033[H\\033[2J'; cat \"$f\"\n\
         for i in $(seq 1 80); do printf '\\033[1;1Hspinner frame %d' \"$i\"; sleep 0.05; done\n\
         read -r g; printf '\\033[H\\033[2J'; cat \"$g\"\nread -r _\n",
    );
    let pane = tmux.new_session("work", Some(&agent.display().to_string()));
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    env.wait_row(&tmux, &pane, "agent", "claude", 10);
    let explain = || env.explain(&tmux, &pane);
    tmux.type_line(&pane, &working);
    env.wait_row(&tmux, &pane, "state", "working", 10);
    // While it draws, its looks are served by the model once a capture confirmed it.
    let v = wait_for(10, "looks served by the screen model", || {
        let v = explain();
        (v["screen_model"]["served"].as_u64() >= Some(10)).then_some(v)
    });
    assert_eq!(v["state"], "working", "{v}");
    assert!(
        v["screen"].as_str().unwrap().contains("spinner frame"),
        "{v}"
    );
    // The spinner ends: a capture checks the model's last look, and finds the same screen
    // (a model that had drifted would be seeded again from it, not verified).
    let v = wait_for(10, "the quiet pane's model verified", || {
        let v = explain();
        let screen = v["screen"].as_str().unwrap_or_default().to_string();
        let tmux_screen = tmux.cmd(&["capture-pane", "-p", "-J", "-t", &pane]);
        (v["screen_model"]["trust"] == "verified"
            && screen.contains("spinner frame 80")
            && lines(&screen) == lines(&tmux_screen))
        .then_some(v)
    });
    let m = &v["screen_model"];
    let (served, captured) = (
        m["served"].as_u64().unwrap(),
        m["matched"].as_u64().unwrap() + m["seeded"].as_u64().unwrap(),
    );
    // About 40 looks in 4 s; captures: a seed, its check, one check every 2 s, the last one.
    assert!(
        served >= 2 * captured,
        "{served} served, {captured} captured: {m}"
    );
    // A blocked prompt drawn after the spinner is seen through the model as well.
    tmux.type_line(&pane, &blocked);
    let row = env.wait_row(&tmux, &pane, "state", "blocked", 10);
    assert_eq!(row["source"], "screen_rule");
    // With the model off, every look is a capture: no model is kept.
    drop(d);
    let config = env.path("config/thinkterm/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "screen_model_check_ms = 0\n").unwrap();
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    env.wait_row(&tmux, &pane, "state", "blocked", 10);
    assert!(explain()["screen_model"].is_null());
}

/// A frame drawn as a synchronized update (mode 2026: Pi, Codex and OpenCode draw every frame
/// so) counts only once it ends: half a frame left on the screen never decides a state, whether
/// the look is served by the screen model (it is shown the last whole frame) or captured (it
/// waits); a frame whose end never comes is looked at once the hold (500 ms) has passed.
#[test]
fn a_frame_drawn_as_a_synchronized_update_counts_only_once_it_ends() {
    let idle = fixtures::read_to_string("claude-code/2.1.328/001-idle.txt");
    let blocked = fixtures::read_to_string("claude-code/2.1.328/008-blocked.txt");
    let prompt = blocked
        .lines()
        .find(|l| l.contains("Do you want"))
        .expect("the blocked frame's question")
        .trim()
        .to_string();
    let (begin, end, clear) = ("\x1b[?2026h", "\x1b[?2026l", "\x1b[H\x1b[2J");
    let mut tmux = Tmux::new();
    let env = Env::new();
    let frames = [
        ("idle", format!("{clear}{idle}")),
        ("half", format!("{begin}{clear}{blocked}")),
        ("end-idle", format!("{clear}{idle}{end}")),
        ("blocked", format!("{begin}{clear}{blocked}{end}")),
    ];
    for (name, bytes) in &frames {
        std::fs::write(env.path(&format!("{name}.frame")), bytes).unwrap();
    }
    let frame = |name: &str| env.path(&format!("{name}.frame")).display().to_string();
    // Writes each file named on its stdin as it is (the files hold their own escapes).
    let agent = env.path("bin/claude");
    script(
        &agent,
        "#!/bin/bash\nstty -echo\nwhile read -r f; do cat \"$f\"; done\n",
    );
    let pane = tmux.new_session("sync", Some(&agent.display().to_string()));
    let shows = |text: &str| {
        tmux.cmd(&["capture-pane", "-p", "-J", "-t", &pane])
            .contains(text)
    };
    for modelled in [true, false] {
        if !modelled {
            let config = env.path("config/thinkterm/config.toml");
            std::fs::create_dir_all(config.parent().unwrap()).unwrap();
            std::fs::write(&config, "screen_model_check_ms = 0\n").unwrap();
        }
        let d = Daemon::start(&env, &tmux);
        d.wait_ready(&env, &tmux);
        env.wait_row(&tmux, &pane, "agent", "claude", 10);
        tmux.type_line(&pane, &frame("idle"));
        env.wait_row(&tmux, &pane, "state", "idle", 10);
        let served = || env.explain(&tmux, &pane)["screen_model"]["served"].as_u64();
        if modelled {
            // Seeded by the first capture, verified by the next that finds the same screen.
            wait_for(10, "the idle screen's model verified", || {
                tmux.type_line(&pane, &frame("idle"));
                std::thread::sleep(std::time::Duration::from_millis(200));
                (env.explain(&tmux, &pane)["screen_model"]["trust"] == "verified").then_some(())
            });
        }
        let rx = events(&env, &tmux);
        let before = served();
        let whole = tmux.cmd(&["capture-pane", "-p", "-J", "-t", &pane]);
        // Half a frame: the blocked prompt drawn, the update not ended.
        tmux.type_line(&pane, &frame("half"));
        wait_for(10, "tmux showing the half-drawn frame", || {
            shows(&prompt).then_some(())
        });
        if modelled {
            // A look after it was served: the last whole frame.
            let v = wait_for(10, "a look served after the half frame", || {
                let v = env.explain(&tmux, &pane);
                (v["screen_model"]["served"].as_u64() > before).then_some(v)
            });
            assert_eq!(v["state"], "idle", "{v}");
            assert_eq!(lines(v["screen"].as_str().unwrap()), lines(&whole), "{v}");
        } else {
            // A capture would come 40 ms after the output (`capture_delay_ms`); give it six
            // times that, still well inside the hold, before the frame ends.
            std::thread::sleep(std::time::Duration::from_millis(250));
            let row = env.pane_row(&tmux, &pane).unwrap();
            assert_eq!(row["state"], "idle", "{row}");
        }
        // Entering blocked is not debounced: a look at the half frame would have said so.
        assert!(
            rx.try_recv().is_err(),
            "modelled {modelled}: an event for the half frame"
        );
        // The frame ends as the idle screen.
        tmux.type_line(&pane, &frame("end-idle"));
        wait_for(10, "tmux showing the frame's end", || {
            (!shows(&prompt)).then_some(())
        });
        // A whole blocked frame is seen: the prompt itself is classified.
        tmux.type_line(&pane, &frame("blocked"));
        env.wait_row(&tmux, &pane, "state", "blocked", 10);
        let ev = rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("the blocked frame's event");
        assert_eq!(
            (&ev["old"], &ev["new"]),
            (&"idle".into(), &"blocked".into()),
            "{ev}"
        );
        // A frame that never ends is looked at once the hold has passed.
        tmux.type_line(&pane, &frame("idle"));
        env.wait_row(&tmux, &pane, "state", "idle", 10);
        tmux.type_line(&pane, &frame("half"));
        env.wait_row(&tmux, &pane, "state", "blocked", 10);
        drop(d);
        // The next run starts from a frame that has ended.
        tmux.type_line(&pane, &frame("end-idle"));
    }
}

#[test]
fn overrides_replace_and_add_agents_and_reload_without_restart() {
    let mut tmux = Tmux::new();
    let env = Env::new();
    let rules = env.path("config/thinkterm/agent-detection");
    std::fs::create_dir_all(&rules).unwrap();
    let agent = support::drawing_agent(&env, "zork-agent");
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
    env.wait_row(&tmux, &pane, "agent", "zork", 10);
    tmux.type_line(&pane, &screen.display().to_string());
    let row = env.wait_row(&tmux, &pane, "state", "working", 10);
    assert_eq!(row["rule"], "footer_working");
    // Change the rule and reload by SIGHUP: the same screen now reads blocked.
    let text = std::fs::read_to_string(rules.join("whatever-name.toml"))
        .unwrap()
        .replace("state = \"working\"", "state = \"blocked\"");
    std::fs::write(rules.join("whatever-name.toml"), text).unwrap();
    let _ = std::process::Command::new("kill")
        .args(["-HUP", &d.child.id().to_string()])
        .status();
    env.wait_row(&tmux, &pane, "state", "blocked", 10);
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

/// The daemon's socket.
fn daemon_socket(env: &Env) -> std::path::PathBuf {
    std::fs::read_dir(env.path("run/thinkterm"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "sock"))
        .expect("daemon socket")
}

/// A stream from the daemon's socket, read in a thread: sends `requests`, and forwards every
/// reply after the first snapshot (which says the stream is live: the daemon takes a
/// connection's requests in order) whose kind `keep` accepts. Returns once it is live.
fn stream(
    env: &Env,
    requests: &[thinkterm_sidecar::ipc::schema::Request],
    keep: fn(&thinkterm_sidecar::ipc::schema::Reply) -> bool,
) -> std::sync::mpsc::Receiver<thinkterm_sidecar::ipc::schema::Reply> {
    use thinkterm_sidecar::ipc::schema::Reply;
    let sock = daemon_socket(env);
    let requests = requests.to_vec();
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
            for r in &requests {
                c.send(r).await.expect("request");
            }
            let mut live = false;
            while let Ok(Some(reply)) = c.next().await {
                if !live && matches!(reply, Reply::Snapshot { .. }) {
                    live = true;
                    let _ = ready_tx.send(());
                } else if keep(&reply) && tx.send(reply).is_err() {
                    return;
                }
            }
        });
    });
    ready_rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("stream live");
    rx
}

/// Subscribes (as the panel does): the events, as JSON.
fn events(env: &Env, tmux: &Tmux) -> std::sync::mpsc::Receiver<serde_json::Value> {
    use thinkterm_sidecar::ipc::schema::{Reply, Request};
    let _ = tmux;
    let replies = stream(env, &[Request::Subscribe], |r| matches!(r, Reply::Event(_)));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for r in replies {
            if let Reply::Event(e) = r {
                if tx.send(serde_json::to_value(&e).unwrap()).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

/// An `events` stream (what `thinkterm-sidecar events` asks for): every reply, whatever its
/// kind. An `agents` request after it makes the first snapshot that says it is live.
fn events_only(env: &Env) -> std::sync::mpsc::Receiver<thinkterm_sidecar::ipc::schema::Reply> {
    use thinkterm_sidecar::ipc::schema::Request;
    stream(env, &[Request::Events, Request::Agents], |_| true)
}

#[test]
fn events_show_each_transition_once_in_order_with_its_source() {
    let idle = fixture("claude-code/2.1.328/001-idle.txt");
    let working = fixture("claude-code/2.1.328/003-working.txt");
    let blocked = fixture("claude-code/2.1.328/008-blocked.txt");
    let mut tmux = Tmux::new();
    let env = Env::new();
    let agent = support::drawing_agent(&env, "claude");
    let pane = tmux.new_session("ev", Some(&agent.display().to_string()));
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    tmux.type_line(&pane, &idle);
    env.wait_row(&tmux, &pane, "state", "idle", 10);
    let rx = events(&env, &tmux);
    let only = events_only(&env);
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
    // The events-only stream carried the same events and no snapshot.
    let mut got = Vec::new();
    while let Ok(reply) = only.try_recv() {
        match reply {
            thinkterm_sidecar::ipc::schema::Reply::Event(e) => {
                got.push(e.new.map(|s| s.as_str().to_string()).unwrap_or_default())
            }
            other => panic!("an events stream got {other:?}"),
        }
    }
    assert_eq!(got, seen);
}

const BIN: &str = env!("CARGO_BIN_EXE_thinkterm-sidecar");

#[test]
fn status_reports_from_a_script_show_state_app_message_and_progress_in_order() {
    let mut tmux = Tmux::new();
    let env = Env::new();
    let tool = env.path("bin/mytool.sh");
    script(
        &tool,
        &format!(
            "#!/bin/bash\nr={BIN}\nread\n$r report --app mytool --state working --progress 40 --msg 'Running tests'\nread\n\
$r report --app mytool --state blocked --kind permission --msg 'May I run rm?'\nread\n\
$r report --app mytool --state done --msg 'All green'\nread\n"
        ),
    );
    let pane = tmux.new_session("rep", Some(&tool.display().to_string()));
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    wait_for(10, "pane listed", || env.pane_row(&tmux, &pane));
    let rx = events(&env, &tmux);
    tmux.cmd(&["send-keys", "-t", &pane, "Enter"]);
    let row = env.wait_row(&tmux, &pane, "state", "working", 10);
    assert_eq!(row["agent"], "mytool");
    assert_eq!(row["source"], "status_report");
    assert_eq!(row["message"], "Running tests");
    assert_eq!(row["progress"], 40);
    let ev = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("working event");
    assert_eq!(ev["new"], "working", "{ev}");
    tmux.cmd(&["send-keys", "-t", &pane, "Enter"]);
    let ev = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("blocked event");
    assert_eq!(ev["new"], "blocked", "{ev}");
    assert_eq!(ev["kind"], "permission");
    assert_eq!(ev["message"], "May I run rm?");
    assert_eq!(ev["source"], "status_report");
    tmux.cmd(&["send-keys", "-t", &pane, "Enter"]);
    let ev = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("done event");
    assert_eq!(ev["new"], "idle", "{ev}");
    let row = wait_for(10, "done result", || {
        env.pane_row(&tmux, &pane)
            .filter(|r| r["unseen_result"] == true)
    });
    assert_eq!(row["message"], "All green");
    assert_eq!(row["kind"], serde_json::Value::Null);
}

/// Regression: the spinner's deadline was not among the daemon's deadlines, so a frame waited
/// for some other timer to fire (the slow probe, when no agent was being captured). And the
/// spinner turns only in a tab a person's client shows without looking at its window: each
/// frame is a `set-option`, which tmux answers by redrawing every client whole and sizing every
/// window again; a window nobody can see, or the one the person looks at (its panes show the
/// work), keeps its running icon still.
#[test]
fn the_spinner_turns_for_a_window_that_only_reports_while_a_person_sees_its_tab_from_elsewhere() {
    let mut tmux = Tmux::new();
    let env = Env::new();
    let config = env.path("config/thinkterm/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(
        &config,
        "probe_interval_s = 120\nspinner_interval_ms = 200\n",
    )
    .unwrap();
    let tool = env.path("bin/busy.sh");
    script(
        &tool,
        &format!(
            "#!/bin/bash\nread\n{BIN} report --app busy --state working --msg busy\nsleep 300\n"
        ),
    );
    let pane = tmux.new_session("spin", Some(&tool.display().to_string()));
    let window = tmux.window_of(&pane);
    let other = tmux.new_window("spin", None);
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    wait_for(10, "pane listed", || env.pane_row(&tmux, &pane));
    tmux.cmd(&["send-keys", "-t", &pane, "Enter"]);
    env.wait_row(&tmux, &pane, "state", "working", 10);
    let icon = || tmux.window_option(&window, "@thinkterm_icon");
    let first = wait_for(10, "a running icon", || {
        let i = icon();
        (!i.is_empty()).then_some(i)
    });
    // The icon stays `still` over six frame periods (200 ms each).
    let holds = |still: &str, why: &str| {
        std::thread::sleep(std::time::Duration::from_millis(1200));
        assert_eq!(icon(), still, "{why}");
    };
    holds(
        &first,
        "the spinner turned with no person's client attached",
    );

    // A person looks at the other window: the tab of the working one turns.
    tmux.cmd(&["select-window", "-t", &other]);
    let client = support::Client::attach(&tmux, "spin", 100, 30);
    wait_for(5, "the next spinner frame", || {
        (icon() != first).then_some(())
    });

    // The person goes to the working window: its panes show the work, its tab holds still.
    tmux.cmd(&["select-window", "-t", &window]);
    let held = wait_for(5, "the spinner stops in the tab looked at", || {
        let a = icon();
        std::thread::sleep(std::time::Duration::from_millis(600));
        (icon() == a).then_some(a)
    });
    holds(
        &held,
        "the spinner turned in the window the person looks at",
    );

    // Back to the other window: it turns again.
    tmux.cmd(&["select-window", "-t", &other]);
    wait_for(5, "the spinner turns again", || {
        (icon() != held).then_some(())
    });
    drop(client);
}

#[test]
fn a_user_variable_left_by_an_exited_program_labels_nothing_after_it() {
    let mut tmux = Tmux::new();
    let env = Env::new();
    let tool = env.path("bin/selfreport.sh");
    script(
        &tool,
        &format!("#!/bin/bash\n{BIN} report --var --agent soul --state working --ts now\nread\n"),
    );
    let pane = tmux.new_session("var", None);
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    tmux.type_line(&pane, &tool.display().to_string());
    let row = env.wait_row(&tmux, &pane, "agent", "soul", 10);
    assert_eq!(row["state"], "working");
    assert_eq!(row["source"], "user_var");
    // The reporter exits; the next program is not soul.
    tmux.cmd(&["send-keys", "-t", &pane, "Enter"]);
    tmux.type_line(&pane, "sleep 300");
    let row = wait_for(10, "sleep runs unlabelled", || {
        env.pane_row(&tmux, &pane)
            .filter(|r| r["fg_process"] == "sleep" && r["agent"].is_null())
    });
    assert_eq!(row["state"], serde_json::Value::Null);
}

#[test]
fn replayed_codex_output_reports_the_states_the_real_run_emitted() {
    let raw = fixtures::path("codex/0.169.0/raw-main-120x40.bin");
    // The state sequence the real run emitted, as the records table decides it.
    let bytes = std::fs::read(&raw).unwrap();
    let mut sig = thinkterm_sidecar::osc::PaneSignals::new();
    let mut expected: Vec<String> = Vec::new();
    let mut last = None;
    sig.feed(&bytes, 1, &mut |s, records| {
        if let thinkterm_sidecar::osc::Signal::StatusReport(_) = s {
            let st = records
                .effective()
                .map(|e| e.agent_state().as_str().to_string());
            if st != last {
                expected.extend(st.clone());
                last = st;
            }
        }
    });
    assert!(expected.len() >= 8, "{expected:?}");
    let mut tmux = Tmux::new();
    let env = Env::new();
    let replay = env.path("bin/replay.sh");
    script(
        &replay,
        &format!("#!/bin/bash\nread\ncat {}\nsleep 300\n", raw.display()),
    );
    let pane = tmux.new_session("codex", Some(&replay.display().to_string()));
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    wait_for(10, "pane listed", || env.pane_row(&tmux, &pane));
    let rx = events(&env, &tmux);
    tmux.cmd(&["send-keys", "-t", &pane, "Enter"]);
    let mut got = Vec::new();
    let mut kinds = Vec::new();
    while got.len() < expected.len() {
        let ev = rx
            .recv_timeout(std::time::Duration::from_secs(15))
            .unwrap_or_else(|_| panic!("got {got:?}, want {expected:?}"));
        assert_eq!(ev["agent"], "codex", "{ev}");
        assert_eq!(ev["source"], "status_report", "{ev}");
        if ev["new"] == "blocked" {
            kinds.push(ev["kind"].clone());
        }
        got.push(ev["new"].as_str().unwrap_or("unknown").to_string());
    }
    assert_eq!(got, expected);
    assert!(
        !kinds.is_empty() && kinds.iter().all(|k| k == "permission"),
        "{kinds:?}"
    );
}

#[test]
fn window_marks_follow_the_agent_and_done_lasts_until_looked_at_even_across_a_restart() {
    let idle = fixture("claude-code/2.1.328/001-idle.txt");
    let working = fixture("claude-code/2.1.328/003-working.txt");
    let blocked = fixture("claude-code/2.1.328/008-blocked.txt");
    let mut tmux = Tmux::new();
    let env = Env::new();
    let agent = support::drawing_agent(&env, "claude");
    let pane = tmux.new_session("proj", Some(&agent.display().to_string()));
    let window = tmux.window_of(&pane);
    let other = tmux.new_window("proj", None);
    tmux.cmd(&["select-window", "-t", &other]);
    let _client = support::Client::attach(&tmux, "proj", 120, 40);
    let mut d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    env.wait_row(&tmux, &pane, "agent", "claude", 10);
    tmux.type_line(&pane, &idle);
    env.wait_row(&tmux, &pane, "state", "idle", 10);
    let mark = |want: &str| {
        wait_for(10, &format!("window mark {want}"), || {
            (tmux.window_option(&window, "@thinkterm_mark") == want).then_some(())
        })
    };
    tmux.type_line(&pane, &working);
    mark("running");
    assert!(
        !tmux.window_option(&window, "@thinkterm_icon").is_empty(),
        "running shows an icon"
    );
    assert_eq!(
        tmux.cmd(&["show-options", "-pqv", "-t", &pane, "@thinkterm_state"])
            .trim(),
        "working"
    );
    tmux.type_line(&pane, &blocked);
    mark("attention");
    let (_, out, _) = env.run(&tmux, &["agents", "--attention", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["windows"][0]["window"], window.as_str(), "{v}");
    tmux.type_line(&pane, &working);
    mark("running");
    tmux.type_line(&pane, &idle);
    mark("done");
    let summary = tmux.cmd(&["show-options", "-qv", "-t", "proj", "@thinkterm_summary"]);
    assert!(summary.contains('✓'), "{summary}");
    // The sidecar restarts: done survives.
    d.stop();
    wait_for(10, "options cleared on shutdown", || {
        tmux.window_option(&window, "@thinkterm_mark")
            .is_empty()
            .then_some(())
    });
    let d2 = Daemon::start(&env, &tmux);
    d2.wait_ready(&env, &tmux);
    mark("done");
    // Looking at the window clears it.
    tmux.cmd(&["select-window", "-t", &window]);
    mark("idle");
}

#[test]
fn an_agent_behind_ssh_is_recognised_by_its_screen_and_title() {
    let blocked = fixture("claude-code/2.1.328/008-blocked.txt");
    let mut tmux = Tmux::new();
    let env = Env::new();
    // An `ssh` stand-in: the remote Claude Code sets its title and draws its screen.
    let ssh = env.path("bin/ssh");
    script(
        &ssh,
        "#!/bin/bash\nread -r\nprintf '\\033]0;✳ Claude Code\\007'\nwhile read -r f; do printf '\\033[H\\033[2J'; cat \"$f\"; done\n",
    );
    let pane = tmux.new_session("remote", Some(&format!("{} devbox", ssh.display())));
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    wait_for(10, "process-less", || {
        env.pane_row(&tmux, &pane)
            .filter(|r| r["process_less"] == true)
    });
    assert_eq!(
        env.pane_row(&tmux, &pane).unwrap()["agent"],
        serde_json::Value::Null
    );
    tmux.cmd(&["send-keys", "-t", &pane, "Enter"]);
    tmux.type_line(&pane, &blocked);
    let row = wait_for(10, "claude behind ssh, blocked", || {
        env.pane_row(&tmux, &pane)
            .filter(|r| r["agent"] == "claude" && r["state"] == "blocked")
    });
    assert_eq!(row["process_less"], true);
    assert_eq!(row["source"], "screen_rule");
}

/// With the panes read through the control clients (`pane_pipes = false`): the flood gate.
#[test]
fn a_flooding_pane_is_paused_for_us_only_and_everything_else_keeps_working() {
    let working = fixture("claude-code/2.1.328/003-working.txt");
    let mut tmux = Tmux::new();
    let mut env = Env::new();
    env.vars
        .push(("THINKTERM_PANE_PIPES".into(), "false".into()));
    let agent = support::drawing_agent(&env, "claude");
    let flood = tmux.new_session("flood", Some("yes"));
    let pane = tmux.new_session("work", Some(&agent.display().to_string()));
    let mut d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    let paused = || {
        let (code, out, _) = env.run(&tmux, &["explain", &flood, "--json"]);
        let v: serde_json::Value = serde_json::from_str(&out).ok()?;
        (code == 0 && v["output_paused"] == true).then_some(())
    };
    wait_for(20, "the flood's output copy paused", paused);
    // An agent beside the flood is still classified.
    env.wait_row(&tmux, &pane, "agent", "claude", 10);
    tmux.type_line(&pane, &working);
    env.wait_row(&tmux, &pane, "state", "working", 10);
    // The flood ends and another program starts in the pane: once it has been running for a
    // moment (tmux reports the new command within a second), what it reports is read.
    let reporter = env.path("reporter.sh");
    script(
        &reporter,
        &format!(
            "#!/bin/bash\nsleep 3\n{BIN} report --app flooder --state blocked --kind permission\nexec sleep 300\n"
        ),
    );
    tmux.cmd(&[
        "respawn-pane",
        "-k",
        "-t",
        &flood,
        &reporter.display().to_string(),
    ]);
    let row = env.wait_row(&tmux, &flood, "state", "blocked", 15);
    assert_eq!(row["source"], "status_report", "{row}");
    // And the daemon still stops promptly on SIGTERM.
    let started = std::time::Instant::now();
    d.stop();
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

/// An agent pane that redraws heavily (here 768 KiB of cursor moves before each frame) has our
/// copy of its output paused between captures (`redraw_pause_kib`), and nothing is lost: each
/// frame's state is still published, and a title sent while the copy was paused is read with
/// the next capture. The gate is the control clients' (`pane_pipes = false`): a pipe has no
/// copy to pause.
#[test]
fn an_agent_redrawing_heavily_is_gated_and_its_states_and_title_still_follow() {
    let mut tmux = Tmux::new();
    let mut env = Env::new();
    env.vars
        .push(("THINKTERM_PANE_PIPES".into(), "false".into()));
    let agent = support::drawing_agent(&env, "claude");
    let pane = tmux.new_session("gate", Some(&agent.display().to_string()));
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    env.wait_row(&tmux, &pane, "agent", "claude", 10);
    let heavy = |name: &str, frame: &str, title: &str| {
        let mut bytes = "\x1b[1;1H\x1b[K".repeat(768 * 1024 / 9).into_bytes();
        bytes.extend_from_slice(format!("\x1b]2;{title}\x07").as_bytes());
        bytes.extend_from_slice(&std::fs::read(fixture(frame)).unwrap());
        let path = env.path(name);
        std::fs::write(&path, bytes).unwrap();
        path.display().to_string()
    };
    let working = heavy("w.txt", "claude-code/2.1.328/003-working.txt", "gated one");
    let blocked = heavy("b.txt", "claude-code/2.1.328/008-blocked.txt", "gated two");
    let explain = || env.explain(&tmux, &pane);
    tmux.type_line(&pane, &working);
    env.wait_row(&tmux, &pane, "state", "working", 10);
    wait_for(10, "the first title", || {
        (explain()["title"] == "gated one").then_some(())
    });
    tmux.type_line(&pane, &blocked);
    let row = env.wait_row(&tmux, &pane, "state", "blocked", 10);
    assert_eq!(row["source"], "screen_rule", "{row}");
    let v = wait_for(10, "the second title", || {
        let v = explain();
        (v["title"] == "gated two").then_some(v)
    });
    let pauses = v["redraw_pauses"].as_u64().unwrap();
    assert!(pauses >= 2, "each frame's redraw paused the copy: {v}");
    assert_eq!(
        v["output_paused"], false,
        "the flood gate is not what paused it"
    );
    // A frame drawn after the gate resumed the pane is seen as before.
    tmux.type_line(&pane, &fixture("claude-code/2.1.328/003-working.txt"));
    env.wait_row(&tmux, &pane, "state", "working", 10);
}

/// With pipes (the default), a pane that floods and that nothing reads has its pipe held closed
/// (the flood gate, `daemon::flood`): tmux writes its bytes nowhere, and its terminal is watched
/// for writes instead. It costs the rest nothing: an agent beside it is classified, the daemon's
/// memory stays bounded, the flooding program is never held up, the pipe is opened again for
/// the gate's samples, and what the pane runs next is read once tmux tells its new command.
#[test]
fn a_flooding_pane_read_through_its_pipe_holds_up_nothing() {
    let working = fixture("claude-code/2.1.328/003-working.txt");
    let mut tmux = Tmux::new();
    let env = Env::new();
    let agent = support::drawing_agent(&env, "claude");
    let flood = tmux.new_session("flood", Some("yes"));
    let pane = tmux.new_session("work", Some(&agent.display().to_string()));
    let yes: u32 = tmux
        .cmd(&["display-message", "-p", "-t", &flood, "#{pane_pid}"])
        .trim()
        .parse()
        .unwrap();
    let mut d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    let explain = |p: &str| {
        let (code, out, _) = env.run(&tmux, &["explain", p, "--json"]);
        let v: serde_json::Value = serde_json::from_str(&out).ok()?;
        (code == 0).then_some(v)
    };
    let held = || {
        let v = explain(&flood)?;
        let closed = tmux.cmd(&["display-message", "-p", "-t", &flood, "#{pane_pipe}"]);
        (v["output"] == "pipe (held closed: the pane floods)"
            && v["output_paused"] == true
            && closed.trim() == "0")
            .then_some(())
    };
    wait_for(10, "the agent read through its pipe", || {
        (explain(&pane)?["output"] == "pipe").then_some(())
    });
    wait_for(10, "the flood's pipe held closed", held);
    env.wait_row(&tmux, &pane, "agent", "claude", 10);
    tmux.type_line(&pane, &working);
    env.wait_row(&tmux, &pane, "state", "working", 10);
    // `yes` keeps running (tmux never stops reading it for our sake), and we keep up.
    let cpu = support::cpu_ticks;
    let before = cpu(yes);
    wait_for(10, "the flooding program to keep running", || {
        (cpu(yes) > before + 20).then_some(())
    });
    let rss = support::rss_kib(d.child.id());
    assert!(rss < 60 * 1024, "daemon RSS {rss} KiB while a pane floods");
    // Its writes are still known while its pipe is held, from its terminal: `yes` writes all
    // the time, so each look finds it wrote just now (3 s of looks, across a hold's length).
    let until = std::time::Instant::now() + std::time::Duration::from_secs(3);
    let mut looks = 0;
    while std::time::Instant::now() < until {
        if let Some(v) = explain(&flood) {
            if v["output"] == "pipe (held closed: the pane floods)" {
                looks += 1;
                let ago = v["wrote_ms_ago"].as_u64();
                assert!(
                    ago.is_some_and(|a| a < 500),
                    "a held pane's writes unseen: {v}"
                );
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(looks >= 5, "the pipe was held at only {looks} looks");
    // At each hold's end (2 s, then 4 s) the gate looks at the terminal a moment: `yes` still
    // writes, so the pause is held again with the pipe left closed, and no sample is taken.
    let v = wait_for(
        15,
        "the pause held again twice, the pipe still closed",
        || {
            let v = explain(&flood)?;
            (v["flood_holds"].as_u64()? >= 3 && held().is_some()).then_some(v)
        },
    );
    assert_eq!(
        v["flood_pauses"], 1,
        "the pipe was opened for a sample: {v}"
    );
    let reporter = env.path("reporter.sh");
    // The program that follows reports a moment after it starts: tmux tells its new command
    // within a second, and only then is the pipe opened again (what a new program writes in
    // a held pane before that is not read).
    script(
        &reporter,
        &format!(
            "#!/bin/bash\nsleep 3\n{BIN} report --app flooder --state blocked --kind permission\nexec sleep 300\n"
        ),
    );
    tmux.cmd(&[
        "respawn-pane",
        "-k",
        "-t",
        &flood,
        &reporter.display().to_string(),
    ]);
    let row = env.wait_row(&tmux, &flood, "state", "blocked", 15);
    assert_eq!(row["source"], "status_report", "{row}");
    let v = wait_for(
        10,
        "the new program probed, read through the pipe opened again",
        || {
            let v = explain(&flood)?;
            (v["foreground"].to_string().contains("sleep") && v["output"] == "pipe").then_some(v)
        },
    );
    assert_eq!(v["output_paused"], false, "{v}");
    assert_eq!(
        tmux.cmd(&["display-message", "-p", "-t", &flood, "#{pane_pipe}"])
            .trim(),
        "1",
        "the pipe is open again"
    );
    let row = env.pane_row(&tmux, &flood).unwrap();
    assert_eq!(row["state"], "blocked", "{row}");
    let started = std::time::Instant::now();
    d.stop();
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    // Nothing of ours is left in tmux: the pipe closed, its mark gone.
    let left = tmux.cmd(&["display-message", "-p", "-t", &flood, "#{pane_pipe}"]);
    assert_eq!(left.trim(), "0", "our pipe closed at the stop");
}

/// A pane whose flood stops while its program goes on (no new command for tmux to report) has
/// its pipe opened again at the end of a hold, once its terminal was still for a moment, not
/// at a sample half a minute on: what it writes next, a status report, is read.
#[test]
fn a_flood_that_stops_is_read_again_at_the_end_of_its_hold() {
    let mut tmux = Tmux::new();
    let env = Env::new();
    let mut d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    // Bash alone (builtins): about 3 s of lines, then it waits for a line typed in the pane,
    // prints a status report and waits again; the pane's command stays `bash` throughout.
    let flooder = env.path("flooder.sh");
    script(
        &flooder,
        &format!(
            "#!/bin/bash\nreport=$({BIN} report --app flooder --state blocked --kind permission --stdout)\n\
             line=$(printf '%0200d' 0)\nend=$((SECONDS + 3))\n\
             while [ $SECONDS -lt $end ]; do echo \"$line\"; done\n\
             read -r\nprintf '%s' \"$report\"\nread -r -t 300\n"
        ),
    );
    let pane = tmux.new_session("flood", Some(&flooder.display().to_string()));
    let explain = || {
        let (code, out, _) = env.run(&tmux, &["explain", &pane, "--json"]);
        let v: serde_json::Value = serde_json::from_str(&out).ok()?;
        (code == 0).then_some(v)
    };
    wait_for(10, "the flood's pipe held closed", || {
        (explain()?["output"] == "pipe (held closed: the pane floods)").then_some(())
    });
    let t0 = std::time::Instant::now();
    // The flood ends within 3 s; the hold that covers its end (2 s or 4 s) ends, the terminal
    // is still, and the pipe opens: well before a sample (32 s after the pause).
    let v = wait_for(15, "the pipe opened again after the flood", || {
        let v = explain()?;
        (v["output"] == "pipe" && v["output_paused"] == false).then_some(v)
    });
    eprintln!("read again {:?} after the pipe was seen held", t0.elapsed());
    assert_eq!(v["flood_pauses"], 1, "{v}");
    assert_eq!(
        tmux.cmd(&[
            "display-message",
            "-p",
            "-t",
            &pane,
            "#{pane_current_command}"
        ])
        .trim(),
        "bash",
        "the pane's command did not change"
    );
    tmux.cmd(&["send-keys", "-t", &pane, "Enter"]);
    let row = env.wait_row(&tmux, &pane, "state", "blocked", 10);
    assert_eq!(row["source"], "status_report", "{row}");
    d.stop();
}

/// A pane that writes as fast as tmux reads (`yes`) read through its pipe (the flood gate off,
/// `flood_pause_kib_s = 0`, so the pipe stays open) must not grow the tmux server: tmux keeps
/// in its own memory whatever a pipe has not taken yet (and a client of another session stops
/// it from holding the pane back instead). Read at one pipe-full a period, the server grew by
/// 17 MB a second; each read takes everything the pipe holds, and the daemon gets what the
/// pipe's keeper keeps (`tmux::pipe::keep`).
#[test]
fn a_pipe_is_read_as_fast_as_a_flooding_pane_writes() {
    let mut tmux = Tmux::new();
    let mut env = Env::new();
    env.vars
        .push(("THINKTERM_FLOOD_PAUSE_KIB_S".into(), "0".into()));
    let flood = tmux.new_session("flood", Some("yes"));
    tmux.new_session("other", None);
    let pid = |f: &str| -> u32 {
        tmux.cmd(&["display-message", "-p", "-t", &flood, f])
            .trim()
            .parse()
            .unwrap()
    };
    let (server, yes) = (pid("#{pid}"), pid("#{pane_pid}"));
    let mut d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    wait_for(10, "the flood read through its pipe", || {
        let (code, out, _) = env.run(&tmux, &["explain", &flood, "--json"]);
        let v: serde_json::Value = serde_json::from_str(&out).ok()?;
        (code == 0 && v["output"] == "pipe").then_some(())
    });
    let before = support::cpu_ticks(yes);
    // Six seconds of `yes`'s CPU: hundreds of megabytes through tmux.
    wait_for(40, "the flooding program to run for 6 s of CPU", || {
        (support::cpu_ticks(yes) > before + 600).then_some(())
    });
    let rss = support::rss_kib(server);
    assert!(
        rss < 48 * 1024,
        "tmux server RSS {rss} KiB after 6 s of a flood read through our pipe"
    );
    assert_eq!(
        tmux.cmd(&["display-message", "-p", "-t", &flood, "#{pane_pipe}"])
            .trim(),
        "1",
        "the pipe stays open"
    );
    d.stop();
}

/// Gemini CLI's recorded stream written in three bursts as fast as the pty takes them (1.2 MB of
/// start and streaming, the 233 KB end-of-reply redraw, the permission prompt). Before the
/// redraw gate, our copy of the first burst (about three times its size once tmux escaped it)
/// queued the capture replies behind it: the daemon went from idle straight to blocked and
/// never showed the working and idle between.
#[test]
fn bursts_of_redraws_do_not_hide_the_states_between_them() {
    let raw = fixture("gemini-cli/0.61.0/raw-main-120x40.bin");
    let mut tmux = Tmux::new();
    let env = Env::new();
    let go = env.path("go");
    let agent = env.path("bin/gemini");
    // Frames 006 (working), 007 (idle) and 008 (blocked) end at these offsets.
    script(
        &agent,
        &format!(
            "#!/bin/bash\nuntil [ -e {go} ]; do sleep 0.1; done\nhead -c 1193242 {raw}\nsleep 3\n\
             tail -c +1193243 {raw} | head -c 233638\nsleep 3\n\
             tail -c +1426881 {raw} | head -c 12767\nsleep 300\n",
            go = go.display()
        ),
    );
    let pane = tmux.new_session("gem", Some(&agent.display().to_string()));
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    env.wait_row(&tmux, &pane, "agent", "gemini", 10);
    let rx = events(&env, &tmux);
    std::fs::write(&go, "").unwrap();
    let mut seen = Vec::new();
    let mut all = Vec::new();
    while seen.last().map(String::as_str) != Some("blocked") {
        let ev = rx
            .recv_timeout(std::time::Duration::from_secs(15))
            .unwrap_or_else(|_| panic!("no blocked; states seen: {seen:?}"));
        all.push(format!("{} {} {}", ev["time_ms"], ev["new"], ev["rule"]));
        if let Some(s) = ev["new"].as_str() {
            if seen.last().map(String::as_str) != Some(s) {
                seen.push(s.to_string());
            }
        }
    }
    // The pane may have been idle before the first burst.
    if seen.first().map(String::as_str) == Some("idle") {
        seen.remove(0);
    }
    assert_eq!(seen, ["working", "idle", "blocked"], "events: {all:#?}");
}

/// An agent that was running before the daemon started sent its title when nobody read its
/// bytes; Gemini CLI puts its state there and sends it again only when the state changes. The
/// daemon takes the title tmux holds for the pane at its first look, so such a pane reads
/// "working" at once (it read "idle" until the next change before).
#[test]
fn an_agent_running_before_the_daemon_started_is_read_with_the_title_it_sent_then() {
    let frame = fixture("gemini-cli/0.61.0/005-working.txt");
    let mut tmux = Tmux::new();
    let env = Env::new();
    let agent = env.path("bin/gemini");
    script(
        &agent,
        &format!(
            "#!/bin/bash\nprintf '\\033]2;%s\\007' '✦  Working… (gemini)'\n\
             printf '\\033[H\\033[2J'\ncat {frame}\nsleep 300\n"
        ),
    );
    let pane = tmux.new_session("gem", Some(&agent.display().to_string()));
    wait_for(10, "the title in tmux", || {
        let t = tmux.cmd(&["display-message", "-p", "-t", &pane, "#{pane_title}"]);
        t.contains("Working").then_some(())
    });
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    let row = env.wait_row(&tmux, &pane, "state", "working", 10);
    assert_eq!(row["rule"], "title_working", "{row}");
}

#[test]
fn an_agent_started_later_by_the_panes_own_first_process_is_identified() {
    let mut tmux = Tmux::new();
    let env = Env::new();
    let config = env.path("config/thinkterm/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "probe_interval_s = 1\n").unwrap();
    let agent = support::drawing_agent(&env, "claude");
    // The pane's first process stays in the foreground and starts the agent as a child later
    // (no exec, so tmux's pane_current_command stays `sh`).
    let wrapper = env.path("wrapper.sh");
    script(
        &wrapper,
        &format!("#!/bin/sh\nsleep 2\n{}\nsleep 300\n", agent.display()),
    );
    let pane = tmux.new_session("wrap", Some(&wrapper.display().to_string()));
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    let row = wait_for(10, "pane listed", || env.pane_row(&tmux, &pane));
    assert!(row["agent"].is_null(), "{row}");
    env.wait_row(&tmux, &pane, "agent", "claude", 20);
}

/// Regression: the config read the environment with `std::env::vars()`, which panics on a
/// variable that is not UTF-8: any such variable in the person's environment stopped
/// `thinkterm-sidecar config` and the daemon at start. A bad value for one of our keys is a
/// warning; the range check applies to the environment too.
#[test]
fn a_non_utf8_environment_is_read_and_out_of_range_values_are_named() {
    use std::os::unix::ffi::OsStrExt;
    let tmux = Tmux::new();
    let env = Env::new();
    let out = env
        .sidecar(&tmux, &["config"])
        .env(
            std::ffi::OsStr::from_bytes(b"SOMETHING_ELSE"),
            std::ffi::OsStr::from_bytes(b"caf\xe9"),
        )
        .env("THINKTERM_SOUND", std::ffi::OsStr::from_bytes(b"\xff"))
        .env("THINKTERM_CAPTURE_DELAY_MS", "5000")
        .output()
        .expect("run config");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("sound = true  # default"), "{stdout}");
    assert!(
        stdout.contains("capture_delay_ms = 40  # default"),
        "{stdout}"
    );
    assert!(
        stdout.contains("# THINKTERM_DISABLE_SOUND is set"),
        "{stdout}"
    );
    assert!(
        stderr.contains(
            "THINKTERM_CAPTURE_DELAY_MS: capture_delay_ms = 5000 is out of range (0..=2000)"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("THINKTERM_SOUND: sound: expected true or false"),
        "{stderr}"
    );
}

/// A request line longer than the cap is answered with an error that says so and its
/// connection is closed (the daemon never holds more than the cap for it); a client connected
/// before and one connecting after are served as ever.
#[test]
fn an_oversized_request_line_is_refused_and_the_daemon_keeps_serving() {
    use std::io::{BufRead, Write};
    use thinkterm_sidecar::ipc::framing::MAX_REQUEST_LINE;
    use thinkterm_sidecar::ipc::schema::{Reply, Request};
    let mut tmux = Tmux::new();
    let pane = tmux.new_session("big", None);
    let env = Env::new();
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    let sock = daemon_socket(&env);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut before = rt
        .block_on(thinkterm_sidecar::ipc::Client::connect(&sock))
        .expect("connect");

    let mut s = std::os::unix::net::UnixStream::connect(&sock).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    // One byte over the cap, and no newline yet: the daemon must not wait for one. The write
    // may fail once the daemon has closed: what it answered is still there to read.
    let _ = s.write_all(&vec![b' '; MAX_REQUEST_LINE + 1]);
    let mut r = std::io::BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).expect("an answer");
    let reply: Reply = serde_json::from_str(&line).expect("a reply");
    assert!(
        matches!(&reply, Reply::Error { message }
            if message.contains(&format!("request line longer than the {MAX_REQUEST_LINE}-byte cap"))),
        "{line}"
    );
    line.clear();
    assert_eq!(r.read_line(&mut line).expect("closed"), 0, "{line}");

    let reply = rt
        .block_on(before.request(&Request::Agents))
        .expect("still served");
    assert!(
        matches!(&reply, Reply::Snapshot { panes, .. } if panes.iter().any(|p| p.pane.to_string() == pane)),
        "{reply:?}"
    );
    assert!(
        env.pane_row(&tmux, &pane).is_some(),
        "a new client is served"
    );
    drop(d);
}

/// Regression: `focus` said "Focused" as soon as the commands were sent, whatever tmux then
/// answered. It now answers once tmux has run them (the pane is active when the command
/// returns) and fails with tmux's own message when tmux refuses one.
#[test]
fn focus_answers_after_tmux_and_reports_a_refusal() {
    let mut tmux = Tmux::new();
    let first = tmux.new_session("front", None);
    let second = tmux
        .cmd(&["split-window", "-d", "-t", &first, "-P", "-F", "#{pane_id}"])
        .trim()
        .to_string();
    let _person = support::Client::attach(&tmux, "front", 100, 30);
    let env = Env::new();
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    wait_for(10, "both panes listed", || env.pane_row(&tmux, &second));

    let (code, out, err) = env.run(&tmux, &["focus", &second]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!("Focused {second} in client ")),
        "{out}"
    );
    let active = tmux.cmd(&["display-message", "-p", "-t", &second, "#{pane_active}"]);
    assert_eq!(active.trim(), "1", "done means done");

    // tmux now refuses `select-pane` (an alias that cannot take its arguments).
    tmux.cmd(&[
        "set-option",
        "-s",
        "command-alias[99]",
        "select-pane=display-message -p refused",
    ]);
    let (code, out, err) = env.run(&tmux, &["focus", &first]);
    assert_ne!(code, 0, "{out}");
    assert!(
        err.contains(&format!(
            "tmux refused `select-pane -t {first}`: parse error"
        )),
        "{err}"
    );
    drop(d);
}

/// A program started in a pane is seen from the pane's own bytes, in whatever session: the
/// shell's echo of the line that started it asks for a look at the pane's foreground a moment
/// later (tmux's world subscription no longer reads every pane's command once a second). The
/// slow timer is out of the way (an hour), so only that look can find these. A program the
/// shell `exec`s keeps the job and the process: the look tells it by the leader's name.
#[test]
fn a_program_started_in_any_session_is_seen_after_its_shell_s_echo() {
    let mut tmux = Tmux::new();
    let mut env = Env::new();
    env.vars
        .push(("THINKTERM_PROBE_INTERVAL_S".into(), "3600".into()));
    tmux.new_session("first", None);
    let job = tmux.new_session("other", None);
    let exec = tmux.new_window("other", None);
    // No window is renamed after its program (a rename is a re-list, which reads tmux's name).
    tmux.cmd(&["set-option", "-g", "automatic-rename", "off"]);
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    for pane in [&job, &exec] {
        env.wait_row(&tmux, pane, "fg_process", "bash", 10);
    }
    tmux.type_line(&job, "sleep 300");
    tmux.type_line(&exec, "exec sleep 301");
    // About a second after the echo at the latest; the deadline only bounds a failure.
    env.wait_row(&tmux, &job, "fg_process", "sleep", 5);
    env.wait_row(&tmux, &exec, "fg_process", "sleep", 5);
    drop(d);
}

/// With pipes, one control client watches the whole server. A change tmux tells only a
/// session's own clients (here a silent `respawn-pane` in another session: no byte written) is
/// still seen, through the world subscription; when the session our client is on is killed,
/// another is attached and every pane is still followed; a sidecar killed outright leaves its
/// pipes to the next one, which replaces them, and a clean stop takes them all away.
#[test]
fn one_client_watches_every_session_and_survives_its_own_session_going() {
    let mut tmux = Tmux::new();
    let env = Env::new();
    let first = tmux.new_session("first", None);
    let other = tmux.new_session("other", None);
    let mut d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    let ours = || {
        tmux.cmd(&[
            "list-clients",
            "-F",
            "#{client_control_mode} #{session_name}",
        ])
        .lines()
        .filter(|l| l.starts_with("1 "))
        .map(|l| l[2..].to_string())
        .collect::<Vec<_>>()
    };
    wait_for(10, "one control client, on the first session", || {
        (ours() == ["first"]).then_some(())
    });
    // Nothing is written: only the world subscription can tell that its first process changed.
    tmux.cmd(&["respawn-pane", "-k", "-t", &other, "exec sleep 300"]);
    env.wait_row(&tmux, &other, "fg_process", "sleep", 10);
    tmux.cmd(&["kill-session", "-t", "first"]);
    wait_for(10, "our client moved to the other session", || {
        (ours() == ["other"]).then_some(())
    });
    let third = tmux.new_session("third", None);
    tmux.type_line(
        &third,
        &format!("{BIN} report --app t --state blocked --kind permission"),
    );
    let row = env.wait_row(&tmux, &third, "state", "blocked", 10);
    assert_eq!(row["source"], "status_report", "{row}");
    assert!(
        env.pane_row(&tmux, &first).is_none(),
        "the killed pane is gone"
    );
    // Killed outright: its pipes stay (marked); the next sidecar replaces them.
    let marks = || {
        tmux.cmd(&["list-panes", "-a", "-F", "#{pane_pipe}#{@thinkterm_pipe}"])
            .lines()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let before = marks();
    assert!(before.iter().all(|m| m.len() == 33), "{before:?}");
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &d.child.id().to_string()])
        .status();
    let _ = d.child.wait();
    let mut d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    wait_for(10, "the pipes replaced", || {
        let now = marks();
        (now.iter().all(|m| m.len() == 33) && now.iter().all(|m| !before.contains(m))).then_some(())
    });
    tmux.type_line(&third, &format!("{BIN} report --app t --state working"));
    env.wait_row(&tmux, &third, "state", "working", 10);
    d.stop();
    wait_for(10, "a clean stop takes pipes and marks away", || {
        marks().iter().all(|m| m == "0").then_some(())
    });
}

/// A server of 600 panes is read whole, through pipes, and a clean stop takes away everything
/// the sidecar set there. Asked for all at once, the pipes (two commands each) and every
/// window's idle options overflowed the control client's command queue: about 340 panes never
/// got a pipe, and status-line options were dropped. At stop, the clean-up was more commands
/// than the queue holds, and about a fifth of the pipes and marks stayed behind.
#[test]
fn a_server_of_600_panes_is_piped_whole_and_a_clean_stop_leaves_nothing_behind() {
    let mut tmux = Tmux::new();
    let env = Env::new();
    tmux.new_session("s0", None);
    // 40 sessions of 15 windows (`cat` in most: light), one tmux command line a session.
    for s in 0..40 {
        let name = format!("s{s}");
        let mut args: Vec<&str> = Vec::new();
        if s > 0 {
            args.extend(["new-session", "-d", "-s", &name, ";"]);
        }
        for _ in 0..14 {
            args.extend(["new-window", "-d", "-t", &name, "exec cat", ";"]);
        }
        args.pop();
        tmux.cmd(&args);
    }
    let marks = || {
        tmux.cmd(&["list-panes", "-a", "-F", "#{pane_pipe}#{@thinkterm_pipe}"])
            .lines()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(marks().len(), 600);
    let mut d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    wait_for(60, "every pane piped and marked", || {
        marks().iter().all(|m| m.len() == 33).then_some(())
    });
    let log = d.log_text();
    assert!(
        !log.contains("not reading commands") && !log.contains("control client"),
        "commands refused, or panes read through a control client:\n{log}"
    );
    // Idle windows show the default mark, from the one global option.
    let w = tmux.window_of("s7:3");
    assert_eq!(tmux.window_option(&w, "@thinkterm_mark"), "idle");
    d.stop();
    let left: Vec<String> = marks().into_iter().filter(|m| m != "0").collect();
    assert!(
        left.is_empty(),
        "{} panes keep a pipe or a mark, such as {:?}",
        left.len(),
        left.first()
    );
    assert_eq!(
        tmux.window_option(&w, "@thinkterm_mark"),
        "",
        "the default is gone too"
    );
    let hooks = tmux.cmd(&["show-hooks", "-g"]);
    assert!(!hooks.contains("thinkterm"), "hooks left behind: {hooks}");
}
