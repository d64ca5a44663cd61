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

#[path = "effects/programs.rs"]
mod programs;

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
        title: None,
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

/// A player that hangs (the gate never opens) holds its sound for at most `MAX_PLAY`: the next
/// request after that kills it and plays anew; at most one player per sound runs at any time,
/// however many sounds are asked for.
#[tokio::test]
async fn a_hung_player_is_stopped_and_players_never_pile_up() {
    use std::time::Instant;
    use thinkterm_sidecar::effects::sound::player::MAX_PLAY;
    let r = rig("paplay");
    let mut p = SoundPlayer::new(SoundConfig::default(), setup(&r, false));
    std::fs::write(&r.gate, "").expect("gate");
    let t0 = Instant::now();
    let Played::Started(first) = p.play_at(Sound::Waiting, t0) else {
        panic!("not started");
    };
    assert!(wait_until(|| lines(&r.log).len() == 1).await);
    for k in 1..100 {
        assert_eq!(
            p.play_at(Sound::Waiting, t0 + Duration::from_millis(k * 100)),
            Played::Busy
        );
    }
    let alive = |pid: u32| std::path::Path::new(&format!("/proc/{pid}")).exists();
    assert!(alive(first));
    let Played::Started(second) = p.play_at(Sound::Waiting, t0 + MAX_PLAY) else {
        panic!("the hung player still holds the sound");
    };
    assert_ne!(second, first);
    assert!(
        wait_until(|| !alive(first)).await,
        "the hung player was killed and reaped"
    );
    assert!(wait_until(|| lines(&r.log).len() == 2).await);
    // One player per sound, never more: the players running now are exactly the second one.
    let players: Vec<u32> = std::fs::read_dir("/proc")
        .expect("proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.contains(&r.dir.path().join("bin/paplay").display().to_string()))
        })
        .collect();
    assert_eq!(players, [second]);
    std::fs::remove_file(&r.gate).expect("open gate");
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
    /// The socket's path: tmux 3.3a leaves it behind when it exits.
    path: Option<String>,
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
        if let Some(path) = self.path.take() {
            let _ = std::fs::remove_file(path);
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
        path: None,
    };
    t.run(&["new-session", "-d", "-s", "one", "-x", "80", "-y", "24"]);
    t.pid = t.run(&["display", "-p", "#{pid}"]).parse().ok();
    t.path = Some(t.run(&["display", "-p", "#{socket_path}"]));
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

// ---- Terminal notifications (issue 15) ----

/// A person's tmux client attached to `session` in a pseudo-terminal whose every byte is
/// recorded (`script`'s typescript), with `vars` in its environment (what a terminal sets).
struct Recorded {
    child: Child,
    file: PathBuf,
}

impl Recorded {
    fn attach(tmux: &support::Tmux, session: &str, file: PathBuf, vars: &[(&str, &str)]) -> Self {
        let cmd = format!(
            "stty cols 100 rows 30; exec tmux -L {} attach -t {session}",
            tmux.name
        );
        let mut c = Command::new("script");
        c.args(["-qfc", &cmd])
            .arg(&file)
            .env_remove("TMUX")
            .env_remove("KITTY_WINDOW_ID")
            .env_remove("LC_TERMINAL")
            .env("TERM", "xterm-256color")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (k, v) in vars {
            c.env(k, v);
        }
        let child = c.spawn().expect("script");
        support::wait_for(10, "recorded client attached", || {
            tmux.cmd(&["list-clients", "-F", "#{client_control_mode}"])
                .lines()
                .any(|l| l == "0")
                .then_some(())
        });
        Recorded { child, file }
    }

    fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.file).unwrap_or_default()
    }

    /// Waits until the recording holds `needle`.
    fn wait_for(&self, needle: &[u8]) {
        support::wait_for(
            10,
            &format!(
                "{:?} in the client's terminal",
                String::from_utf8_lossy(needle)
            ),
            || {
                let b = self.bytes();
                b.windows(needle.len()).any(|w| w == needle).then_some(())
            },
        );
    }
}

impl Drop for Recorded {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

/// A server and a daemon's directories with notifications on, sounds off, and terminal notes
/// as OSC 777.
fn osc777_notes() -> (support::Tmux, support::Env) {
    let mut env = support::Env::new();
    env.effects = true;
    write_config(&env, "sound = false\nterminal_notifications = \"osc777\"\n");
    (support::Tmux::new(), env)
}

fn write_config(env: &support::Env, text: &str) {
    let dir = env.path("config/thinkterm");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

fn reload(env: &support::Env, tmux: &support::Tmux) {
    let (code, out, err) = env.run(tmux, &["rules", "reload"]);
    assert_eq!(code, 0, "reload: {out}{err}");
}

fn notify(env: &support::Env, tmux: &support::Tmux, pane: &str, title: &str, body: &str) {
    let (code, out, err) = env.run(tmux, &["notify", "--pane", pane, "--title", title, body]);
    assert_eq!(code, 0, "notify: {out}{err}");
}

#[test]
fn terminal_notifications_reach_the_client_in_each_protocol_and_wrapped_when_nested() {
    let mut tmux = support::Tmux::new();
    // Notifications on (no THINKTERM_DISABLE_SOUND), sounds off in the config.
    let mut env = support::Env::new();
    env.effects = true;
    let agent = support::drawing_agent(&env, "claude");
    let pane = tmux.new_session("work", Some(&agent.display().to_string()));
    // A name of our own: the fake agent is a bash script, so `automatic-rename` turns the
    // window's name from `claude` into `bash` a moment after it starts, and the notifications
    // (which name the window) would say one or the other depending on when they were sent.
    tmux.cmd(&["rename-window", "-t", &pane, "agent"]);
    tmux.new_session("home", None);
    write_config(
        &env,
        "sound = false\nterminal_notifications = \"osc777\"\nterminal_bell = true\n",
    );
    let person = Recorded::attach(&tmux, "home", env.path("typescript"), &[]);
    let daemon = support::Daemon::start(&env, &tmux);
    daemon.wait_ready(&env, &tmux);
    env.wait_row(&tmux, &pane, "agent", "claude", 10);
    let name = tmux
        .cmd(&[
            "display-message",
            "-p",
            "-t",
            &pane,
            "#{session_name}:#{window_name}",
        ])
        .trim()
        .to_string();

    // An agent blocks in a window nobody looks at: the person's terminal gets OSC 777 and a
    // bell, in the exact form.
    let frame = support::fixtures::path("claude-code/2.1.328/008-blocked.txt");
    tmux.type_line(&pane, &frame.display().to_string());
    person.wait_for(format!("\x1b]777;notify;{name}: waiting for you;").as_bytes());
    let all = person.bytes();
    let start = all.windows(8).position(|w| w == b"\x1b]777;no").unwrap();
    let end = start + all[start..].iter().position(|b| *b == 0x07).unwrap();
    assert_eq!(
        all.get(end + 1),
        Some(&0x07),
        "the bell follows the sequence"
    );
    let seq = String::from_utf8_lossy(&all[start..end]).into_owned();
    assert!(!seq[2..].contains('\x1b'), "one clean sequence: {seq:?}");

    // `notify` in each protocol; text that would end the sequence is folded.
    write_config(&env, "sound = false\nterminal_notifications = \"osc9\"\n");
    reload(&env, &tmux);
    notify(&env, &tmux, &pane, "Build", "done; 3\x07 warnings");
    person.wait_for(format!("\x1b]9;{name}: Build: done; 3 warnings\x07").as_bytes());

    write_config(&env, "sound = false\nterminal_notifications = \"osc99\"\n");
    reload(&env, &tmux);
    notify(&env, &tmux, &pane, "T", "B");
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let title = b64(&format!("{name}: T"));
    person.wait_for(format!(":d=0:e=1:p=title;{title}\x1b\\").as_bytes());
    person.wait_for(format!(":d=1:e=1:p=body;{}\x1b\\", b64("B")).as_bytes());
    assert!(
        !person.bytes().ends_with(b"\x07\x07"),
        "no bell unless asked"
    );

    // auto: the client process's environment says iTerm2 (LC_TERMINAL, as ssh forwards it).
    drop(person);
    support::wait_for(10, "first client gone", || {
        tmux.cmd(&["list-clients", "-F", "#{client_control_mode}"])
            .lines()
            .all(|l| l != "0")
            .then_some(())
    });
    write_config(&env, "sound = false\nterminal_notifications = \"auto\"\n");
    reload(&env, &tmux);
    let iterm = Recorded::attach(
        &tmux,
        "home",
        env.path("typescript-2"),
        &[("LC_TERMINAL", "iTerm2")],
    );
    notify(&env, &tmux, &pane, "Auto", "nine");
    iterm.wait_for(format!("\x1b]9;{name}: Auto: nine\x07").as_bytes());
    drop(iterm);

    // Nested: the client runs in a pane of another tmux (TMUX set there); what it gets is
    // wrapped for that tmux's passthrough, every ESC doubled, and the outer pane's screen shows
    // none of it.
    let mut outer = support::Tmux::new();
    let raw = env.path("outer-raw");
    let outer_pane = outer.new_session(
        "outer",
        Some(&format!("tmux -L {} attach -t home", tmux.name)),
    );
    outer.cmd(&[
        "pipe-pane",
        "-o",
        "-t",
        &outer_pane,
        &format!("cat >> {}", raw.display()),
    ]);
    support::wait_for(10, "nested client attached", || {
        tmux.cmd(&["list-clients", "-F", "#{client_control_mode}"])
            .lines()
            .any(|l| l == "0")
            .then_some(())
    });
    notify(&env, &tmux, &pane, "Nested", "x");
    let wrapped = format!("\x1bPtmux;\x1b\x1b]777;notify;{name}: Nested;x\x07\x1b\\");
    support::wait_for(10, "wrapped sequence in the outer pane's output", || {
        let b = std::fs::read(&raw).unwrap_or_default();
        (count(&b, wrapped.as_bytes()) == 1).then_some(())
    });
    let screen = outer.cmd(&["capture-pane", "-p", "-t", &outer_pane]);
    assert!(
        !screen.contains("Nested") && !screen.contains("notify"),
        "{screen}"
    );
    outer.kill();
    drop(daemon);
    tmux.kill();
}

/// One run of the flood test: an inner tmux whose only window floods in bursts of coloured,
/// underlined lines, shown by a client that runs in a pane of an outer tmux (the terminal whose
/// screen is compared) behind a slow reader, and `notes` notifications sent while it floods. Returns the outer
/// pane's screen (with attributes) at the end and the bytes the inner client wrote.
fn flood_run(notes: usize) -> (String, Vec<u8>) {
    let (mut tmux, env) = osc777_notes();
    let go = env.path("go");
    let flood = env.path("flood.sh");
    support::script(
        &flood,
        &format!(
            "#!/bin/bash\nwhile [ ! -e {go} ]; do sleep 0.05; done\n\
             for b in $(seq 1 20); do\n\
               for i in $(seq 1 1500); do printf '\\033[1;3%dmburst %02d line %04d \\033[4munder\\033[24m \\033[7mrev\\033[0m tail\\n' $((i % 7)) $b $i; done\n\
               sleep 0.45\n\
             done\nprintf 'END\\n'\nexec sleep 600\n",
            go = go.display()
        ),
    );
    let pane = tmux.new_session("s", Some(&flood.display().to_string()));
    // A status line that is the same in every run: no clock, no title, a fixed window name.
    tmux.cmd(&["rename-window", "-t", &pane, "flood"]);
    for (k, v) in [("status-right", ""), ("status-left", "[s] ")] {
        tmux.cmd(&["set-option", "-g", k, v]);
    }
    let daemon = support::Daemon::start(&env, &tmux);
    daemon.wait_ready(&env, &tmux);

    let mut outer = support::Tmux::new();
    let raw = env.path("raw");
    let attach = format!(
        "env -u TMUX TERM=xterm-256color tmux -L {} attach -t s",
        tmux.name
    );
    // The client's terminal reads slowly (about 100 KiB/s, like ssh on a slow link): tmux's
    // writes to it come out in parts, the case where a write landing between two parts would
    // break a sequence of tmux's. (perl is in every Debian; a python here would go through
    // pyenv's shim, whose lock a killed process leaves behind.)
    let cmd = format!(
        "script -qfc '{attach}' /dev/null | perl -e 'while (sysread(STDIN, $b, 1024)) {{ syswrite(STDOUT, $b); select(undef, undef, undef, 0.01) }}'"
    );
    let outer_pane = outer.new_session("outer", Some(&cmd));
    outer.cmd(&[
        "pipe-pane",
        "-o",
        "-t",
        &outer_pane,
        &format!("cat >> {}", raw.display()),
    ]);
    support::wait_for(10, "inner client attached", || {
        tmux.cmd(&["list-clients", "-F", "#{client_control_mode}"])
            .lines()
            .any(|l| l == "0")
            .then_some(())
    });

    std::fs::write(&go, "").unwrap();
    // The notes go out while the flood runs, one request each, spread over ~8 s.
    let sender = {
        let socket = daemon
            .log_text()
            .split("socket=")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .map(PathBuf::from)
            .expect("the daemon logs its socket");
        let pane = pane.clone();
        std::thread::spawn(move || {
            use std::io::{BufRead, BufReader, Write};
            let s = std::os::unix::net::UnixStream::connect(&socket).unwrap();
            let mut w = s.try_clone().unwrap();
            let mut r = BufReader::new(s);
            let mut line = String::new();
            for i in 0..notes {
                writeln!(
                    w,
                    "{{\"request\":\"notify\",\"pane\":\"{pane}\",\"title\":\"n\",\"body\":\"note {i}\"}}"
                )
                .unwrap();
                line.clear();
                r.read_line(&mut line).unwrap();
                assert!(line.contains("\"done\""), "{line}");
                std::thread::sleep(Duration::from_millis(8));
            }
        })
    };
    support::wait_for(60, "the flood ends", || {
        outer
            .cmd(&["capture-pane", "-p", "-t", &outer_pane])
            .contains("END")
            .then_some(())
    });
    sender.join().unwrap();
    if notes > 0 {
        // The newest note is written last (the queue keeps the newest): once it is out, every
        // note was written or dropped.
        notify(&env, &tmux, &pane, "n", "last");
        support::wait_for(40, "the last note written", || {
            let b = std::fs::read(&raw).unwrap_or_default();
            (count(&b, b"n;last\x07") == 1).then_some(())
        });
    }
    let screen = outer.cmd(&["capture-pane", "-e", "-p", "-t", &outer_pane]);
    let bytes = std::fs::read(&raw).unwrap_or_default();
    outer.kill();
    drop(daemon);
    tmux.kill();
    (screen, bytes)
}

/// Where in a terminal byte stream each `ESC ] 777` begins: how many begin at a boundary
/// (nothing open) and how many inside something of tmux's (an escape sequence, a string, or a
/// UTF-8 character) — the bytes a write landing between two parts of tmux's output would cut.
fn osc777_starts(bytes: &[u8]) -> (usize, usize) {
    #[derive(PartialEq)]
    enum S {
        Ground,
        Esc,
        Csi,
        Str,
        StrEsc,
    }
    let (mut s, mut utf8_left) = (S::Ground, 0u32);
    let (mut clean, mut inside) = (0, 0);
    for (i, &b) in bytes.iter().enumerate() {
        if b == 0x1b && bytes[i..].starts_with(b"\x1b]777;") {
            if s == S::Ground && utf8_left == 0 {
                clean += 1;
            } else {
                inside += 1;
            }
        }
        s = match s {
            S::Ground => {
                if utf8_left > 0 && (0x80..0xc0).contains(&b) {
                    utf8_left -= 1;
                    S::Ground
                } else {
                    utf8_left = match b {
                        0xc0..=0xdf => 1,
                        0xe0..=0xef => 2,
                        0xf0..=0xf7 => 3,
                        _ => 0,
                    };
                    if b == 0x1b {
                        S::Esc
                    } else {
                        S::Ground
                    }
                }
            }
            S::Esc => match b {
                b'[' => S::Csi,
                b']' | b'P' | b'_' | b'^' | b'X' => S::Str,
                0x20..=0x2f => S::Esc,
                _ => S::Ground,
            },
            S::Csi => match b {
                0x40..=0x7e => S::Ground,
                0x1b => S::Esc,
                _ => S::Csi,
            },
            S::Str => match b {
                0x07 => S::Ground,
                0x1b => S::StrEsc,
                _ => S::Str,
            },
            S::StrEsc => match b {
                b'\\' => S::Ground,
                0x1b => S::StrEsc,
                _ => S::Str,
            },
        };
    }
    (clean, inside)
}

#[test]
fn terminal_notifications_during_a_flood_leave_the_client_s_screen_intact() {
    let (quiet_screen, quiet_bytes) = flood_run(0);
    assert_eq!(count(&quiet_bytes, b"\x1b]777;"), 0);
    let (screen, bytes) = flood_run(1000);
    let differ: Vec<String> = screen
        .lines()
        .zip(quiet_screen.lines())
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(i, (a, b))| format!("line {i}:\n  with:    {a:?}\n  without: {b:?}"))
        .collect();
    assert!(
        differ.is_empty() && screen.lines().count() == quiet_screen.lines().count(),
        "the screen differs from the run without notifications:\n{}",
        differ.join("\n")
    );
    // Every sequence that went out is whole: as many complete ones as started ones.
    let started = count(&bytes, b"\x1b]777;notify;");
    let text = String::from_utf8_lossy(&bytes);
    let whole = regex::Regex::new(r"\x1b\]777;notify;s:[^;\x07\x1b]*: n;(note \d+|last)\x07")
        .unwrap()
        .find_iter(&text)
        .count();
    assert!(started >= 2, "some notifications were written ({started})");
    assert_eq!(whole, started, "a sequence was cut");
    // And none began inside something of tmux's.
    let (clean, inside) = osc777_starts(&bytes);
    assert_eq!(
        (clean, inside),
        (started, 0),
        "notifications written inside tmux's output"
    );
    eprintln!("{started} terminal notifications written of 1001 sent");
}

/// A pane that flooded and has its pipe held closed (`daemon::flood`) holds a terminal note
/// back only while it writes: once it stops, the note goes out after the quiet wait, while the
/// pipe is still held (its writes come from its terminal's inotify events). Were a held pane
/// counted as paused in a control client (its writes unknown), the note would wait for the
/// hold's end, up to 8 s later.
#[test]
fn a_held_pane_that_stopped_writing_holds_no_terminal_note_back() {
    let (mut tmux, env) = osc777_notes();
    let stop = env.path("stop");
    let flood = env.path("flood.sh");
    // About 800 KiB/s (the gate's limit is 256) until `stop` exists, then quiet, in the same
    // program (a new command in the pane would reopen its pipe at once).
    support::script(
        &flood,
        &format!(
            "#!/bin/sh\nexec perl -e '$| = 1; my $s = \"x\" x 8000; \
             until (-e \"{stop}\") {{ print \"$s\\n\"; select(undef, undef, undef, 0.01) }} \
             sleep 600'\n",
            stop = stop.display()
        ),
    );
    let pane = tmux.new_session("s", Some(&flood.display().to_string()));
    let person = Recorded::attach(&tmux, "s", env.path("typescript"), &[]);
    let daemon = support::Daemon::start(&env, &tmux);
    daemon.wait_ready(&env, &tmux);
    const HELD: &str = "pipe (held closed: the pane floods)";
    // The third hold (8 s) has begun: the gate looked at the terminal twice at a hold's end
    // and found the flood going on each time.
    support::wait_for(30, "the third hold of the flooding pane's pipe", || {
        let v = env.explain(&tmux, &pane);
        (v["output"] == HELD && v["flood_holds"].as_u64() >= Some(3)).then_some(())
    });
    std::fs::write(&stop, "").unwrap();
    notify(&env, &tmux, &pane, "n", "after the flood");
    person.wait_for(b";after the flood\x07");
    let v = env.explain(&tmux, &pane);
    assert_eq!(
        v["output"], HELD,
        "the note waited for the hold's end: {}",
        v["flood_pauses"]
    );
    drop(daemon);
}

/// The session bus killed under the daemon and started again at the same address, a new
/// notification server on it: the next notification arrives, the outage is logged once, and
/// nothing else waited meanwhile (`agents` answers while the bus is down).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_bus_killed_and_restarted_gets_the_next_notification() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bus");
    let bus = Bus::start_at(&path);
    let (server, calls) = serve(&bus).await;
    let mut tmux = support::Tmux::new();
    let mut env = support::Env::new();
    env.effects = true;
    env.vars.push((
        "DBUS_SESSION_BUS_ADDRESS".into(),
        format!("unix:path={}", path.display()),
    ));
    env.vars.push(("THINKTERM_SOUND".into(), "false".into()));
    let pane = tmux.new_session("proj", None);
    let d = support::Daemon::start(&env, &tmux);
    d.wait_ready(&env, &tmux);
    let notify = |text: &str| {
        let (code, _, err) = env.run(&tmux, &["notify", "--pane", &pane, text]);
        assert_eq!(code, 0, "{err}");
    };
    notify("one");
    assert!(wait_until(|| calls.lock().unwrap().len() == 1).await);

    // The bus goes away: notifications are lost, nothing else waits.
    drop(server);
    drop(bus);
    notify("lost");
    assert!(env.pane_row(&tmux, &pane).is_some(), "agents answers");
    support::wait_for(10, "the outage to be logged", || {
        d.log_text()
            .contains("notifications unavailable")
            .then_some(())
    });

    // A new bus at the same address, a new server: the next one arrives.
    let bus2 = Bus::start_at(&path);
    let (_server2, calls2) = serve(&bus2).await;
    let started = std::time::Instant::now();
    let mut sent = 0;
    // Each `notify` is one try; the desktop task reconnects with its backoff.
    while calls2.lock().unwrap().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no notification after the bus came back; log:\n{}",
            d.log_text()
        );
        notify(&format!("after {sent}"));
        sent += 1;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(calls2.lock().unwrap()[0].body.starts_with("after "));
    assert_eq!(calls.lock().unwrap().len(), 1);
    let log = d.log_text();
    // Counted at the levels a person sees (TT_TEST_LOG=debug adds the detail lines).
    let warned = log
        .lines()
        .filter(|l| l.contains(" WARN ") && l.contains("notifications unavailable"))
        .count();
    assert_eq!(warned, 1, "one line for the outage:\n{log}");
    drop(bus2);
}
