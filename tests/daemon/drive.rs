//! Driving one pane from another on real tmux (issue 16): a shell in a second pane sends a
//! prompt to a fake Claude Code, waits for its turn to end, and reads its reply; text with `;`,
//! `$(…)` and key names arrives literally; `wait` on a pane that closes says so; `start` opens
//! a window running an argv.

use super::support::{fixtures, script, wait_for, Daemon, Env, Tmux};

/// A fake Claude Code that converses: it shows a real idle screen, and for each line typed
/// shows a real working screen for a second and a half, then the idle screen with the prompt
/// and a reply quoting it in place of the recorded ones.
fn conversing_agent(env: &Env) -> std::path::PathBuf {
    let idle = fixtures::path("claude-code/2.1.328/001-idle.txt");
    let working = fixtures::path("claude-code/2.1.328/003-working.txt");
    let answered = fixtures::path("claude-code/2.1.328/007-idle.txt");
    let path = env.path("bin/claude");
    script(
        &path,
        &format!(
            r#"#!/bin/bash
printf '\033[H\033[2J'; cat '{idle}'
while IFS= read -r prompt; do
  printf '\033[H\033[2J'; cat '{working}'
  sleep 1.5
  printf '\033[H\033[2J'
  while IFS= read -r l; do
    case "$l" in
      "❯ EVAL_SLOW"*) printf '❯ %s\n' "$prompt" ;;
      "● Let me think"*) printf '● REPLY to [%s]\n' "$prompt" ;;
      *) printf '%s\n' "$l" ;;
    esac
  done < '{answered}'
done
"#,
            idle = idle.display(),
            working = working.display(),
            answered = answered.display()
        ),
    );
    path
}

#[test]
fn a_shell_in_another_pane_sends_a_prompt_waits_for_the_turn_and_reads_the_reply() {
    let mut tmux = Tmux::new();
    let env = Env::new();
    let agent = conversing_agent(&env);
    let pane = tmux.new_session("work", Some(&agent.display().to_string()));
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    env.wait_row(&tmux, &pane, "state", "idle", 15);

    // The driver runs in a pane of its own, with no -L: the daemon is found through $TMUX.
    let out = env.path("out");
    std::fs::create_dir_all(&out).unwrap();
    let prompt = r#"what is $(id); C-c Enter `x` 'q' "d" \n"#;
    std::fs::write(out.join("prompt.txt"), prompt).unwrap();
    let driver = env.path("bin/driver");
    script(
        &driver,
        &format!(
            r#"#!/bin/bash
export XDG_RUNTIME_DIR='{run}' XDG_STATE_HOME='{state}' XDG_CONFIG_HOME='{config}' THINKTERM_DISABLE_SOUND=1
B='{bin}'; O='{out}'
"$B" send work:0.0 - < "$O/prompt.txt" > "$O/send.txt" 2>&1; echo "send $?" >> "$O/codes"
"$B" wait {pane} --for done --timeout 30 > "$O/wait.txt" 2>&1; echo "wait $?" >> "$O/codes"
"$B" read {pane} --json > "$O/read.json" 2>&1; echo "read $?" >> "$O/codes"
touch "$O/finished"
"#,
            run = env.path("run").display(),
            state = env.path("state").display(),
            config = env.path("config").display(),
            bin = env!("CARGO_BIN_EXE_thinkterm-sidecar"),
            out = out.display(),
        ),
    );
    tmux.new_window("work", Some(&driver.display().to_string()));
    wait_for(40, "the driver to finish", || {
        out.join("finished").exists().then_some(())
    });
    let codes = std::fs::read_to_string(out.join("codes")).unwrap();
    assert_eq!(codes, "send 0\nwait 0\nread 0\n", "{codes}");
    // `wait` printed the final state line after the turn: working, then idle.
    let waited = std::fs::read_to_string(out.join("wait.txt")).unwrap();
    assert_eq!(waited.trim(), format!("{pane} claude idle"));
    // The agent got the text exactly (quoted back in its reply), and `read` saw the reply.
    let read: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("read.json")).unwrap()).unwrap();
    assert_eq!(read["agent"], "claude");
    assert_eq!(read["state"], "idle");
    let screen = read["screen"].as_str().unwrap();
    assert!(
        screen.contains(&format!("● REPLY to [{prompt}]")),
        "{screen}"
    );
    // The reply is on the screen, not a command's output: nothing ran `id`.
    assert!(!screen.contains("uid="), "{screen}");
    // The state the person sees agrees.
    let row = env.pane_row(&tmux, &pane).unwrap();
    assert_eq!(row["state"], "idle");
}

#[test]
fn send_waits_for_idle_on_request_wait_reports_a_closed_pane_and_start_runs_an_argv() {
    let mut tmux = Tmux::new();
    let env = Env::new();
    let cat = tmux.new_session("work", Some("cat"));
    let d = Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);

    // Key names and shell syntax arrive as text; `--no-enter` leaves the line open.
    let (code, _, err) = env.run(&tmux, &["send", &cat, "C-c", "$(echo", "no);", "Enter"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = env.run(&tmux, &["send", "--no-enter", &cat, "--", "-tail"]);
    assert_eq!(code, 0, "{err}");
    let screen = wait_for(10, "the text on the screen", || {
        let s = tmux.cmd(&["capture-pane", "-p", "-t", &cat]);
        s.contains("-tail").then_some(s)
    });
    // cat echoes a line back once Enter arrives: the first line twice, the open one once.
    assert_eq!(
        screen.matches("C-c $(echo no); Enter").count(),
        2,
        "{screen}"
    );
    assert_eq!(screen.matches("-tail").count(), 1, "{screen}");

    // `start` runs the argv in a new window of the named session, not selected; its pane id
    // is what it prints.
    let marker = env.path("started");
    let (code, out, err) = env.run(
        &tmux,
        &[
            "start",
            "--session",
            "work",
            "--name",
            "helper",
            "--dir",
            &env.path("").display().to_string(),
            "--",
            "bash",
            "-c",
            "pwd > started; exec sleep 60",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let started = out.trim().to_string();
    assert!(started.starts_with('%'), "{out}");
    let (name, active) = {
        let s = tmux.cmd(&[
            "display-message",
            "-p",
            "-t",
            &started,
            "#{window_name} #{window_active}",
        ]);
        let mut it = s.split_whitespace();
        (
            it.next().unwrap_or_default().to_string(),
            it.next().unwrap_or_default().to_string(),
        )
    };
    assert_eq!((name.as_str(), active.as_str()), ("helper", "0"));
    let pwd = wait_for(10, "the started command to run", || {
        std::fs::read_to_string(&marker).ok()
    });
    assert_eq!(
        pwd.trim(),
        env.path("").display().to_string().trim_end_matches('/')
    );

    // `wait` on that pane, which closes: exit 4 and a clear line.
    let mut waiting = env
        .sidecar(&tmux, &["wait", &started, "--for", "idle"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Killed once the daemon counts the waiter's stream (its first snapshot, which has the
    // pane, is then on its way: a pane gone before that would be "no pane", another error).
    wait_for(10, "the waiter to subscribe", || {
        let (_, out, _) = env.run(&tmux, &["doctor", "--json"]);
        // A waiter that ended already (a pane made a moment ago read as "no pane", once) says
        // why, instead of a timeout that hides it.
        if let Ok(Some(st)) = waiting.try_wait() {
            let mut e = String::new();
            std::io::Read::read_to_string(waiting.stderr.as_mut().unwrap(), &mut e).unwrap();
            panic!("the waiter ended before the pane closed ({st:?}): {e}");
        }
        out.contains(" 1 stream(s) followed").then_some(())
    });
    tmux.cmd(&["kill-pane", "-t", &started]);
    let out = wait_for(15, "wait to end", || waiting.try_wait().ok().flatten());
    let mut err = String::new();
    std::io::Read::read_to_string(waiting.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(out.code(), Some(4), "{err}");
    assert!(err.contains(&format!("{started} closed")), "{err}");

    // `send --when-idle` to a pane that never becomes idle: exit 3, nothing typed.
    let (code, _, err) = env.run(
        &tmux,
        &["send", "--when-idle", "--timeout", "1", &cat, "never"],
    );
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("did not become idle"), "{err}");
    assert!(!tmux
        .cmd(&["capture-pane", "-p", "-t", &cat])
        .contains("never"));
}
