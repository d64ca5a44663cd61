//! The window card (S4.3) on real tmux. A window of six agents: real processes in real panes
//! that report their state through tmux with OSC 7501 (`thinkterm-sidecar report`), one of
//! them with a title made of tmux formats, styles and a `#(…)` command. A person's client is
//! attached inside an outer tmux, whose pane is captured to see what the client shows.
//!
//! - In a small popup (`display-popup -E … card --hold`, the plugin's popup style) the card
//!   fills the popup: header, four agents, `2 more`; a key closes it.
//! - As a menu (`card --menu`, what the plugin's key runs) on a small client: one item per
//!   agent that fits, each with its key, `2 more`, the hostile title shown literally and its
//!   command never run; choosing an item moves the client to that agent's pane.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::support::{self, wait_for, Daemon, Env, Tmux};

const BIN: &str = env!("CARGO_BIN_EXE_thinkterm-sidecar");
/// The window's name.
const WINDOW: &str = "agents";

/// One agent of the window: what its process reports.
struct Agent {
    app: &'static str,
    state: &'static str,
    title: String,
    msg: &'static str,
    extra: &'static [&'static str],
}

/// Six reporting agents in one tiled window, the daemon, and a client of `cols`x`rows` attached
/// inside an outer tmux.
struct Rig {
    env: Env,
    tmux: Tmux,
    outer: Tmux,
    _daemon: Daemon,
    /// `(pane, title)` per agent, in the order they were started.
    panes: Vec<(String, String)>,
    /// The window's id.
    window: String,
    /// The person's client's name.
    client: String,
    /// A file that the hostile title's `#(…)` would create.
    marker: std::path::PathBuf,
}

/// `s` as one single-quoted shell word.
fn sh(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

impl Rig {
    fn new(cols: u32, rows: u32) -> Rig {
        let env = Env::new();
        let marker = env.path("pwned");
        let hostile = format!(
            "#[fg=red]red #{{pane_id}} #S it's #(touch {}) end#",
            marker.display()
        );
        let agents = [
            Agent {
                app: "a-ask",
                state: "blocked",
                title: "review PR 42".into(),
                msg: "Run cargo test?",
                extra: &["--kind", "permission"],
            },
            Agent {
                app: "a-fail",
                state: "error",
                title: "fix the build".into(),
                msg: "tests failed",
                extra: &[],
            },
            Agent {
                app: "a-evil",
                state: "working",
                title: hostile,
                msg: "building",
                extra: &["--progress", "40"],
            },
            Agent {
                app: "a-push",
                state: "working",
                title: "deploy".into(),
                msg: "pushing",
                extra: &[],
            },
            Agent {
                app: "a-docs",
                state: "done",
                title: "write docs".into(),
                msg: "docs written",
                extra: &[],
            },
            Agent {
                app: "a-idle",
                state: "idle",
                title: "idle one".into(),
                msg: "ready",
                extra: &[],
            },
        ];
        let mut tmux = Tmux::new();
        let mut panes = Vec::new();
        for (i, a) in agents.iter().enumerate() {
            // Each reports once told to (after the daemon watches its pane), then stays.
            let script = env.path(&format!("bin/agent{i}"));
            let mut words = vec![
                sh(BIN),
                "report".into(),
                "--app".into(),
                a.app.into(),
                "--state".into(),
                a.state.into(),
                "--title".into(),
                sh(&a.title),
                "--msg".into(),
                sh(a.msg),
            ];
            words.extend(a.extra.iter().map(|w| w.to_string()));
            support::script(
                &script,
                &format!("#!/bin/bash\nread\n{}\nread\n", words.join(" ")),
            );
            let cmd = script.display().to_string();
            let pane = if i == 0 {
                tmux.new_session("work", Some(&cmd))
            } else {
                let p = tmux
                    .cmd(&["split-window", "-t", "work", "-P", "-F", "#{pane_id}", &cmd])
                    .trim()
                    .to_string();
                tmux.cmd(&["select-layout", "-t", "work", "tiled"]);
                p
            };
            panes.push((pane, a.title.clone()));
        }
        tmux.cmd(&["rename-window", "-t", "work", WINDOW]);
        let window = tmux.window_of(&panes[0].0);
        let daemon = Daemon::start(&env, &tmux);
        daemon.wait_ready(&env, &tmux);
        for (p, _) in &panes {
            wait_for(10, "the pane listed", || env.pane_row(&tmux, p));
        }
        for (p, _) in &panes {
            tmux.cmd(&["send-keys", "-t", p, "Enter"]);
        }
        wait_for(15, "six agents with their reported states", || {
            let v = env.agents(&tmux)?;
            let reported = v["panes"]
                .as_array()?
                .iter()
                .filter(|r| r["window"] == window.as_str() && !r["agent"].is_null())
                .filter(|r| !r["state"].is_null())
                .count();
            (reported == 6).then_some(())
        });

        // A person's client of cols x rows: the outer tmux's window, without a status line.
        let mut outer = Tmux::new();
        let attach = format!("env -u TMUX tmux -L {} attach -t work", tmux.name);
        outer.new_session("outer", Some(&attach));
        outer.cmd(&["set", "-g", "status", "off"]);
        outer.cmd(&[
            "resize-window",
            "-t",
            "outer",
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
        ]);
        let client = wait_for(10, "the client attached at its size", || {
            let out = tmux.cmd(&[
                "list-clients",
                "-F",
                "#{client_control_mode} #{client_width}x#{client_height} #{client_name}",
            ]);
            let want = format!("0 {cols}x{rows} ");
            out.lines()
                .find_map(|l| l.strip_prefix(&want).map(str::to_string))
        });
        Rig {
            env,
            tmux,
            outer,
            _daemon: daemon,
            panes,
            window,
            client,
            marker,
        }
    }

    /// What the person's client shows now.
    fn screen(&self) -> String {
        self.outer.cmd(&["capture-pane", "-p", "-t", "outer"])
    }

    /// The client's current pane.
    fn client_pane(&self) -> String {
        let out = self
            .tmux
            .cmd(&["list-clients", "-F", "#{client_name} #{pane_id}"]);
        out.lines()
            .find_map(|l| {
                l.strip_prefix(&format!("{} ", self.client))
                    .map(str::to_string)
            })
            .expect("the client is listed")
    }
}

/// Waits for `child` to exit; its status.
fn wait_exit(child: &mut Child, secs: u64, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(st) = child.try_wait().expect("wait") {
            return st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("timed out after {secs}s waiting for: {what}");
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The card in a small popup of a real client: the header with the count, the four most urgent
/// agents, each over its state line, and `2 more` on the popup's last line; a key closes it.
/// The same card by `card --json` and as plain text.
#[test]
fn the_card_of_six_agents_fills_a_small_popup_then_says_how_many_more() {
    let rig = Rig::new(100, 30);
    let (env, tmux) = (&rig.env, &rig.tmux);

    let (code, out, err) = env.run(tmux, &["card", &format!("work:{WINDOW}"), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["agents"], 6);
    assert_eq!(v["more"], 0);
    assert_eq!(v["window"], rig.window.as_str());
    let states: Vec<&str> = v["shown"]
        .as_array()
        .expect("shown")
        .iter()
        .map(|a| a["state"].as_str().unwrap_or("unknown"))
        .collect();
    assert_eq!(
        states[..4],
        ["blocked", "error", "working", "working"],
        "most urgent first: {out}"
    );
    assert_eq!(v["shown"][0]["waiting"], "permission");
    assert_eq!(v["shown"][0]["pane"], rig.panes[0].0.as_str());
    assert_eq!(v["shown"][2]["progress"], 40);
    assert_eq!(v["shown"][2]["title"], rig.panes[2].1.as_str());

    let (code, out, err) = env.run(tmux, &["card", &rig.panes[3].0, "--height", "6"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6, "{out}");
    assert!(
        lines[0].starts_with(WINDOW) && lines[0].ends_with("6 agents"),
        "{out}"
    );
    assert!(
        lines[2].contains("Waiting for permission · Run cargo test?"),
        "{out}"
    );
    assert!(lines[3].contains("fix the build"), "{out}");
    assert_eq!(lines[5], "4 more");

    // The popup, as the plugin's popup style opens it: 40x12, so 10 lines inside.
    let card = format!(
        "env XDG_RUNTIME_DIR={} XDG_STATE_HOME={} {BIN} -L {} card {} --hold",
        env.path("run").display(),
        env.path("state").display(),
        tmux.name,
        rig.window
    );
    let mut popup = std::process::Command::new("tmux")
        .args(["-L", &tmux.name, "display-popup", "-c", &rig.client])
        .args(["-E", "-w", "40", "-h", "12", &card])
        .stdin(Stdio::null())
        .spawn()
        .expect("display-popup");
    let screen = wait_for(15, "the card in the popup", || {
        let s = rig.screen();
        (s.contains("6 agents") && s.contains("2 more")).then_some(s)
    });
    let rows: Vec<&str> = screen.lines().collect();
    let top = rows
        .iter()
        .position(|l| l.contains("6 agents"))
        .expect("header");
    let last = rows
        .iter()
        .position(|l| l.contains("2 more"))
        .expect("more");
    assert_eq!(
        last - top,
        9,
        "the card fills the 10 lines of the popup:\n{screen}"
    );
    assert!(rows[top].contains(&format!("│{WINDOW} ")), "{screen}");
    assert!(
        rows[top - 1].contains('┌') && rows[last + 1].contains('└'),
        "{screen}"
    );
    let shown: Vec<&str> = rows[top + 1..last]
        .iter()
        .copied()
        .filter(|l| l.contains('◆'))
        .collect();
    assert_eq!(shown.len(), 4, "{screen}");
    for (line, want) in
        shown
            .iter()
            .zip(["review PR 42", "fix the build", "#[fg=red]red", "deploy"])
    {
        assert!(line.contains(want), "{want:?} in {line:?}\n{screen}");
    }
    assert!(rows[top + 2].contains("Waiting for permission"), "{screen}");
    assert!(rows[top + 6].contains("Working · 40%"), "{screen}");
    assert!(!screen.contains("write docs") && !screen.contains("idle one"));

    rig.outer.cmd(&["send-keys", "-t", "outer", "x"]);
    let st = wait_exit(&mut popup, 10, "the popup closed by a key");
    assert!(st.success(), "display-popup: {st}");
    wait_for(10, "the popup gone from the screen", || {
        (!rig.screen().contains("6 agents")).then_some(())
    });
}

/// The menu on a small client (80x12): one item per agent that fits (keys 1 to 4), each over
/// its state line, then `2 more`; the hostile title shown as text, its `#(…)` never run; the
/// key of an agent moves the client to that agent's pane.
#[test]
fn the_card_menu_lists_the_agents_and_an_item_goes_to_its_pane() {
    let rig = Rig::new(80, 12);
    let (env, tmux) = (&rig.env, &rig.tmux);
    tmux.cmd(&["select-pane", "-t", &rig.panes[5].0]);
    wait_for(10, "the client on the idle agent's pane", || {
        (rig.client_pane() == rig.panes[5].0).then_some(())
    });

    // As the plugin's key runs it, but without a window: the client's current one.
    let mut menu = env
        .sidecar(tmux, &["card", "--menu", "--client", &rig.client])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("card --menu");
    let screen = wait_for(15, "the menu on the client", || {
        let s = rig.screen();
        (s.contains(&format!(" {WINDOW} · 6 agents ")) && s.contains("2 more")).then_some(s)
    });
    let keyed = |k: usize| {
        screen
            .lines()
            .find(|l| l.contains(&format!("({k}) │")))
            .unwrap_or_else(|| panic!("no item ({k}):\n{screen}"))
    };
    let titles = ["review PR 42", "fix the build", "#[fg=red]red", "deploy"];
    for (k, want) in (1..=4).zip(titles) {
        assert!(keyed(k).contains(want), "item {k} is {want:?}:\n{screen}");
    }
    assert!(!screen.contains("(5)"), "four agents fit:\n{screen}");
    let hostile = keyed(3);
    for literal in ["#[fg=red]red", "#{pane_id}", "#S it's", "#(touch "] {
        assert!(
            hostile.contains(literal),
            "{literal:?} shown as text: {hostile}"
        );
    }
    assert!(
        screen.contains("Waiting for permission · Run cargo test?"),
        "{screen}"
    );
    assert!(screen.contains("Working · 40% · building"), "{screen}");
    assert!(!rig.marker.exists(), "the title's #(…) ran");

    // Key 2: the failed agent's pane.
    rig.outer.cmd(&["send-keys", "-t", "outer", "2"]);
    wait_for(10, "the client moved to the chosen agent's pane", || {
        (rig.client_pane() == rig.panes[1].0).then_some(())
    });
    let st = wait_exit(&mut menu, 10, "card --menu returns once the menu closed");
    let out = menu.wait_with_output().expect("output");
    assert!(st.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!rig.marker.exists(), "the title's #(…) ran");
}
