//! `doctor` against real parts: a private tmux server, the daemon, a private `dbus-daemon`
//! with a notification server written here (zbus), and a `paplay` stand-in on PATH. Healthy, it
//! reports all good and exits 0; with each thing broken in turn (focus-events off, formats
//! without the icon, a rejected rule file, no audio player, no session bus) exactly that check
//! fails, names the problem and the fix, and the exit code is 1.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use crate::support::{self, wait_for, Daemon, Env, Tmux};

/// A private session bus, killed by pid on drop.
struct Bus {
    child: Child,
    address: String,
}

impl Bus {
    fn start() -> Bus {
        let mut child = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("dbus-daemon (apt-get install dbus)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        Bus {
            child,
            address: line.trim().to_string(),
        }
    }
}

impl Drop for Bus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Notifications;

#[zbus::interface(name = "org.freedesktop.Notifications")]
impl Notifications {
    #[allow(clippy::too_many_arguments)]
    fn notify(
        &self,
        _app: String,
        _replaces: u32,
        _icon: String,
        _summary: String,
        _body: String,
        _actions: Vec<String>,
        _hints: std::collections::HashMap<String, zbus::zvariant::OwnedValue>,
        _timeout: i32,
    ) -> u32 {
        1
    }
    fn get_capabilities(&self) -> Vec<String> {
        vec!["body".into(), "actions".into()]
    }
    fn get_server_information(&self) -> (String, String, String, String) {
        (
            "stand-in".into(),
            "thinkterm tests".into(),
            "1.0".into(),
            "1.2".into(),
        )
    }
    fn close_notification(&self, _id: u32) {}
}

/// The notification server, on a thread of its own until dropped.
struct Server(
    Option<tokio::sync::oneshot::Sender<()>>,
    Option<std::thread::JoinHandle<()>>,
);

impl Server {
    fn start(address: &str) -> Server {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ready, is_ready) = std::sync::mpsc::channel();
        let address = address.to_string();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let _conn = zbus::connection::Builder::address(address.as_str())
                    .unwrap()
                    .name("org.freedesktop.Notifications")
                    .unwrap()
                    .serve_at("/org/freedesktop/Notifications", Notifications)
                    .unwrap()
                    .build()
                    .await
                    .unwrap();
                ready.send(()).unwrap();
                let _ = stopped.await;
            });
        });
        is_ready
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("notification server up");
        Server(Some(stop), Some(thread))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.0.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.1.take() {
            let _ = t.join();
        }
    }
}

/// `doctor --json`: (exit code, ids of failed checks, the report).
fn doctor(env: &Env, tmux: &Tmux) -> (i32, Vec<String>, serde_json::Value) {
    let (code, out, err) = env.run(tmux, &["doctor", "--json"]);
    let v: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let failed = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "fail" || c["status"] == "warn")
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    (code, failed, v)
}

fn check<'a>(report: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap()
}

/// Breaks one thing, checks that exactly it fails with its problem and fix, mends it.
fn broken(env: &Env, tmux: &Tmux, id: &str, problem: &str, fix: &str) {
    let (code, failed, report) = doctor(env, tmux);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(failed, [id], "{report:#}");
    let c = check(&report, id);
    let text = format!("{} {}", c["summary"], c["detail"]);
    assert!(text.contains(problem), "{id}: {c:#}");
    assert!(c["fix"].as_str().unwrap().contains(fix), "{id}: {c:#}");
    let (_, human, _) = env.run(tmux, &["doctor"]);
    assert!(human.contains("FAIL") && human.contains("fix: "), "{human}");
    assert!(
        human.ends_with("1 problem(s), 0 warning(s): see the fix lines above.\n"),
        "{human}"
    );
}

/// docs/schema.md names every field the daemon and doctor send: `agents --json` (panes and
/// windows), the daemon's doctor answer (two levels) and doctor's checks.
fn every_field_is_documented(env: &Env, tmux: &Tmux, report: &serde_json::Value) {
    use std::io::{Read, Write};
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/schema.md")).unwrap();
    let sock = std::fs::read_dir(env.path("run/thinkterm"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "sock"))
        .unwrap();
    let mut s = std::os::unix::net::UnixStream::connect(sock).unwrap();
    s.write_all(b"{\"request\":\"doctor\"}\n").unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut line = String::new();
    s.read_to_string(&mut line).unwrap();
    let answer: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    let mut keys: Vec<String> = Vec::new();
    let mut add = |v: &serde_json::Value| {
        keys.extend(v.as_object().unwrap().keys().cloned());
    };
    let value = &answer["value"];
    add(value);
    for (_, inner) in value.as_object().unwrap() {
        if inner.is_object() {
            add(inner);
        }
    }
    add(report);
    add(&report["checks"][0]);
    let agents = env.agents(tmux).unwrap();
    add(&agents);
    add(&agents["panes"][0]);
    add(&agents["windows"][0]);
    let missing: Vec<&String> = keys
        .iter()
        .filter(|k| {
            // `key` in a table, {a, key, b} or {key: …} in a shape, "key" in an example.
            let forms = [
                format!("`{k}`"),
                format!(" {k},"),
                format!("{{{k},"),
                format!(" {k}}}"),
                format!(" {k}:"),
                format!("\"{k}\""),
            ];
            !forms.iter().any(|f| doc.contains(f.as_str()))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "docs/schema.md does not name {missing:?}"
    );
}

fn reload(env: &Env, tmux: &Tmux) {
    let (code, _, err) = env.run(tmux, &["rules", "reload"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn doctor_says_all_good_when_healthy_and_names_each_broken_thing() {
    let bus = Bus::start();
    let _notifications = Server::start(&bus.address);
    let mut tmux = Tmux::new();
    tmux.new_session("s", None);
    let icon = " #I:#W#{?@thinkterm_icon, #{@thinkterm_icon},} ";
    tmux.cmd(&["set", "-g", "focus-events", "on"]);
    tmux.cmd(&["set", "-g", "window-status-format", icon]);
    tmux.cmd(&["set", "-g", "window-status-current-format", icon]);
    tmux.cmd(&["set", "-g", "status-right", "#{@thinkterm_summary} %H:%M"]);
    let mut env = Env::new();
    env.effects = true;
    let players = env.path("players");
    let paplay = players.join("paplay");
    support::script(&paplay, "#!/bin/sh\nexit 0\n");
    let path = format!("{}:{}", players.display(), std::env::var("PATH").unwrap());
    env.vars.push(("PATH".into(), path));
    env.vars
        .push(("DBUS_SESSION_BUS_ADDRESS".into(), bus.address.clone()));
    let mut daemon = Daemon::start(&env, &tmux);
    daemon.wait_ready(&env, &tmux);
    wait_for(10, "the daemon attached", || {
        let (_, _, r) = doctor(&env, &tmux);
        (check(&r, "daemon")["status"] == "ok").then_some(())
    });

    let (code, out, _) = env.run(&tmux, &["doctor"]);
    println!("{out}"); // shown with --nocapture: a healthy report
    assert_eq!(code, 0, "{out}");
    assert!(out.ends_with("All good.\n"), "{out}");
    assert!(
        out.contains("stand-in 1.0 (thinkterm tests, spec 1.2)"),
        "{out}"
    );
    assert!(out.contains("capabilities: body, actions"), "{out}");
    assert!(out.contains(&paplay.display().to_string()), "{out}");
    assert!(
        out.contains("machines               none configured"),
        "{out}"
    );
    let (_, failed, report) = doctor(&env, &tmux);
    assert!(failed.is_empty(), "{report:#}");
    assert_eq!(report["ok"], true);
    every_field_is_documented(&env, &tmux, &report);

    tmux.cmd(&["set", "-g", "focus-events", "off"]);
    broken(&env, &tmux, "focus_events", "off", "set -g focus-events on");
    tmux.cmd(&["set", "-g", "focus-events", "on"]);

    tmux.cmd(&["set", "-g", "window-status-format", "#I:#W"]);
    broken(
        &env,
        &tmux,
        "window_formats",
        "window-status-format without",
        "#{?@thinkterm_icon",
    );
    tmux.cmd(&["set", "-g", "window-status-format", icon]);

    let rules = env.path("config/thinkterm/agent-detection");
    std::fs::create_dir_all(&rules).unwrap();
    std::fs::write(
        rules.join("bad.toml"),
        "id = \"claude\"\nthis is not toml\n",
    )
    .unwrap();
    reload(&env, &tmux);
    broken(&env, &tmux, "rules", "bad.toml", "rules check");
    std::fs::remove_file(rules.join("bad.toml")).unwrap();
    reload(&env, &tmux);

    std::fs::remove_file(&paplay).unwrap();
    reload(&env, &tmux);
    broken(
        &env,
        &tmux,
        "sound",
        "neither paplay nor pw-play",
        "pulseaudio-utils",
    );
    support::script(&paplay, "#!/bin/sh\nexit 0\n");
    reload(&env, &tmux);
    assert_eq!(doctor(&env, &tmux).0, 0, "all mended");

    // No session bus: the daemon and the doctor started without one.
    daemon.stop();
    env.vars.retain(|(k, _)| k != "DBUS_SESSION_BUS_ADDRESS");
    let mut daemon = Daemon::start(&env, &tmux);
    daemon.wait_ready(&env, &tmux);
    broken(
        &env,
        &tmux,
        "session_bus",
        "no session bus",
        "DBUS_SESSION_BUS_ADDRESS",
    );
    daemon.stop();
}
