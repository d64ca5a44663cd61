//! Bad files (issue 20): a hundred invalid rule files beside one valid one, and corrupt or
//! truncated config, state and panel files. Each bad file is named with `file:line` (or its
//! path) once; nothing else is affected.

use super::support::{drawing_agent, fixtures, wait_for, Daemon, Env, Tmux};
use super::terminate;

/// Ten ways to get a rule file wrong; `n` picks one.
fn bad_rule_file(n: usize) -> Vec<u8> {
    match n % 10 {
        0 => b"id = \"bad\"\nversion = \"1\"\n[[rules]\nid = \"x\"\n".to_vec(),
        1 => b"id = \"bad\"\n[[rules]]\nid = \"x\"\nstate = \"sleeping\"\nregion = \"whole_recent\"\ncontains = [\"x\"]\n".to_vec(),
        2 => b"id = \"bad\"\n[[rules]]\nid = \"x\"\nstate = \"idle\"\nregion = \"whole_recent\"\nregex = ['(unclosed']\n".to_vec(),
        3 => b"name = \"no id\"\n".to_vec(),
        4 => b"id = \"bad\"\n[[rules]]\nid = \"x\"\nstate = \"idle\"\nregion = \"the_moon\"\ncontains = [\"x\"]\n".to_vec(),
        5 => b"id = \"bad\"\n[[rules]]\nid = \"x\"\nstate = \"idle\"\npriority = \"high\"\nregion = \"whole_recent\"\ncontains = [\"x\"]\n".to_vec(),
        6 => b"id = \"bad\"\n[[rules]]\nid = \"x\"\nstate = \"idle\"\nregion = \"whole_recent\"\ncontains = [\"x\"]\n[[rules]]\nid = \"x\"\nstate = \"idle\"\nregion = \"whole_recent\"\ncontains = [\"y\"]\n".to_vec(),
        7 => b"id = \"bad\"\nmin_engine_version = 999\n".to_vec(),
        8 => b"\xff\xfe not utf-8 \x00\x01".to_vec(),
        _ => b"id = \"bad\"\nversion = \"1\"\nid = \"twice\"\n".to_vec(),
    }
}

#[test]
fn a_hundred_bad_rule_files_are_each_rejected_with_file_and_line_and_the_good_one_works() {
    let mut tmux = Tmux::new();
    let env = Env::new();
    let rules = env.path("config/thinkterm/agent-detection");
    std::fs::create_dir_all(&rules).unwrap();
    for n in 0..100 {
        std::fs::write(rules.join(format!("bad-{n:03}.toml")), bad_rule_file(n)).unwrap();
    }
    std::fs::write(
        rules.join("zork.toml"),
        "id = \"zork\"\nversion = \"1\"\nname = \"Zork\"\n[identity]\nprocess_names = [\"zork-agent\"]\n\
         [[rules]]\nid = \"footer_working\"\nstate = \"working\"\npriority = 10\n\
         region = \"bottom_non_empty_lines(1)\"\ncontains = [\"(ctrl-c to stop)\"]\n",
    )
    .unwrap();
    let agent = drawing_agent(&env, "zork-agent");
    let screen = env.path("screen.txt");
    std::fs::write(&screen, "hello\n\n  [zork] thinking   (ctrl-c to stop)\n").unwrap();
    let pane = tmux.new_session("zz", Some(&agent.display().to_string()));
    let claude = tmux.new_window(
        "zz",
        Some(&drawing_agent(&env, "claude").display().to_string()),
    );
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);

    // The good file works: its agent is identified and classified.
    env.wait_row(&tmux, &pane, "agent", "zork", 15);
    tmux.type_line(&pane, &screen.display().to_string());
    env.wait_row(&tmux, &pane, "state", "working", 10);
    // The bundled rules are untouched.
    tmux.type_line(
        &claude,
        &fixtures::path("claude-code/2.1.328/008-blocked.txt")
            .display()
            .to_string(),
    );
    env.wait_row(&tmux, &claude, "state", "blocked", 10);

    // Every bad file is named once, with a line number.
    let log = d.log_text();
    for n in 0..100 {
        let name = format!("bad-{n:03}.toml:");
        let lines: Vec<&str> = log.lines().filter(|l| l.contains(&name)).collect();
        assert_eq!(lines.len(), 1, "{name} in:\n{}", lines.join("\n"));
        let after = &lines[0][lines[0].find(&name).unwrap() + name.len()..];
        assert!(
            after.starts_with(|c: char| c.is_ascii_digit()),
            "no line number: {}",
            lines[0]
        );
    }
    // doctor says so.
    let (code, out, _) = env.run(&tmux, &["doctor", "--json"]);
    assert_eq!(code, 1, "a rejected file is a problem: {out}");
    assert!(out.contains("100 override file(s) rejected"), "{out}");
}

#[test]
fn corrupt_config_state_and_panel_files_are_reported_once_and_replaced() {
    let mut tmux = Tmux::new();
    let env = Env::new();
    let agent = drawing_agent(&env, "claude");
    let pane = tmux.new_session("work", Some(&agent.display().to_string()));
    let working = fixtures::path("claude-code/2.1.328/003-working.txt");
    let idle = fixtures::path("claude-code/2.1.328/007-idle.txt");
    let window = tmux.window_of(&pane);

    // First run: a done mark, saved to the state folder.
    let mut d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    env.wait_row(&tmux, &pane, "agent", "claude", 15);
    tmux.type_line(&pane, &working.display().to_string());
    env.wait_row(&tmux, &pane, "state", "working", 10);
    tmux.type_line(&pane, &idle.display().to_string());
    wait_for(10, "the done mark", || {
        (tmux.window_option(&window, "@thinkterm_mark") == "done").then_some(())
    });
    let state = env.path("state/thinkterm");
    let done_file = wait_for(10, "the done file", || {
        std::fs::read_dir(&state).ok()?.flatten().find_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            (n.starts_with("done-") && n.ends_with(".json")).then(|| e.path())
        })
    });
    terminate(&mut d);

    // Truncated state, garbage panel options, a config that is not TOML.
    let text = std::fs::read_to_string(&done_file).unwrap();
    std::fs::write(&done_file, &text[..text.len() / 2]).unwrap();
    std::fs::write(state.join("panel.json"), b"{\"description\": tru\xff").unwrap();
    let config = env.path("config/thinkterm/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "sound = false\n[display\ndescription = 3\n").unwrap();

    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    env.wait_row(&tmux, &pane, "agent", "claude", 15);
    let log = d.log_text();
    assert_eq!(
        log.matches("done marks not restored").count(),
        1,
        "the truncated state file, once:\n{log}"
    );
    let (_, cfg, err) = env.run(&tmux, &["config"]);
    assert!(
        cfg.contains("config.toml:2") || err.contains("config.toml:2"),
        "the config's bad line is named: {cfg}{err}"
    );
    // Detection and the done mark work again, and the state file is whole again.
    tmux.type_line(&pane, &working.display().to_string());
    env.wait_row(&tmux, &pane, "state", "working", 10);
    tmux.type_line(&pane, &idle.display().to_string());
    wait_for(10, "a new done file", || {
        let t = std::fs::read_to_string(&done_file).ok()?;
        serde_json::from_str::<serde_json::Value>(&t)
            .ok()
            .filter(|v| v["done"].as_array().is_some_and(|a| !a.is_empty()))
    });
    // The daemon kept running through all of it.
    let mut d = d;
    assert!(d.child.try_wait().unwrap().is_none(), "the daemon exited");
}
