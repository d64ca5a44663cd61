//! Effects against real parts: a private `dbus-daemon` with a notification server written here
//! (zbus), and a recording `paplay` stand-in on PATH for the sounds.
#![allow(clippy::unwrap_used)]
#![allow(missing_docs)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use thinkterm_sidecar::effects::desktop::{Desktop, DesktopConfig, DesktopEvent};
use thinkterm_sidecar::effects::notification::{self, DisplaySwitches, NoteInput, NoteKind};
use thinkterm_sidecar::effects::sound::player::{Played, SoundPlayer, SoundSetup};
use thinkterm_sidecar::effects::sound::{Sound, SoundConfig};
use thinkterm_sidecar::ids::{PaneId, WindowId};
use zbus::zvariant::OwnedValue;

mod support;

use support::desktop::{hint_str, lines, serve, stand_in, Bus, Call, Server, PATH};

const DEADLINE: Duration = Duration::from_secs(10);

async fn wait_until_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < end {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cond()
}

async fn wait_until(cond: impl FnMut() -> bool) -> bool {
    wait_until_for(DEADLINE, cond).await
}

fn note(message: &str) -> notification::Note {
    let input = NoteInput {
        window_name: "api".into(),
        window: WindowId(4),
        pane: PaneId(9),
        kind: NoteKind::Blocked,
        message: Some(message.into()),
        waiting: None,
        progress: None,
        subtasks: vec![],
    };
    notification::build(&input, &DisplaySwitches::default(), None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notify_arrives_escaped_with_hints_and_a_click_comes_back() {
    let bus = Bus::start();
    let (server, calls) = serve(&bus).await;
    let cfg = DesktopConfig {
        address: Some(bus.address.clone()),
        backoff: Duration::ZERO,
        ..DesktopConfig::default()
    };
    let (desktop, mut events) = Desktop::spawn(cfg);

    let id = desktop
        .notify(note("Run <b>rm</b> & more?"))
        .await
        .expect("shown");
    let call = calls.lock().expect("lock")[0].clone();
    assert_eq!(call.summary, "api: waiting for you");
    assert_eq!(call.body, "Run &lt;b&gt;rm&lt;/b&gt; &amp; more?");
    assert_eq!(call.actions, ["default", "Show"]);
    assert_eq!(hint_str(&call, "x-thinkterm-pane").as_deref(), Some("%9"));
    assert_eq!(
        hint_str(&call, "category").as_deref(),
        Some("x-thinkterm.blocked")
    );
    let urgency = call.hints.get("urgency").and_then(|v| u8::try_from(v).ok());
    assert_eq!(urgency, Some(1));
    assert!(!call.hints.contains_key("desktop-entry"));

    let iface = server
        .object_server()
        .interface::<_, Server>(PATH)
        .await
        .expect("iface");
    Server::action_invoked(iface.signal_emitter(), id, "default")
        .await
        .expect("emit");
    let ev = tokio::time::timeout(DEADLINE, events.recv())
        .await
        .expect("in time");
    assert_eq!(
        ev,
        Some(DesktopEvent::Clicked {
            pane: PaneId(9),
            window: WindowId(4),
            id,
            machine: None,
        })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_gone_warns_once_and_the_next_notify_after_it_returns_works() {
    let bus = Bus::start();
    let (server, calls) = serve(&bus).await;
    let cfg = DesktopConfig {
        address: Some(bus.address.clone()),
        backoff: Duration::ZERO,
        ..DesktopConfig::default()
    };
    let (desktop, mut events) = Desktop::spawn(cfg);
    assert!(desktop.notify(note("one")).await.is_some());
    drop(server);
    // Wait until the name is really gone from the bus.
    let probe = zbus::connection::Builder::address(bus.address.as_str())
        .expect("address")
        .build()
        .await
        .expect("probe connects");
    let dbus = zbus::fdo::DBusProxy::new(&probe).await.expect("dbus proxy");
    let name = zbus::names::BusName::try_from("org.freedesktop.Notifications").expect("name");
    let end = tokio::time::Instant::now() + DEADLINE;
    while dbus.name_has_owner(name.clone()).await.expect("ask") {
        assert!(
            tokio::time::Instant::now() < end,
            "server name never went away"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(desktop.notify(note("two")).await, None);
    assert_eq!(desktop.notify(note("three")).await, None);
    let (_server2, calls2) = serve(&bus).await;
    assert!(desktop.notify(note("four")).await.is_some());
    assert_eq!(calls.lock().expect("lock").len(), 1);
    assert_eq!(calls2.lock().expect("lock")[0].body, "four");
    let mut warnings = 0;
    while let Ok(ev) = events.try_recv() {
        if matches!(ev, DesktopEvent::Unavailable(_)) {
            warnings += 1;
        }
    }
    assert_eq!(warnings, 1);
}

struct Rig {
    dir: tempfile::TempDir,
    log: PathBuf,
    gate: PathBuf,
}

fn rig(player: &str) -> Rig {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("log");
    let gate = dir.path().join("gate");
    std::fs::create_dir(dir.path().join("bin")).expect("bin");
    stand_in(&dir.path().join("bin"), player, &log, &gate);
    Rig { dir, log, gate }
}

fn setup(r: &Rig, disabled: bool) -> SoundSetup {
    SoundSetup {
        path: Some(r.dir.path().join("bin").into_os_string()),
        env_disabled: disabled,
        sounds_dir: r.dir.path().join("sounds"),
    }
}

#[tokio::test]
async fn done_and_waiting_play_their_files_without_overlap() {
    let r = rig("paplay");
    let mut p = SoundPlayer::new(SoundConfig::default(), setup(&r, false));
    std::fs::write(&r.gate, "").expect("gate");
    assert!(matches!(p.play(Sound::Done), Played::Started(_)));
    assert!(matches!(p.play(Sound::Waiting), Played::Started(_)));
    assert!(wait_until(|| lines(&r.log).len() == 2).await);
    // The first done still plays: a second one is skipped.
    assert_eq!(p.play(Sound::Done), Played::Busy);
    std::fs::remove_file(&r.gate).expect("open gate");
    assert!(wait_until(|| !p.is_playing(Sound::Done)).await);
    assert!(matches!(p.play(Sound::Done), Played::Started(_)));
    assert!(wait_until(|| lines(&r.log).len() == 3).await);
    let sounds = r.dir.path().join("sounds");
    let mut got = lines(&r.log);
    got.sort();
    let done = format!("paplay {}", sounds.join("done.wav").display());
    let waiting = format!("paplay {}", sounds.join("waiting.wav").display());
    assert_eq!(got, [done.clone(), done, waiting]);
    assert_eq!(
        std::fs::read(sounds.join("done.wav")).expect("file"),
        Sound::Done.bundled_bytes()
    );
}

#[tokio::test]
async fn pw_play_and_a_configured_file_are_used_as_given() {
    let r = rig("pw-play");
    let mine = r.dir.path().join("my ding.wav");
    std::fs::write(&mine, Sound::Done.bundled_bytes()).expect("file");
    let cfg = SoundConfig {
        waiting_file: Some(mine.clone()),
        ..SoundConfig::default()
    };
    let mut p = SoundPlayer::new(cfg, setup(&r, false));
    assert!(matches!(p.play(Sound::Waiting), Played::Started(_)));
    assert!(wait_until(|| lines(&r.log).len() == 1).await);
    assert_eq!(lines(&r.log), [format!("pw-play {}", mine.display())]);
}

#[tokio::test]
async fn disabled_or_no_player_means_silence() {
    let r = rig("paplay");
    let mut p = SoundPlayer::new(SoundConfig::default(), setup(&r, true));
    assert_eq!(p.play(Sound::Done), Played::Disabled);
    let off = SoundConfig {
        enabled: false,
        ..SoundConfig::default()
    };
    let mut p = SoundPlayer::new(off, setup(&r, false));
    assert_eq!(p.play(Sound::Waiting), Played::Disabled);
    let none = SoundSetup {
        path: Some(r.dir.path().join("nowhere").into_os_string()),
        ..setup(&r, false)
    };
    let mut p = SoundPlayer::new(SoundConfig::default(), none);
    assert_eq!(p.play(Sound::Done), Played::NoPlayer);
    assert!(lines(&r.log).is_empty());
}

/// Runs this test binary again with `THINKTERM_DISABLE_SOUND` set, and checks that the child's
/// environment reading silences sounds and notifications.
#[test]
fn env_variable_silences_sounds_and_notifications() {
    if std::env::var_os("THINKTERM_EFFECTS_CHILD").is_some() {
        let on = thinkterm_sidecar::effects::Enabled::from_env(true, true);
        assert!(!on.sound && !on.notifications);
        assert!(!SoundPlayer::new(SoundConfig::default(), SoundSetup::from_env()).enabled());
        return;
    }
    assert!(
        !thinkterm_sidecar::effects::disabled_by_env(),
        "run the suite without the variable"
    );
    let exe = std::env::current_exe().expect("test binary");
    let status = Command::new(exe)
        .args(["--exact", "env_variable_silences_sounds_and_notifications"])
        .env("THINKTERM_EFFECTS_CHILD", "1")
        .env("THINKTERM_DISABLE_SOUND", "1")
        .status()
        .expect("child runs");
    assert!(status.success());
}

/// A private tmux server, killed by pid on drop.
struct Tmux {
    socket: String,
    pid: Option<u32>,
    client: Option<Child>,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        if let Some(mut c) = self.client.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(pid) = self.pid {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    }
}

#[tokio::test]
async fn focus_plan_switches_a_real_attached_client() {
    use thinkterm_sidecar::effects::background::{ClientFlags, ClientView};
    use thinkterm_sidecar::effects::focus::{plan, FocusTarget};
    use thinkterm_sidecar::ids::SessionId;

    let socket = format!("thinkterm-effects-{}", std::process::id());
    let mut t = Tmux {
        socket: socket.clone(),
        pid: None,
        client: None,
    };
    t.run(&["new-session", "-d", "-s", "one", "-x", "80", "-y", "24"]);
    t.pid = t.run(&["display", "-p", "#{pid}"]).parse().ok();
    t.run(&["new-session", "-d", "-s", "two"]);
    t.run(&["new-window", "-t", "two"]);
    t.run(&["split-window", "-t", "two:0"]);
    // A real attached client on a pty, showing session one.
    let attach = format!("tmux -L {socket} -f /dev/null attach -t one");
    t.client = Some(
        Command::new("script")
            .args(["-qfc", &attach, "/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("script runs"),
    );
    let fmt = "#{client_name}\t#{client_session}\t#{session_id}\t#{window_id}\t#{client_activity}\t#{client_flags}";
    assert!(
        wait_until(|| !t.run(&["list-clients", "-F", fmt]).is_empty()).await,
        "client attached"
    );
    let clients: Vec<ClientView> = t
        .run(&["list-clients", "-F", fmt])
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Some(ClientView {
                name: f[0].to_string(),
                session: SessionId::parse(f[2])?,
                window: WindowId::parse(f[3])?,
                activity: f[4].parse().ok()?,
                flags: ClientFlags::parse(f[5]),
            })
        })
        .collect();
    assert_eq!(clients.len(), 1);
    let ids = t.run(&[
        "display",
        "-p",
        "-t",
        "two:0.0",
        "#{pane_id} #{window_id} #{session_id}",
    ]);
    let ids: Vec<&str> = ids.split(' ').collect();
    let target = FocusTarget {
        pane: PaneId::parse(ids[0]).expect("pane"),
        window: WindowId::parse(ids[1]).expect("window"),
        session: SessionId::parse(ids[2]).expect("session"),
    };
    let p = plan(&clients, &target, None).expect("plan");
    assert_eq!(
        p.commands.len(),
        3,
        "switch, window, pane: {:?}",
        p.commands
    );
    for argv in &p.commands {
        let args: Vec<&str> = argv.iter().map(String::as_str).collect();
        t.run(&args);
    }
    let shown = t.run(&[
        "display",
        "-p",
        "-c",
        &p.client,
        "#{pane_id} #{window_id} #{session_id}",
    ]);
    assert_eq!(shown, format!("{} {} {}", ids[0], ids[1], ids[2]));
}

/// What the daemon-level notification tests share: a private bus with the test notification
/// server, a tmux server whose session `proj` runs a fake Claude, and a daemon environment
/// that may notify (sounds off). Fields drop in order: the server connection before its bus.
struct DaemonRig {
    server: zbus::Connection,
    calls: Arc<Mutex<Vec<Call>>>,
    tmux: support::Tmux,
    env: support::Env,
    pane: String,
    blocked: PathBuf,
    working: PathBuf,
    _bus: Bus,
}

async fn daemon_rig() -> DaemonRig {
    let blocked = support::fixtures::path("claude-code/2.1.328/008-blocked.txt");
    let working = support::fixtures::path("claude-code/2.1.328/003-working.txt");
    let bus = Bus::start();
    let (server, calls) = serve(&bus).await;
    let mut tmux = support::Tmux::new();
    let mut env = support::Env::new();
    env.effects = true;
    env.vars
        .push(("DBUS_SESSION_BUS_ADDRESS".into(), bus.address.clone()));
    env.vars.push(("THINKTERM_SOUND".into(), "false".into()));
    let agent = support::drawing_agent(&env, "claude");
    let pane = tmux.new_session("proj", Some(&agent.display().to_string()));
    DaemonRig {
        server,
        calls,
        tmux,
        env,
        pane,
        blocked,
        working,
        _bus: bus,
    }
}

/// The daemon end to end: a blocked agent in the window the person looks at (focus-events off)
/// produces no notification; once the person is elsewhere, a new block produces one Notify;
/// clicking it brings the window and pane to the attached client, switching its session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_notifies_for_unwatched_windows_and_a_click_focuses_the_pane() {
    let DaemonRig {
        server,
        calls,
        mut tmux,
        env,
        pane,
        blocked,
        working,
        _bus,
    } = daemon_rig().await;
    let window = tmux.window_of(&pane);
    tmux.new_session("elsewhere", None);
    // The person's client shows the agent's window.
    let client = support::Client::attach(&tmux, "proj", 120, 40);
    let person_window = |t: &support::Tmux| {
        t.cmd(&[
            "list-clients",
            "-F",
            "#{client_control_mode} #{window_id} #{session_name}",
        ])
        .lines()
        .find(|l| l.starts_with("0 "))
        .map(|l| l[2..].to_string())
    };
    support::wait_for(10, "client attached", || person_window(&tmux));
    let d = support::Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    env.wait_row(&tmux, &pane, "agent", "claude", 10);
    tmux.type_line(&pane, &blocked.display().to_string());
    env.wait_row(&tmux, &pane, "state", "blocked", 10);
    support::wait_for(10, "mark", || {
        (tmux.window_option(&window, "@thinkterm_mark") == "attention").then_some(())
    });
    // The mark is set after the notification was decided: none for the window being looked at.
    assert!(
        calls.lock().unwrap().is_empty(),
        "no notification for the window being looked at"
    );
    // The person switches to another session; the agent starts waiting again.
    let name = tmux.cmd(&[
        "list-clients",
        "-F",
        "#{client_control_mode} #{client_name}",
    ]);
    let name = name
        .lines()
        .find(|l| l.starts_with("0 "))
        .map(|l| l[2..].to_string())
        .unwrap();
    tmux.cmd(&["switch-client", "-c", &name, "-t", "elsewhere"]);
    support::wait_for(10, "client elsewhere", || {
        person_window(&tmux).filter(|w| w.ends_with("elsewhere"))
    });
    tmux.type_line(&pane, &working.display().to_string());
    env.wait_row(&tmux, &pane, "state", "working", 10);
    tmux.type_line(&pane, &blocked.display().to_string());
    assert!(
        wait_until(|| calls.lock().unwrap().len() == 1).await,
        "one notification"
    );
    {
        let c = calls.lock().unwrap();
        assert!(c[0].summary.contains("waiting for you"), "{}", c[0].summary);
        assert!(c[0].summary.contains("proj"), "{}", c[0].summary);
        assert_eq!(
            hint_str(&c[0], "x-thinkterm-pane").as_deref(),
            Some(pane.as_str())
        );
    }
    // A click brings the window to the person's client.
    let iface = server
        .object_server()
        .interface::<_, Server>(PATH)
        .await
        .expect("iface");
    Server::action_invoked(iface.signal_emitter(), 1, "default")
        .await
        .expect("emit");
    support::wait_for(10, "client switched to the agent's window", || {
        person_window(&tmux).filter(|w| w.starts_with(&format!("{window} proj")))
    });
    let active = tmux.cmd(&["display-message", "-p", "-t", &window, "#{pane_id}"]);
    assert_eq!(active.trim(), pane);
    drop(client);
}

/// With `focus-events on`, tmux knows whether the person's terminal has focus: nothing is sent
/// while it has (even for a window it does not show); after the terminal reports focus-out
/// (`ESC [ O` into the client's pty), the next block is notified.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_focus_events_notifications_wait_until_the_terminal_loses_focus() {
    use std::io::Write;
    let DaemonRig {
        server: _server,
        calls,
        mut tmux,
        env,
        pane,
        blocked,
        working,
        _bus,
    } = daemon_rig().await;
    tmux.new_session("elsewhere", None);
    tmux.cmd(&["set-option", "-g", "focus-events", "on"]);
    let mut client = support::Client::attach(&tmux, "elsewhere", 120, 40);
    let d = support::Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    env.wait_row(&tmux, &pane, "agent", "claude", 10);
    tmux.type_line(&pane, &blocked.display().to_string());
    env.wait_row(&tmux, &pane, "state", "blocked", 10);
    let window = tmux.window_of(&pane);
    support::wait_for(10, "mark", || {
        (tmux.window_option(&window, "@thinkterm_mark") == "attention").then_some(())
    });
    assert!(
        calls.lock().unwrap().is_empty(),
        "the terminal has focus: no notification"
    );
    // The terminal loses focus; tmux's hook reaches the daemon.
    let stdin = client.0.stdin.as_mut().unwrap();
    stdin.write_all(b"\x1b[O").unwrap();
    stdin.flush().unwrap();
    support::wait_for(10, "client unfocused", || {
        let flags = tmux.cmd(&[
            "list-clients",
            "-F",
            "#{client_control_mode} #{client_flags}",
        ]);
        flags
            .lines()
            .any(|l| l.starts_with("0 ") && !l.contains("focused"))
            .then_some(())
    });
    // tmux reports the focus counter's change within its one-second subscription check; until
    // the daemon has seen it a new block is (rightly) not notified, so block again until one is.
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while calls.lock().unwrap().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "no notification after focus-out"
        );
        tmux.type_line(&pane, &working.display().to_string());
        env.wait_row(&tmux, &pane, "state", "working", 10);
        tmux.type_line(&pane, &blocked.display().to_string());
        env.wait_row(&tmux, &pane, "state", "blocked", 10);
        let _ = wait_until_for(Duration::from_millis(700), || {
            !calls.lock().unwrap().is_empty()
        })
        .await;
    }
    assert!(calls.lock().unwrap()[0].summary.contains("waiting for you"));
}

/// A notification server that takes calls and never answers them.
struct Hung;

#[zbus::interface(name = "org.freedesktop.Notifications")]
impl Hung {
    #[allow(clippy::too_many_arguments)]
    async fn notify(
        &self,
        _app: String,
        _replaces: u32,
        _icon: String,
        _summary: String,
        _body: String,
        _actions: Vec<String>,
        _hints: HashMap<String, OwnedValue>,
        _timeout: i32,
    ) -> u32 {
        std::future::pending::<()>().await;
        0
    }
}

/// Regression: D-Bus calls had no time limit, so a notification server that hangs stalled the
/// desktop task (and every notification after it) for good. Now the call gives up after the
/// limit, the outage is reported once, and the task goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_notification_server_is_given_up_on_and_reported() {
    let bus = Bus::start();
    let _server = zbus::connection::Builder::address(bus.address.as_str())
        .expect("address")
        .name("org.freedesktop.Notifications")
        .expect("name")
        .serve_at(PATH, Hung)
        .expect("serve")
        .build()
        .await
        .expect("server connects");
    let cfg = DesktopConfig {
        address: Some(bus.address.clone()),
        backoff: Duration::ZERO,
        call_timeout: Duration::from_millis(500),
    };
    let (desktop, mut events) = Desktop::spawn(cfg);
    let started = std::time::Instant::now();
    let shown = tokio::time::timeout(DEADLINE, desktop.notify(note("stuck")))
        .await
        .expect("notify returns instead of hanging");
    assert_eq!(shown, None);
    assert!(started.elapsed() < Duration::from_secs(5));
    let ev = tokio::time::timeout(DEADLINE, events.recv())
        .await
        .expect("an event")
        .expect("open");
    assert!(
        matches!(&ev, DesktopEvent::Unavailable(why) if why.contains("did not answer")),
        "{ev:?}"
    );
    // The task goes on: the next notification is tried, and given up on the same way.
    let again = tokio::time::timeout(DEADLINE, desktop.notify(note("again")))
        .await
        .expect("the task still answers");
    assert_eq!(again, None);
}
