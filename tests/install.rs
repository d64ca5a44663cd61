//! Installing and integrating, against real parts: the tmux plugin (`thinkterm.tmux`) sourced
//! into private tmux servers (one daemon per server, started once and ending with its server;
//! formats, keys, the status line seen through an outer tmux; the user's own formats left
//! alone; a missing binary built with cargo in the background), `run --detach`, the journal's
//! log lines, the generated completions and man page loaded by bash and man, and `doctor` on a
//! healthy setup and with each thing broken in turn (tests/install/doctor.rs), and `skill setup`
//! with its hook (tests/install/skill.rs). The `.deb` test
//! is `#[ignore]`d (it builds the release binary and installs the package): run it with
//! `cargo test --test install -- --ignored`.
#![allow(clippy::unwrap_used)]
#![allow(missing_docs)]

#[path = "install/doctor.rs"]
mod doctor;
#[path = "install/rig.rs"]
mod rig;
#[path = "install/skill.rs"]
mod skill;
mod support;

use std::process::{Command, Stdio};

use rig::{daemons_of, gone, plugin_copy, Killer, Server};
use support::{wait_for, Client, Env, Tmux};

const BIN: &str = env!("CARGO_BIN_EXE_thinkterm-sidecar");
const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// The plugin end to end: one daemon however often the config is sourced, the formats and the
/// keys set, the spinner in the status line of a client (captured through an outer tmux), and
/// the daemon gone once its server is killed.
#[test]
fn the_plugin_starts_one_daemon_per_server_which_ends_with_it() {
    let env = Env::new();
    let plugin = plugin_copy(&env);
    let agent = support::drawing_agent(&env, "claude");
    let mut inner = Tmux::new();
    let server = Server::start(&mut inner, &env, "proj", Some(&agent.display().to_string()));
    let pane = inner
        .cmd(&["display-message", "-p", "-t", "proj", "#{pane_id}"])
        .trim()
        .to_string();
    let conf = env.path("tmux.conf");
    std::fs::write(&conf, format!("run-shell '{}'\n", plugin.display())).unwrap();
    let mut killer = Killer::default();

    inner.cmd(&["source-file", &conf.display().to_string()]);
    let first = wait_for(15, "one daemon for the server", || {
        let d = daemons_of(&server.socket);
        (d.len() == 1).then(|| d[0])
    });
    killer.0.push(first);
    env.pane_row(&inner, &pane).expect("the daemon answers");
    let log = std::fs::read_dir(env.path("state/thinkterm"))
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("daemon-"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .expect("its log file");
    assert!(log.contains("thinkterm-sidecar running"), "{log}");

    // Sourced again: its start job finds the daemon and starts nothing.
    inner.cmd(&["source-file", &conf.display().to_string()]);
    server.wait_plugin_jobs(&plugin);
    assert_eq!(daemons_of(&server.socket), [first]);

    let option = |o: &str| inner.cmd(&["show-options", "-gv", o]);
    for o in ["window-status-format", "window-status-current-format"] {
        let v = option(o);
        assert_eq!(v.matches("@thinkterm_icon").count(), 2, "{o} = {v}");
        assert!(v.starts_with("#I:#W#{?@thinkterm_icon"), "{o} = {v}");
    }
    assert_eq!(
        option("status-right").matches("@thinkterm_summary").count(),
        2
    );
    assert_eq!(option("focus-events").trim(), "on");
    let key = inner.cmd(&["list-keys", "-T", "prefix", "a"]);
    assert!(
        key.contains("display-popup") && key.contains(&format!("-S '{}' panel", server.socket)),
        "{key}"
    );
    // The binary has `card`: prefix + A shows the window card as a menu on the client that
    // pressed it, sized to at most 60%x50% of it.
    let key = inner.cmd(&["list-keys", "-T", "prefix", "A"]);
    assert!(
        key.contains("run-shell -b")
            && key.contains(&format!(
                "-S '{}' card --menu --client #{{q:client_name}}",
                server.socket
            ))
            && key.contains("--width '60%' --height '50%' '#{window_id}'"),
        "{key}"
    );

    // A person's client, seen through an outer tmux: the agent works, the spinner shows.
    let mut outer = Tmux::new();
    let attach = format!("env -u TMUX tmux -L {} attach -t proj", inner.name);
    outer.new_session("outer", Some(&attach));
    let working = support::fixtures::path("claude-code/2.1.328/003-working.txt");
    inner.type_line(&pane, &working.display().to_string());
    env.wait_row(&inner, &pane, "state", "working", 15);
    let status = wait_for(15, "the spinner in the client's status line", || {
        let screen = outer.cmd(&["capture-pane", "-p", "-t", "outer"]);
        let last = screen
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())?
            .to_string();
        last.contains(SPINNER).then_some(last)
    });
    assert!(status.contains(" 0:"), "{status}");
    wait_for(15, "the session summary on the right", || {
        let screen = outer.cmd(&["capture-pane", "-p", "-t", "outer"]);
        screen.contains(" 1~ ").then_some(())
    });

    // prefix + A, pressed in that client: the card of its window as a menu, the agent an item.
    outer.cmd(&["send-keys", "-t", "outer", "C-b", "A"]);
    let menu = wait_for(15, "the window card's menu in the client", || {
        let screen = outer.cmd(&["capture-pane", "-p", "-t", "outer"]);
        screen.contains(" · 1 agent ").then_some(screen)
    });
    let item = menu
        .lines()
        .find(|l| l.contains("(1)"))
        .unwrap_or_else(|| panic!("an item for the agent:\n{menu}"));
    assert!(item.contains('✳') && item.contains(SPINNER), "{menu}");
    assert!(menu.contains("Working"), "{menu}");
    outer.cmd(&["send-keys", "-t", "outer", "Escape"]);
    wait_for(10, "the menu closed", || {
        let screen = outer.cmd(&["capture-pane", "-p", "-t", "outer"]);
        (!screen.contains(" · 1 agent ")).then_some(())
    });

    // The server goes: so does its daemon.
    inner.kill();
    wait_for(15, "the daemon exits with its server", || {
        gone(first).then_some(())
    });
}

/// Formats the user set are left alone (with the default `auto`); `on` adds the icon after the
/// window name of any format; `off` keys are not bound; `@thinkterm-autostart off` starts none.
#[test]
fn the_plugin_leaves_the_users_own_formats_alone() {
    let env = Env::new();
    let plugin = plugin_copy(&env);
    let mut tmux = Tmux::new();
    let server = Server::start(&mut tmux, &env, "s", None);
    tmux.cmd(&["set", "-g", "window-status-format", "[#W]"]);
    tmux.cmd(&["set", "-g", "status-right", "mine"]);
    tmux.cmd(&["set", "-g", "@thinkterm-autostart", "off"]);
    tmux.cmd(&["set", "-g", "@thinkterm-panel-key", "off"]);
    tmux.cmd(&["set", "-g", "@thinkterm-card-style", "popup"]);
    tmux.cmd(&["set", "-g", "@thinkterm-card-size", "50,12"]);
    tmux.cmd(&["run-shell", &plugin.display().to_string()]);
    let option = |o: &str| tmux.cmd(&["show-options", "-gv", o]).trim_end().to_string();
    assert_eq!(option("window-status-format"), "[#W]");
    assert_eq!(option("status-right"), "mine");
    assert!(
        option("window-status-current-format").contains("@thinkterm_icon"),
        "tmux's default current format gets the icon"
    );
    assert!(tmux.try_cmd(&["list-keys", "-T", "prefix", "a"]).is_none());
    let card = tmux.cmd(&["list-keys", "-T", "prefix", "A"]);
    assert!(
        card.contains("display-popup -E -h 12 -w 50")
            && card.contains("card --hold '#{window_id}'"),
        "the card's popup style: {card}"
    );

    tmux.cmd(&["set", "-g", "@thinkterm-window-icon", "on"]);
    tmux.cmd(&["run-shell", &plugin.display().to_string()]);
    assert_eq!(
        option("window-status-format"),
        "[#W#{?@thinkterm_icon, #{@thinkterm_icon},}]"
    );
    tmux.cmd(&["run-shell", &plugin.display().to_string()]);
    assert_eq!(
        option("window-status-format")
            .matches("@thinkterm_icon")
            .count(),
        2
    );
    assert!(daemons_of(&server.socket).is_empty(), "autostart off");
}

/// No binary anywhere: without cargo the plugin says what to install; with cargo it builds in
/// the background, says so, and starts the daemon once built.
#[test]
fn without_a_binary_the_plugin_builds_it_in_the_background_and_says_so() {
    let env = Env::new();
    let plugin = plugin_copy(&env);
    let mut tmux = Tmux::new();
    let mut server = Server::start_bare(&mut tmux, &env, "s");
    let messages = |t: &Tmux| t.cmd(&["show-messages"]);

    // No client yet (as while ~/.tmux.conf loads): the first one to attach gets the message.
    tmux.cmd(&["run-shell", &plugin.display().to_string()]);
    let _client = Client::attach(&tmux, "s", 100, 20);
    wait_for(10, "the no-cargo message", || {
        messages(&tmux)
            .contains("no thinkterm-sidecar found and no cargo to build it")
            .then_some(())
    });
    assert!(
        !tmux.cmd(&["show-hooks", "-g"]).contains("[9873]"),
        "the message hook removed itself"
    );

    // A stand-in cargo that "builds" by linking the real binary where a build puts it.
    let cargo_dir = env.path("cargo-bin");
    support::script(
        &cargo_dir.join("cargo"),
        &format!(
            "#!/bin/sh\necho \"$@\" > '{}'\nmkdir -p target/release && ln -sf '{BIN}' target/release/thinkterm-sidecar\n",
            env.path("cargo-args").display()
        ),
    );
    server.add_path(&tmux, &cargo_dir);
    tmux.cmd(&["run-shell", &plugin.display().to_string()]);
    let daemon = wait_for(20, "the daemon started after the build", || {
        daemons_of(&server.socket).first().copied()
    });
    let _killer = Killer(vec![daemon]);
    let said = messages(&tmux);
    assert!(
        said.contains("building thinkterm-sidecar with cargo in the background"),
        "{said}"
    );
    wait_for(10, "the built message", || {
        messages(&tmux).contains("; starting it").then_some(())
    });
    let args = std::fs::read_to_string(env.path("cargo-args")).unwrap();
    assert_eq!(args.trim(), "build --release --locked");
}

/// `run --detach`: a clear error for a server that is not there with `--exit-with-server`, one
/// daemon and an "already" for a second start, and the log in the state directory.
#[test]
fn run_detach_starts_once_and_says_so() {
    let env = Env::new();
    let mut tmux = Tmux::new();
    let (code, _, err) = env.run(&tmux, &["run", "--detach", "--exit-with-server"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("--exit-with-server: no tmux server is running at"),
        "{err}"
    );

    tmux.new_session("s", None);
    let (code, out, err) = env.run(&tmux, &["run", "--detach", "--exit-with-server"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("started thinkterm-sidecar daemon (pid "),
        "{out}"
    );
    let log = format!("log: {}/thinkterm/daemon-", env.path("state").display());
    assert!(out.contains(&log), "{out}");
    let pid: u32 = out["started thinkterm-sidecar daemon (pid ".len()..]
        .split(')')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let _killer = Killer(vec![pid]);
    let (code, out, _) = env.run(&tmux, &["run", "--detach", "--exit-with-server"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("already serves") && out.contains("started nothing"),
        "{out}"
    );
    tmux.kill();
    wait_for(15, "the daemon exits with its server", || {
        gone(pid).then_some(())
    });
}

/// Under systemd (`JOURNAL_STREAM` names our stderr) the log lines carry a syslog priority and
/// no timestamp; journald adds the time.
#[test]
fn under_systemd_the_log_has_priorities_and_no_timestamps() {
    use std::os::unix::fs::MetadataExt;
    let env = Env::new();
    let mut tmux = Tmux::new();
    tmux.new_session("s", None);
    let path = env.path("journal.txt");
    let file = std::fs::File::create(&path).unwrap();
    let m = file.metadata().unwrap();
    let child = env
        .sidecar(&tmux, &["run"])
        .env("JOURNAL_STREAM", format!("{}:{}", m.dev(), m.ino()))
        .env_remove("THINKTERM_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(file)
        .spawn()
        .unwrap();
    let mut daemon = support::Daemon {
        child,
        log: path.clone(),
    };
    let text = wait_for(15, "attached, in the journal's format", || {
        let t = std::fs::read_to_string(&path).unwrap();
        t.contains("attached to tmux server").then_some(t)
    });
    daemon.stop();
    for line in text.lines() {
        assert!(
            line.starts_with("<6>") || line.starts_with("<4>"),
            "{line:?}"
        );
        assert!(!line.contains("Z "), "no timestamp: {line:?}");
    }
    assert!(text.starts_with("<6>thinkterm-sidecar running"), "{text}");
}

/// The generated completions load in bash and offer the subcommands; `man` renders the page.
#[test]
fn completions_load_in_bash_and_man_renders_the_page() {
    let script = "source <(\"$BIN\" completions bash)\n\
                  complete -p thinkterm-sidecar\n\
                  COMP_WORDS=(thinkterm-sidecar d); COMP_CWORD=1\n\
                  _thinkterm__sidecar thinkterm-sidecar d thinkterm-sidecar\n\
                  printf 'reply %s\\n' \"${COMPREPLY[@]}\"\n\
                  COMP_WORDS=(thinkterm-sidecar ''); COMP_CWORD=1\n\
                  _thinkterm__sidecar thinkterm-sidecar '' thinkterm-sidecar\n\
                  printf 'all %s\\n' \"${COMPREPLY[@]}\"\n";
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", script])
        .env("BIN", BIN)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("-F _thinkterm__sidecar thinkterm-sidecar"),
        "{text}"
    );
    assert!(text.contains("reply doctor"), "{text}");
    for sub in [
        "run",
        "agents",
        "doctor",
        "panel",
        "rules",
        "completions",
        "man",
    ] {
        assert!(text.contains(&format!("all {sub}\n")), "{sub}: {text}");
    }

    let dir = tempfile::tempdir().unwrap();
    let st = Command::new(BIN)
        .args(["man", "--out", &dir.path().display().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let page = dir.path().join("thinkterm-sidecar.1");
    let out = Command::new("man")
        .args(["-l", &page.display().to_string()])
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
        .expect("man (apt-get install man-db)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("NAME") && text.contains("Watches every tmux pane"),
        "{text}"
    );
    for part in [
        "SUBCOMMANDS",
        "thinkterm-sidecar-doctor(1)",
        "THINKTERM_LOG",
    ] {
        assert!(text.contains(part), "{part}: {text}");
    }
}

/// The package (slow, changes the machine: `-- --ignored`): the script builds it, `dpkg -c`
/// lists the man page, completions, user unit and plugin; it installs, its binary runs
/// `doctor`, bash loads its completions, `man` finds the page; then it is removed.
#[test]
#[ignore]
fn the_deb_builds_installs_and_runs_doctor() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(root.join("packaging/build-deb.sh"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let deb = text.lines().last().unwrap().trim().to_string();
    let deb = root.join(deb);
    let listing = rig::sh(&format!("dpkg -c '{}'", deb.display()));
    for path in [
        "./usr/bin/thinkterm-sidecar",
        "./usr/share/man/man1/thinkterm-sidecar.1.gz",
        "./usr/share/man/man1/thinkterm-sidecar-doctor.1.gz",
        "./usr/share/bash-completion/completions/thinkterm-sidecar",
        "./usr/share/zsh/vendor-completions/_thinkterm-sidecar",
        "./usr/share/fish/vendor_completions.d/thinkterm-sidecar.fish",
        "./usr/lib/systemd/user/thinkterm-sidecar.service",
        "./usr/share/thinkterm-sidecar/thinkterm.tmux",
        "./usr/share/doc/thinkterm-sidecar/README.md",
    ] {
        assert!(listing.contains(path), "{path} not in:\n{listing}");
    }
    rig::sh(&format!("dpkg -i '{}'", deb.display()));
    let doctor = Command::new("/usr/bin/thinkterm-sidecar")
        .args(["-L", "thinkterm-deb-test-none", "doctor"])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&doctor.stdout);
    assert_eq!(
        doctor.status.code(),
        Some(1),
        "no server, no daemon: {report}"
    );
    assert!(report.contains("no tmux server at"), "{report}");
    let completion = rig::sh(
        "source /usr/share/bash-completion/completions/thinkterm-sidecar && complete -p thinkterm-sidecar",
    );
    assert!(completion.contains("_thinkterm__sidecar"), "{completion}");
    let page = rig::sh("MANPAGER=cat man thinkterm-sidecar");
    assert!(page.contains("SUBCOMMANDS"), "{page}");
    rig::sh("dpkg -r thinkterm-sidecar");
}
