//! The checks on made-up facts: each broken thing is named with its fix.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::json;

use super::*;
use crate::doctor::bus::ServerInfo;
use crate::doctor::facts::{SocketFacts, TmuxFacts};

fn healthy() -> Facts {
    let mut options = BTreeMap::new();
    for (k, v) in [
        ("focus-events", "on"),
        ("status", "on"),
        (
            "window-status-format",
            " #I:#W#{?@thinkterm_icon, #{@thinkterm_icon},} ",
        ),
        (
            "window-status-current-format",
            " #I:#W#{?@thinkterm_icon, #{@thinkterm_icon},} ",
        ),
        ("status-right", "#{@thinkterm_summary} %H:%M"),
    ] {
        options.insert(k.to_string(), v.to_string());
    }
    Facts {
        server: PathBuf::from("/tmp/tmux-0/default"),
        tmux: TmuxFacts {
            path: Some(PathBuf::from("/usr/bin/tmux")),
            client_version: Some("tmux 3.3a".into()),
            server_running: true,
            server_version: Some("3.3a".into()),
            options,
            clients: vec![("/dev/pts/1".into(), "xterm-256color".into())],
        },
        daemon: DaemonFacts::Running(json!({
            "pid": 42, "version": env!("CARGO_PKG_VERSION"), "exe": "/usr/bin/thinkterm-sidecar",
            "attached": true, "control_clients": 1, "sessions": 1, "panes": 2, "clients": 1,
            "focus_events": true,
            "notifications": {"enabled": true, "off_because": null},
            "sound": {"enabled": true, "program": "/usr/bin/paplay", "off_because": null},
            "rules": {"agents": 10, "overrides": [], "rejected": []},
            "config": {"path": "/home/u/.config/thinkterm/config.toml", "warnings": []},
            "unrecognised": [],
            "log": "/home/u/.local/state/thinkterm/daemon-default-1.log",
        })),
        socket: SocketFacts {
            dir: PathBuf::from("/run/user/0/thinkterm"),
            socket: PathBuf::from("/run/user/0/thinkterm/default-1.sock"),
            problems: Vec::new(),
            exists: true,
        },
        bus: BusFacts::Server {
            address: Some("unix:path=/run/user/0/bus".into()),
            info: ServerInfo {
                name: "dunst".into(),
                vendor: "knopwob".into(),
                version: "1.9".into(),
                spec_version: "1.2".into(),
                capabilities: vec!["body".into(), "actions".into()],
            },
        },
        player: Some(PathBuf::from("/usr/bin/paplay")),
        config: crate::config::load_with(PathBuf::from("/nonexistent/config.toml"), &[]),
        local_rejected: Vec::new(),
        local_agents: 10,
        version: env!("CARGO_PKG_VERSION"),
    }
}

fn check<'a>(checks: &'a [Check], id: &str) -> &'a Check {
    checks.iter().find(|c| c.id == id).expect(id)
}

#[test]
fn a_healthy_setup_is_all_good() {
    let checks = all(&healthy());
    let bad: Vec<_> = checks.iter().filter(|c| c.status > Status::Info).collect();
    assert!(bad.is_empty(), "{bad:#?}");
    assert_eq!(check(&checks, "machines").summary, "none configured");
    assert_eq!(
        check(&checks, "terminal_notifications").summary,
        "none configured"
    );
}

#[test]
fn each_broken_thing_is_named_with_its_fix() {
    let mut f = healthy();
    f.tmux.options.insert("focus-events".into(), "off".into());
    f.tmux
        .options
        .insert("window-status-format".into(), "#I:#W".into());
    f.bus = BusFacts::NoBus("no DBUS_SESSION_BUS_ADDRESS".into());
    if let DaemonFacts::Running(v) = &mut f.daemon {
        v["sound"]["program"] = json!(null);
        v["rules"]["rejected"] = json!([{"path": "/x/bad.toml", "reasons": ["/x/bad.toml:3: unknown region \"middle\""]}]);
    }
    let checks = all(&f);
    let failed: Vec<&str> = checks
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(|c| c.id)
        .collect();
    assert_eq!(
        failed,
        [
            "focus_events",
            "window_formats",
            "session_bus",
            "sound",
            "rules"
        ]
    );
    for id in failed {
        assert!(check(&checks, id).fix.is_some(), "{id} has no fix");
    }
    let formats = check(&checks, "window_formats");
    assert_eq!(
        formats.summary,
        "window-status-format without #{@thinkterm_icon}"
    );
    assert!(check(&checks, "rules").detail[0].contains("bad.toml:3"));
    assert!(check(&checks, "sound")
        .fix
        .as_deref()
        .unwrap_or("")
        .contains("pulseaudio-utils"));
    assert_eq!(check(&checks, "notification_server").status, Status::Info);
}

#[test]
fn a_theme_that_builds_formats_from_options_is_followed() {
    let mut f = healthy();
    f.tmux.options.insert(
        "window-status-format".into(),
        "#[fg=blue]#{E:@catppuccin_window_text}".into(),
    );
    f.tmux.options.insert(
        "@catppuccin_window_text".into(),
        " #W#{?@thinkterm_icon, #{@thinkterm_icon},}".into(),
    );
    assert_eq!(check(&all(&f), "window_formats").status, Status::Ok);
}

#[test]
fn no_daemon_no_server_and_off_switches() {
    let mut f = healthy();
    f.daemon = DaemonFacts::NotRunning("/run/x.sock: No such file or directory".into());
    f.tmux.server_running = false;
    f.tmux.options.clear();
    f.config.config.sound = false;
    f.config.config.system_notifications = false;
    f.bus = BusFacts::NoBus("none".into());
    let checks = all(&f);
    assert_eq!(check(&checks, "daemon").status, Status::Fail);
    assert!(check(&checks, "daemon")
        .fix
        .as_deref()
        .unwrap_or("")
        .contains("run --detach"));
    assert_eq!(check(&checks, "server").status, Status::Fail);
    assert_eq!(check(&checks, "window_formats").status, Status::Info);
    assert_eq!(check(&checks, "sound").status, Status::Ok);
    assert_eq!(check(&checks, "session_bus").status, Status::Ok);
}

#[test]
fn machines_and_terminal_notifications_light_up_when_the_daemon_reports_them() {
    let mut f = healthy();
    if let DaemonFacts::Running(v) = &mut f.daemon {
        v["machines"] = json!([
            {"name": "build-box", "reachable": true},
            {"name": "laptop", "reachable": false, "error": "ssh: connection refused"},
        ]);
        v["terminal_notifications"] = json!([{"client": "/dev/pts/1", "protocol": "osc 777"}]);
    }
    let checks = all(&f);
    let m = check(&checks, "machines");
    assert_eq!(
        (m.status, m.summary.as_str()),
        (Status::Fail, "1 of 2 not reachable")
    );
    assert_eq!(m.detail, ["laptop: ssh: connection refused"]);
    let t = check(&checks, "terminal_notifications");
    assert_eq!(t.detail, ["client /dev/pts/1: osc 777"]);
}

#[test]
fn unrecognised_panes_are_a_warning_naming_agent_version_and_the_save_command() {
    let mut f = healthy();
    assert_eq!(check(&all(&f), "drift").status, Status::Ok);
    if let DaemonFacts::Running(v) = &mut f.daemon {
        v["unrecognised"] = json!([
            {"pane": "%7", "agent": "claude", "version": "2.1.999", "reason": "no rule matched for 30 s"},
            {"pane": "%9", "agent": "codex", "version": null, "reason": "flipped 10 times in 15 s"},
        ]);
    }
    let d = check(&all(&f), "drift").clone();
    assert_eq!(d.status, Status::Warn);
    assert_eq!(
        d.detail,
        [
            "%7: claude 2.1.999: no rule matched for 30 s",
            "%9: codex: flipped 10 times in 15 s"
        ]
    );
    assert!(d.fix.unwrap().contains("explain %7 --save"));
    f.daemon = DaemonFacts::NotRunning("no socket".into());
    assert_eq!(check(&all(&f), "drift").status, Status::Info);
}

#[test]
fn versions_parse() {
    assert_eq!(parse_version("tmux 3.3a"), Some((3, 3)));
    assert_eq!(parse_version("3.2"), Some((3, 2)));
    assert_eq!(parse_version("next-3.6"), Some((3, 6)));
    assert_eq!(parse_version("tmux master"), None);
    let mut f = healthy();
    f.tmux.server_version = Some("3.1c".into());
    assert_eq!(check(&all(&f), "tmux").status, Status::Fail);
}
