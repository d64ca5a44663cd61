//! Machines over ssh, end to end on real parts (issue 15): a real `sshd` on 127.0.0.1, "devbox"
//! as a second tmux server with its own daemon and XDG folders reached only through that sshd,
//! and the local daemon with a private D-Bus bus, a recording notification server and a
//! recording `paplay` on its PATH.
#![allow(clippy::unwrap_used)]
#![allow(missing_docs)]

mod support;

use std::path::PathBuf;
use std::time::Duration;

use support::desktop::{hint_str, lines, serve, stand_in, Bus, Call, Server, PATH};
use support::sshd::Sshd;
use support::{drawing_agent, wait_for, Client, Daemon, Env, Tmux};

const BIN: &str = env!("CARGO_BIN_EXE_thinkterm-sidecar");

/// devbox: a tmux server, its daemon, an agent in session `work` and a person's client
/// attached to session `home`.
struct Devbox {
    tmux: Tmux,
    // Held for the test's length: the daemon and the person's client end when dropped.
    #[allow(dead_code)]
    env: Env,
    daemon: Option<Daemon>,
    pane: String,
    #[allow(dead_code)]
    person: Option<Client>,
}

impl Devbox {
    fn start() -> Devbox {
        let mut tmux = Tmux::new();
        let env = Env::new();
        let agent = drawing_agent(&env, "claude");
        let pane = tmux.new_session("work", Some(&agent.display().to_string()));
        tmux.new_session("home", None);
        let person = Client::attach(&tmux, "home", 100, 30);
        let daemon = Daemon::start(&env, &tmux);
        daemon.wait_ready(&env, &tmux);
        env.wait_row(&tmux, &pane, "agent", "claude", 10);
        Devbox {
            tmux,
            env,
            daemon: Some(daemon),
            pane,
            person: Some(person),
        }
    }

    /// What ssh runs on devbox: the bridge, in devbox's folders, for devbox's tmux server.
    fn remote_command(&self) -> String {
        format!(
            "env XDG_RUNTIME_DIR={} XDG_STATE_HOME={} XDG_CONFIG_HOME={} {BIN} -L {} bridge",
            self.env.path("run").display(),
            self.env.path("state").display(),
            self.env.path("config").display(),
            self.tmux.name
        )
    }

    fn show(&self, frame: &str) {
        let f = support::fixtures::path(frame);
        self.tmux.type_line(&self.pane, &f.display().to_string());
    }

    /// The session and pane the person's client shows.
    fn person_at(&self) -> Option<String> {
        self.tmux
            .cmd(&[
                "list-clients",
                "-F",
                "#{client_control_mode} #{session_name} #{pane_id}",
            ])
            .lines()
            .find(|l| l.starts_with("0 "))
            .map(|l| l[2..].to_string())
    }
}

/// The local side: a tmux server (unless `with_tmux` is false), a private bus with a recording
/// notification server, a recording `paplay`, and the config that names devbox.
struct Local {
    tmux: Tmux,
    env: Env,
    bus: Bus,
    player_log: PathBuf,
}

fn local(devbox: &Devbox, sshd: &Sshd, with_tmux: bool) -> Local {
    let mut tmux = Tmux::new();
    if with_tmux {
        tmux.new_session("laptop", None);
    }
    let mut env = Env::new();
    env.effects = true;
    let bus = Bus::start();
    env.vars
        .push(("DBUS_SESSION_BUS_ADDRESS".into(), bus.address.clone()));
    let bin = env.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let player_log = env.path("player.log");
    stand_in(&bin, "paplay", &player_log, &env.path("no-gate"));
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    env.vars.push(("PATH".into(), path));
    write_config(&env, devbox, sshd, "");
    Local {
        tmux,
        env,
        bus,
        player_log,
    }
}

fn write_config(env: &Env, devbox: &Devbox, sshd: &Sshd, extra: &str) {
    let args: Vec<String> = sshd.ssh_args().iter().map(|a| format!("{a:?}")).collect();
    std::fs::create_dir_all(env.path("config/thinkterm")).unwrap();
    std::fs::write(
        env.path("config/thinkterm/config.toml"),
        format!(
            "machine_name = \"laptop\"\n{extra}\n[[machines]]\nname = \"devbox\"\nssh = \"root@127.0.0.1\"\nssh_args = [{}]\nremote_command = {:?}\n",
            args.join(", "),
            devbox.remote_command()
        ),
    )
    .unwrap();
}

fn calls_of(c: &std::sync::Arc<std::sync::Mutex<Vec<Call>>>) -> Vec<Call> {
    c.lock().unwrap().clone()
}

/// The machine's row in `machines --json`.
fn machine(env: &Env, tmux: &Tmux, name: &str) -> Option<serde_json::Value> {
    let (code, out, _) = env.run(tmux, &["machines", "list", "--json"]);
    if code != 0 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&out).ok()?;
    v.as_array()?.iter().find(|m| m["name"] == name).cloned()
}

/// A pane of devbox as the local daemon lists it.
fn remote_row(env: &Env, tmux: &Tmux, pane: &str) -> Option<serde_json::Value> {
    let v = env.agents(tmux)?;
    v["panes"]
        .as_array()?
        .iter()
        .find(|p| p["machine"] == "devbox" && p["pane"] == pane)
        .cloned()
}

/// A blocked agent on devbox, in a window nobody there looks at: exactly one Notify on the
/// local desktop (machine name in the summary, body escaped), the local player plays
/// `waiting`, and invoking the notification moves devbox's client to the pane.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_agent_on_devbox_notifies_here_and_a_click_moves_devbox_s_client() {
    let sshd = Sshd::start();
    let devbox = Devbox::start();
    let local = local(&devbox, &sshd, true);
    let (server, calls) = serve(&local.bus).await;
    let d = Daemon::start(&local.env, &local.tmux);
    d.wait_ready(&local.env, &local.tmux);
    wait_for(20, "devbox reachable", || {
        machine(&local.env, &local.tmux, "devbox").filter(|m| m["reachable"] == true)
    });
    let row = wait_for(10, "devbox's agent listed here", || {
        remote_row(&local.env, &local.tmux, &devbox.pane).filter(|r| r["agent"] == "claude")
    });
    assert_eq!(row["machine"], "devbox");
    devbox.show("claude-code/2.1.328/008-blocked.txt");
    wait_for(15, "one notification", || {
        (calls_of(&calls).len() == 1).then_some(())
    });
    let call = calls_of(&calls)[0].clone();
    assert!(call.summary.starts_with("devbox · "), "{}", call.summary);
    assert!(call.summary.contains("work"), "{}", call.summary);
    assert!(call.summary.contains("waiting for you"), "{}", call.summary);
    assert_eq!(
        hint_str(&call, "x-thinkterm-pane").as_deref(),
        Some(devbox.pane.as_str())
    );
    wait_for(10, "the waiting sound here", || {
        lines(&local.player_log)
            .iter()
            .any(|l| l.starts_with("paplay ") && l.ends_with("waiting.wav"))
            .then_some(())
    });
    // Exactly one: devbox's own notifier stayed quiet, and nothing came twice.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(calls_of(&calls).len(), 1);
    // The click goes back over ssh: devbox's client is moved to the agent's pane.
    let iface = server
        .object_server()
        .interface::<_, Server>(PATH)
        .await
        .unwrap();
    Server::action_invoked(iface.signal_emitter(), 1, "default")
        .await
        .unwrap();
    let want = format!("work {}", devbox.pane);
    wait_for(10, "devbox's client at the agent", || {
        devbox.person_at().filter(|at| *at == want)
    });
    drop(d);
}

/// `agents` shows the MACHINE column and `--machine`; `focus devbox:%N` works; the panel,
/// captured from a real tmux pane, lists agents of both machines and offers the machines menu.
#[test]
fn every_view_spans_machines() {
    let sshd = Sshd::start();
    let devbox = Devbox::start();
    let local = local(&devbox, &sshd, true);
    let here = drawing_agent(&local.env, "claude");
    let here_pane = local
        .tmux
        .new_window("laptop", Some(&here.display().to_string()));
    let d = Daemon::start(&local.env, &local.tmux);
    d.wait_ready(&local.env, &local.tmux);
    wait_for(20, "devbox's agent listed", || {
        remote_row(&local.env, &local.tmux, &devbox.pane).filter(|r| r["agent"] == "claude")
    });
    local
        .env
        .wait_row(&local.tmux, &here_pane, "agent", "claude", 10);
    let (code, out, err) = local.env.run(&local.tmux, &["agents"]);
    assert_eq!(code, 0, "{err}");
    let head = out.lines().next().unwrap();
    assert!(head.starts_with("MACHINE"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("devbox") && l.contains("claude")),
        "{out}"
    );
    assert!(out.lines().any(|l| l.starts_with("laptop")), "{out}");
    let (_, only, _) = local
        .env
        .run(&local.tmux, &["agents", "--machine", "devbox"]);
    assert!(!only.lines().any(|l| l.starts_with("laptop")), "{only}");
    // focus devbox:%N moves devbox's client.
    let (code, out, err) = local
        .env
        .run(&local.tmux, &["focus", &format!("devbox:{}", devbox.pane)]);
    assert_eq!(code, 0, "{out}{err}");
    let want = format!("work {}", devbox.pane);
    wait_for(10, "devbox's client at the agent", || {
        devbox.person_at().filter(|at| *at == want)
    });
    // The panel, in a pane of the local server, drawn at 100x30.
    let panel = local.tmux.new_window(
        "laptop",
        Some(&format!(
            "env XDG_RUNTIME_DIR={} XDG_STATE_HOME={} {BIN} -L {} panel",
            local.env.path("run").display(),
            local.env.path("state").display(),
            local.tmux.name
        )),
    );
    let screen = || local.tmux.cmd(&["capture-pane", "-p", "-t", &panel]);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let s = screen();
        if s.contains("Idle · laptop · ") && s.contains("Idle · devbox · work · ") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "two agents in the panel:\n{s}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    local.tmux.cmd(&["send-keys", "-t", &panel, "m"]);
    let menu = wait_for(10, "the machines menu", || {
        let s = screen();
        s.contains("Machines").then_some(s)
    });
    assert!(menu.contains("devbox") && menu.contains("laptop"), "{menu}");
    // Driving devbox's pane from here: send types a frame's path into the drawing agent, wait
    // sees the block arrive over the link, read returns devbox's screen.
    let target = format!("devbox:{}", devbox.pane);
    let blocked = support::fixtures::path("claude-code/2.1.328/008-blocked.txt");
    let (code, out, err) = local.env.run(
        &local.tmux,
        &["send", &target, &blocked.display().to_string()],
    );
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = local.env.run(
        &local.tmux,
        &["wait", &target, "--for", "blocked", "--timeout", "15"],
    );
    assert_eq!(
        (code, out.trim()),
        (0, format!("{target} claude blocked").as_str()),
        "{err}"
    );
    let (code, out, err) = local.env.run(&local.tmux, &["read", &target, "--json"]);
    assert_eq!(code, 0, "{err}");
    let read: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(read["state"], "blocked");
    assert!(
        read["screen"]
            .as_str()
            .is_some_and(|s| s.contains("Do you want")),
        "{read}"
    );
    drop(d);
}

/// Lines of the local daemon's log that say devbox is unreachable.
fn outages(d: &Daemon) -> usize {
    d.log_text()
        .lines()
        .filter(|l| l.contains("devbox") && l.contains("unreachable"))
        .count()
}

/// devbox's window as the local daemon lists it.
fn remote_window(env: &Env, tmux: &Tmux, window: &str) -> Option<serde_json::Value> {
    let v = env.agents(tmux)?;
    v["windows"]
        .as_array()?
        .iter()
        .find(|w| w["machine"] == "devbox" && w["window"] == window)
        .cloned()
}

/// sshd killed and started again, then devbox's daemon restarted: each time the machine shows
/// unreachable with one log line, comes back by itself, and brings back what devbox knows (a
/// `done` mark) with no notification shown twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_is_shown_logged_once_and_healed_with_nothing_lost_or_doubled() {
    let mut sshd = Sshd::start();
    let mut devbox = Devbox::start();
    let local = local(&devbox, &sshd, true);
    let (_server, calls) = serve(&local.bus).await;
    let d = Daemon::start(&local.env, &local.tmux);
    d.wait_ready(&local.env, &local.tmux);
    let window = devbox.tmux.window_of(&devbox.pane);
    wait_for(20, "devbox reachable", || {
        machine(&local.env, &local.tmux, "devbox").filter(|m| m["reachable"] == true)
    });
    // Working, then idle while nobody looks: devbox marks the window done and one notification
    // says so here.
    devbox.show("claude-code/2.1.328/003-working.txt");
    wait_for(10, "working here", || {
        remote_row(&local.env, &local.tmux, &devbox.pane).filter(|r| r["state"] == "working")
    });
    devbox.show("claude-code/2.1.328/001-idle.txt");
    wait_for(15, "done here", || {
        remote_window(&local.env, &local.tmux, &window).filter(|w| w["mark"] == "done")
    });
    wait_for(10, "one notification", || {
        (calls_of(&calls).len() == 1).then_some(())
    });
    assert!(calls_of(&calls)[0].summary.contains("finished"));
    assert_eq!(outages(&d), 0);

    // sshd goes away.
    sshd.kill();
    wait_for(15, "devbox unreachable", || {
        machine(&local.env, &local.tmux, "devbox").filter(|m| m["reachable"] == false)
    });
    assert!(remote_row(&local.env, &local.tmux, &devbox.pane).is_none());
    // Tries go on with a growing backoff; the outage is said once.
    std::thread::sleep(Duration::from_millis(3500));
    assert_eq!(outages(&d), 1, "{}", d.log_text());
    sshd.restart();
    wait_for(40, "devbox back, its done mark with it", || {
        remote_window(&local.env, &local.tmux, &window).filter(|w| w["mark"] == "done")
    });

    // devbox's daemon restarts.
    let mut old = devbox.daemon.take().unwrap();
    old.stop();
    wait_for(15, "devbox unreachable again", || {
        machine(&local.env, &local.tmux, "devbox").filter(|m| m["reachable"] == false)
    });
    let again = Daemon::start(&devbox.env, &devbox.tmux);
    again.wait_ready(&devbox.env, &devbox.tmux);
    devbox.daemon = Some(again);
    wait_for(40, "devbox back after its restart, still done", || {
        remote_window(&local.env, &local.tmux, &window).filter(|w| w["mark"] == "done")
    });
    assert_eq!(outages(&d), 2, "one line per outage: {}", d.log_text());
    // The done notification was shown once, whatever came back.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(calls_of(&calls).len(), 1);
    drop(d);
}

/// The ssh process stopped (SIGSTOP) for 10 s while devbox's agent changes state: after
/// SIGCONT the local side shows the true state, not what it knew before the stop.
#[test]
fn a_stopped_link_catches_up_after_sigcont() {
    let sshd = Sshd::start();
    let devbox = Devbox::start();
    let local = local(&devbox, &sshd, true);
    let d = Daemon::start(&local.env, &local.tmux);
    d.wait_ready(&local.env, &local.tmux);
    devbox.show("claude-code/2.1.328/001-idle.txt");
    wait_for(20, "idle here", || {
        remote_row(&local.env, &local.tmux, &devbox.pane).filter(|r| r["state"] == "idle")
    });
    let port = format!("-p {}", sshd.port);
    let ssh = wait_for(10, "the link's ssh process", || {
        let out = std::process::Command::new("pgrep")
            .args(["-f", &format!("^ssh .*{port}")])
            .output()
            .ok()?;
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .map(str::to_string)
    });
    let _ = std::process::Command::new("kill")
        .args(["-STOP", &ssh])
        .status();
    devbox.show("claude-code/2.1.328/003-working.txt");
    devbox
        .env
        .wait_row(&devbox.tmux, &devbox.pane, "state", "working", 10);
    devbox.show("claude-code/2.1.328/008-blocked.txt");
    devbox
        .env
        .wait_row(&devbox.tmux, &devbox.pane, "state", "blocked", 10);
    std::thread::sleep(Duration::from_secs(8));
    assert_eq!(
        remote_row(&local.env, &local.tmux, &devbox.pane).unwrap()["state"],
        "idle",
        "nothing arrives while the link is stopped"
    );
    let _ = std::process::Command::new("kill")
        .args(["-CONT", &ssh])
        .status();
    wait_for(10, "the true state after SIGCONT", || {
        remote_row(&local.env, &local.tmux, &devbox.pane).filter(|r| r["state"] == "blocked")
    });
    drop(d);
}

/// A laptop with no tmux server of its own serves a connected machine all the same.
#[test]
fn a_daemon_with_no_local_tmux_server_serves_the_machine() {
    let sshd = Sshd::start();
    let devbox = Devbox::start();
    let local = local(&devbox, &sshd, false);
    let d = Daemon::start(&local.env, &local.tmux);
    d.wait_ready(&local.env, &local.tmux);
    wait_for(20, "devbox's agent listed", || {
        remote_row(&local.env, &local.tmux, &devbox.pane).filter(|r| r["agent"] == "claude")
    });
    assert!(
        !d.log_text().contains("WARN") && !d.log_text().contains("ERROR"),
        "no local tmux is not an error: {}",
        d.log_text()
    );
    drop(d);
}

/// Machines that cannot be followed — a command that does not exist, ssh that would ask for a
/// password, a sidecar too old to follow, a greeting before the protocol — each get one clear
/// line and their own status; a good machine beside them works.
#[test]
fn bad_machines_get_one_clear_line_each_and_affect_nothing_else() {
    let sshd = Sshd::start();
    let devbox = Devbox::start();
    let local = local(&devbox, &sshd, true);
    let no_key: Vec<String> = sshd
        .ssh_args()
        .into_iter()
        .skip(2) // no -i KEY: BatchMode refuses to ask for a password
        .map(|a| format!("{a:?}"))
        .collect();
    let old = r#"read l; echo '{"reply":"error","message":"bad request: unknown variant `follow`"}'; sleep 60"#;
    let noisy = format!("echo 'Welcome to devbox!'; {}", devbox.remote_command());
    let extra = format!(
        "\n[[machines]]\nname = \"broken\"\ncommand = [\"/nonexistent/bridge\"]\n\
         \n[[machines]]\nname = \"nokey\"\nssh = \"root@127.0.0.1\"\nssh_args = [{}, \"-o\", \"IdentitiesOnly=yes\", \"-o\", \"IdentityFile=/nonexistent\"]\n\
         \n[[machines]]\nname = \"old\"\ncommand = [\"sh\", \"-c\", {old:?}]\n\
         \n[[machines]]\nname = \"noisy\"\ncommand = [\"sh\", \"-c\", {noisy:?}]\n",
        no_key.join(", ")
    );
    write_config(&local.env, &devbox, &sshd, &extra);
    let d = Daemon::start(&local.env, &local.tmux);
    d.wait_ready(&local.env, &local.tmux);
    let reason = |name: &str| {
        wait_for(30, &format!("{name} unreachable"), || {
            machine(&local.env, &local.tmux, name)
                .filter(|m| m["reachable"] == false && m["reason"] != "connecting")
                .map(|m| m["reason"].as_str().unwrap_or("").to_string())
        })
    };
    assert!(reason("broken").contains("cannot run"));
    assert!(reason("nokey").contains("Permission denied"));
    assert!(reason("old").contains("cannot be followed"));
    wait_for(20, "noisy reachable through its greeting", || {
        machine(&local.env, &local.tmux, "noisy").filter(|m| m["reachable"] == true)
    });
    wait_for(20, "devbox works beside them", || {
        remote_row(&local.env, &local.tmux, &devbox.pane).filter(|r| r["agent"] == "claude")
    });
    let log = d.log_text();
    for name in ["broken", "nokey", "old"] {
        let n = log
            .lines()
            .filter(|l| l.contains(name) && l.contains("unreachable"))
            .count();
        assert_eq!(n, 1, "one line for {name}: {log}");
    }
    assert!(
        log.contains("skipping output that is not a sidecar reply"),
        "{log}"
    );
    drop(d);
}

/// `bridge` with no daemon for the server says so in one line and fails; with `--start` it
/// starts one (detached, in its own session) when a tmux server runs, and relays to it.
#[test]
fn the_bridge_says_when_no_daemon_runs_and_start_starts_one() {
    use std::io::{BufRead, BufReader, Write};
    let mut tmux = Tmux::new();
    let pane = tmux.new_session("solo", None);
    let env = Env::new();
    let (code, out, err) = env.run(&tmux, &["bridge"]);
    assert_ne!(code, 0);
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("no thinkterm-sidecar daemon"), "{err}");
    let mut bridge = env
        .sidecar(&tmux, &["bridge", "--start"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = bridge.stdin.take().unwrap();
    stdin
        .write_all(b"{\"request\":\"agents\",\"id\":5}\n")
        .unwrap();
    let mut line = String::new();
    BufReader::new(bridge.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["reply"], "snapshot", "{line}");
    assert_eq!(v["id"], 5, "the reply carries the request's id");
    drop(stdin);
    let _ = bridge.wait();
    // The started daemon runs on, in a session of its own; stop it by pid.
    let socket = tmux.cmd(&["display-message", "-p", "#{socket_path}"]);
    let pids = std::process::Command::new("pgrep")
        .args(["-f", "--", &format!("-S {} run --detached", socket.trim())])
        .output()
        .unwrap();
    let pids = String::from_utf8_lossy(&pids.stdout).to_string();
    let pid = pids
        .lines()
        .next()
        .expect("the started daemon runs")
        .trim()
        .to_string();
    let sid = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = sid.rsplit_once(')').unwrap().1.split_whitespace().collect();
    assert_eq!(fields[3], pid, "the daemon leads a session of its own");
    assert!(
        env.pane_row(&tmux, &pane).is_some(),
        "and it serves the server"
    );
    let _ = std::process::Command::new("kill").arg(&pid).status();
}

/// Nested tmux: a local pane runs ssh into devbox's tmux (through the same sshd). The local
/// daemon links that pane to devbox's client by the connection's ports, and the local window's
/// mark follows the most urgent mark of the devbox session shown in it; `agents --json` says
/// what the pane shows. A pane running the same ssh into devbox's shell only (no tmux client
/// there) is not linked.
#[test]
fn a_local_pane_running_ssh_into_devbox_s_tmux_takes_the_devbox_mark() {
    let sshd = Sshd::start();
    let devbox = Devbox::start();
    let mut l = local(&devbox, &sshd, true);
    let d = Daemon::start(&l.env, &l.tmux);
    d.wait_ready(&l.env, &l.tmux);
    wait_for(20, "devbox reachable", || {
        machine(&l.env, &l.tmux, "devbox").filter(|m| m["reachable"] == true)
    });

    let ssh = |remote: &str| {
        let mut argv = vec!["ssh".to_string(), "-t".to_string()];
        argv.extend(sshd.ssh_args());
        argv.push("root@127.0.0.1".into());
        argv.push(remote.to_string());
        argv.iter()
            .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
            .collect::<Vec<_>>()
            .join(" ")
    };
    // The nested one: devbox's tmux, session work (the agent's).
    let nested = l.tmux.new_window(
        "laptop",
        Some(&ssh(&format!(
            "tmux -L {} attach -t work",
            devbox.tmux.name
        ))),
    );
    // A plain ssh session into devbox, no tmux client there.
    let plain = l.tmux.new_window("laptop", Some(&ssh("exec sleep 600")));
    let nested_window = l.tmux.window_of(&nested);
    let plain_window = l.tmux.window_of(&plain);
    wait_for(20, "devbox lists the nested client", || {
        devbox
            .tmux
            .cmd(&[
                "list-clients",
                "-F",
                "#{client_control_mode} #{session_name}",
            ])
            .lines()
            .any(|line| line == "0 work")
            .then_some(())
    });

    // devbox's agent blocks: devbox's session work is marked for attention, and so is the
    // local window showing it.
    devbox.show("claude-code/2.1.328/008-blocked.txt");
    let row = wait_for(20, "the nested pane shows devbox's work session", || {
        l.env
            .pane_row(&l.tmux, &nested)
            .filter(|r| r["shows"]["mark"] == "attention")
    });
    assert_eq!(row["shows"]["machine"], "devbox", "{row}");
    assert_eq!(row["shows"]["session"], "work", "{row}");
    wait_for(20, "the local window takes the attention mark", || {
        (l.tmux.window_option(&nested_window, "@thinkterm_mark") == "attention").then_some(())
    });
    assert_ne!(
        l.tmux.window_option(&plain_window, "@thinkterm_mark"),
        "attention",
        "a plain ssh session is not linked"
    );
    assert!(l.env.pane_row(&l.tmux, &plain).unwrap()["shows"].is_null());

    // devbox's agent goes idle: the local mark follows it down.
    devbox.show("claude-code/2.1.328/001-idle.txt");
    wait_for(20, "the local window's mark follows devbox's", || {
        let m = l.tmux.window_option(&nested_window, "@thinkterm_mark");
        (m != "attention" && !m.is_empty()).then_some(())
    });
    assert_eq!(
        d.log_text()
            .matches("pane shows a connected machine's tmux")
            .count(),
        1,
        "{}",
        d.log_text()
    );
    l.tmux.kill();
}
