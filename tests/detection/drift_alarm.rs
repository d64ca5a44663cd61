//! The drift alarm end to end on real tmux (issue 17): a known agent whose screen turns into a
//! layout no rule knows is marked unrecognised within the window, with one log line naming the
//! agent and its version; the pane saved as a fixture classifies to the same verdict from the
//! file.

use super::support::{fixtures, script, wait_for, Daemon, Env, Tmux};
use std::time::{Duration, Instant};

/// The window the test sets (`drift_after_s`).
const WINDOW_S: u64 = 2;

#[test]
fn an_agent_drawing_a_layout_no_rule_knows_is_flagged_and_saved_as_a_fixture() {
    let mut tmux = Tmux::new();
    let env = Env::new();
    let config = env.path("config/thinkterm/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, format!("drift_after_s = {WINDOW_S}\n")).unwrap();
    // A fake Claude Code inside a package whose package.json gives its version. It shows a
    // real idle screen, then, on a line of input, redraws a layout no rule knows, 4 times a
    // second.
    let pkg = env.path("lib/node_modules/@anthropic-ai/claude-code");
    std::fs::create_dir_all(pkg.join("bin")).unwrap();
    std::fs::write(
        pkg.join("package.json"),
        r#"{"name": "@anthropic-ai/claude-code", "version": "2.1.999"}"#,
    )
    .unwrap();
    let agent = pkg.join("bin/claude");
    let idle = fixtures::path("claude-code/2.1.332/001-idle.txt");
    script(
        &agent,
        &format!(
            "#!/bin/bash\nprintf '\\033[H\\033[2J'; cat '{}'\nread -r _\ni=0\nwhile true; do \
             printf '\\033[H\\033[2J'; printf 'ZAP 9.0 :: frobnicating step %s\\n\\n  [ new \
             layout %s ]\\n' $i $i; i=$((i+1)); sleep 0.25; done\n",
            idle.display()
        ),
    );
    let pane = tmux.new_session("work", Some(&agent.display().to_string()));
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    let row = env.wait_row(&tmux, &pane, "rule", "input_box_ready", 15);
    assert_eq!(row["agent"], "claude");
    assert_eq!(row["unrecognised"], false);
    let row = env.wait_row(&tmux, &pane, "agent_version", "2.1.999", 15);
    assert_eq!(row["state"], "idle");

    // The new layout: no rule of Claude Code's matches while it keeps changing.
    let t0 = Instant::now();
    tmux.type_line(&pane, "go");
    let row = wait_for(WINDOW_S + 10, "the pane is marked unrecognised", || {
        env.pane_row(&tmux, &pane)
            .filter(|r| r["unrecognised"] == true)
    });
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_secs(WINDOW_S) && took < Duration::from_secs(WINDOW_S + 8),
        "flagged after {took:?} (window {WINDOW_S} s)"
    );
    // What `doctor` will list: the row says so, with the agent and its version.
    assert_eq!(row["agent"], "claude");
    assert_eq!(row["agent_version"], "2.1.999");
    let log = wait_for(5, "the log line", || {
        let log = d.log_text();
        log.contains("pane unrecognised").then_some(log)
    });
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("pane unrecognised"))
        .collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert!(
        lines[0].contains("agent=\"claude\"") || lines[0].contains("agent=claude"),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("2.1.999") && lines[0].contains(&pane),
        "{}",
        lines[0]
    );
    // `doctor` lists it (a warning with the agent, its version and the fix); the table marks it.
    let (_, out, _) = env.run(&tmux, &["doctor", "--json"]);
    let doc: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let check = doc["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == "drift"))
        .cloned()
        .unwrap_or_else(|| panic!("no drift check: {doc}"));
    assert_eq!(check["status"], "warn", "{check}");
    let detail = check["detail"].to_string();
    assert!(
        detail.contains(&format!("{pane}: claude 2.1.999: no rule matched")),
        "{check}"
    );
    let (code, out, _) = env.run(&tmux, &["agents"]);
    assert_eq!(code, 0);
    assert!(out.contains(" idle*"), "{out}");
    assert!(out.contains(&format!("# {pane}: * unrecognised")), "{out}");

    // explain says why, and saves the pane as a fixture.
    let saved = env.path("saved");
    let (code, out, err) = env.run(
        &tmux,
        &[
            "explain",
            &pane,
            "--json",
            "--save",
            &saved.display().to_string(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let live: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(live["unrecognised"], true);
    assert!(
        live["unrecognised_reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("no rule matched")),
        "{live}"
    );
    let txt = saved.join("001-idle.txt");
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(saved.join("001-idle.json")).unwrap())
            .unwrap();
    assert_eq!(meta["agent"], "claude");
    assert_eq!(meta["version"], "2.1.999");
    assert_eq!(meta["state"], "idle");
    assert_eq!(meta["fg_comm"], "claude");
    assert_eq!(
        (meta["width"].as_u64(), meta["height"].as_u64()),
        (Some(120), Some(40))
    );
    assert!(meta["verdict"]["unrecognised"].is_string(), "{meta}");
    assert!(std::fs::read_to_string(&txt)
        .unwrap()
        .contains("new layout"));

    // The saved screen, read back through `explain --file` (agent and title from the .json),
    // gets the verdict the daemon gave.
    let (code, out, err) = env.run(
        &tmux,
        &["explain", "--file", &txt.display().to_string(), "--json"],
    );
    assert_eq!(code, 0, "{err}");
    let from_file: serde_json::Value = serde_json::from_str(&out).unwrap();
    for k in ["agent", "state", "rule", "fallback"] {
        assert_eq!(
            from_file[k], live["explanation"][k],
            "{k}: {from_file} vs {live}"
        );
    }
    assert_eq!(from_file["fallback"], true);
}
