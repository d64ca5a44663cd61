//! Judging what [`super::facts`] found: one [`Check`] per dependency of a first run, each saying
//! what is wrong and the fix. Pure: facts in, checks out.

use serde_json::Value;

use super::bus::BusFacts;
use super::facts::{DaemonFacts, Facts};
use super::report::{Check, Status};

/// The oldest tmux the sidecar supports (client protocol 8, `refresh-client -A`).
pub const MIN_TMUX: (u32, u32) = (3, 2);

/// What the status line shows.
const ICON: &str = "@thinkterm_icon";
const SUMMARY: &str = "@thinkterm_summary";
/// The line to add for the window icon.
pub const ICON_FORMAT: &str = "#{?@thinkterm_icon, #{@thinkterm_icon},}";

/// Every check, in the order people fix them.
pub fn all(f: &Facts) -> Vec<Check> {
    let d = match &f.daemon {
        DaemonFacts::Running(v) => Some(v),
        _ => None,
    };
    vec![
        tmux_version(f),
        server(f),
        daemon(f, d),
        focus_events(f, d),
        window_formats(f),
        summary(f),
        session_bus(f, d),
        notification_server(f, d),
        sound(f, d),
        rules(f, d),
        config(f, d),
        socket(f),
        machines(d),
        terminal_notifications(f, d),
        drift(d),
    ]
}

/// `3.3a` → (3, 3); `next-3.4` → (3, 4).
pub fn parse_version(v: &str) -> Option<(u32, u32)> {
    let v = v
        .trim()
        .trim_start_matches("tmux ")
        .trim_start_matches("next-");
    let (major, rest) = v.split_once('.')?;
    let minor: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((major.parse().ok()?, minor.parse().ok()?))
}

fn tmux_version(f: &Facts) -> Check {
    let c = |s, m: String| Check::new("tmux", "tmux", s, m);
    let Some(path) = &f.tmux.path else {
        return c(Status::Fail, "tmux is not on PATH".into())
            .fix("install tmux 3.2 or later (apt-get install tmux)");
    };
    let v = f
        .tmux
        .server_version
        .clone()
        .or_else(|| f.tmux.client_version.clone())
        .unwrap_or_default();
    match parse_version(&v) {
        Some(n) if n >= MIN_TMUX => c(Status::Ok, format!("{v} ({})", path.display())),
        Some(_) => {
            c(Status::Fail, format!("{v} is older than 3.2")).fix("install tmux 3.2 or later")
        }
        None => c(
            Status::Warn,
            format!("cannot read the version of {}: {v:?}", path.display()),
        )
        .fix("check that `tmux -V` works"),
    }
}

fn server(f: &Facts) -> Check {
    if f.tmux.server_running {
        Check::new(
            "server",
            "tmux server",
            Status::Ok,
            format!("running at {}", f.server.display()),
        )
    } else {
        Check::new(
            "server",
            "tmux server",
            Status::Fail,
            format!("no tmux server at {}", f.server.display()),
        )
        .fix("start tmux, or point doctor at your server with -L NAME or -S PATH (inside tmux it uses $TMUX)")
    }
}

fn daemon(f: &Facts, d: Option<&Value>) -> Check {
    let c = |s, m: String| Check::new("daemon", "daemon", s, m);
    let start = "start it: `thinkterm-sidecar run --detach` (or load the tmux plugin, or \
                 `systemctl --user start thinkterm-sidecar`)";
    let v = match (&f.daemon, d) {
        (DaemonFacts::NotRunning(why), _) => {
            return c(Status::Fail, "not running for this server".into())
                .detail([format!("socket {why}")])
                .fix(start)
        }
        (DaemonFacts::Unhelpful(why), _) => {
            return c(Status::Warn, format!("answers, but not to doctor: {why}"))
                .fix("it is older than this thinkterm-sidecar: restart it")
        }
        (_, Some(v)) => v,
        (_, None) => return c(Status::Fail, "no answer".into()).fix(start),
    };
    let pid = v["pid"].as_u64().unwrap_or(0);
    let version = v["version"].as_str().unwrap_or("?");
    let exe = v["exe"].as_str().unwrap_or("?");
    let mut detail = vec![format!("log: {}", v["log"].as_str().unwrap_or("?"))];
    if v["attached"] != true {
        return c(
            Status::Fail,
            format!("pid {pid} runs but is not attached to the server"),
        )
        .detail(detail)
        .fix("it waits for the server at this address: check -L/-S, or see its log");
    }
    detail.insert(
        0,
        format!(
            "{} control client(s), {} session(s), {} pane(s), {} attached client(s), {} stream(s) followed",
            v["control_clients"],
            v["sessions"],
            v["panes"],
            v["clients"],
            v["streams"].as_u64().unwrap_or(0)
        ),
    );
    let summary = format!("pid {pid}, version {version}, {exe}");
    if version != f.version {
        return c(Status::Warn, summary).detail(detail).fix(format!(
            "this doctor is version {}: restart the daemon to run the same build",
            f.version
        ));
    }
    c(Status::Ok, summary).detail(detail)
}

fn focus_events(f: &Facts, d: Option<&Value>) -> Check {
    let c = |s, m: &str| Check::new("focus_events", "focus-events", s, m.to_string());
    let on = match f.tmux.options.get("focus-events") {
        Some(v) => v == "on",
        None => match d.and_then(|v| v["focus_events"].as_bool()) {
            Some(b) => b,
            None => return c(Status::Info, "unknown (no tmux server)"),
        },
    };
    if on {
        c(Status::Ok, "on")
    } else {
        c(
            Status::Fail,
            "off: tmux cannot tell whether your terminal has focus, so notifications only \
             come for windows no client shows",
        )
        .fix("`set -g focus-events on` in ~/.tmux.conf (the plugin sets it)")
    }
}

/// Whether `format`, or a user option it names (followed two levels), mentions `needle`.
pub fn mentions(f: &Facts, format: &str, needle: &str, depth: u32) -> bool {
    format.contains(needle)
        || (depth > 0
            && super::facts::user_options_in(format).any(|o| {
                f.tmux
                    .options
                    .get(&o)
                    .is_some_and(|v| mentions(f, v, needle, depth - 1))
            }))
}

fn window_formats(f: &Facts) -> Check {
    let c = |s, m: String| Check::new("window_formats", "window formats", s, m);
    if !f.tmux.server_running {
        return c(Status::Info, "unknown (no tmux server)".into());
    }
    let missing: Vec<&str> = ["window-status-format", "window-status-current-format"]
        .into_iter()
        .filter(|o| {
            let v = f.tmux.options.get(*o).map(String::as_str).unwrap_or("");
            !mentions(f, v, ICON, 2)
        })
        .collect();
    if f.tmux.options.get("status").is_some_and(|s| s == "off") {
        return c(Status::Warn, "the status line is off (`status off`)".into())
            .fix("`set -g status on` to see the window icons");
    }
    match missing.len() {
        0 => c(Status::Ok, format!("show #{{{ICON}}}")),
        _ => c(
            Status::Fail,
            format!("{} without #{{{ICON}}}", missing.join(" and ")),
        )
        .detail(missing.iter().map(|o| {
            format!(
                "{o} = {}",
                f.tmux.options.get(*o).map(String::as_str).unwrap_or("")
            )
        }))
        .fix(format!(
            "add {ICON_FORMAT} to {} in ~/.tmux.conf, or load the plugin on tmux's \
                 default formats (docs/status-line.md has recipes, also for catppuccin)",
            missing.join(" and ")
        )),
    }
}

fn summary(f: &Facts) -> Check {
    let c = |s, m: &str| Check::new("summary", "session summary", s, m.to_string());
    if !f.tmux.server_running {
        return c(Status::Info, "unknown (no tmux server)");
    }
    let shown = ["status-left", "status-right"].iter().any(|o| {
        mentions(
            f,
            f.tmux.options.get(*o).map(String::as_str).unwrap_or(""),
            SUMMARY,
            2,
        )
    });
    if shown {
        c(
            Status::Ok,
            "status-left or status-right shows #{@thinkterm_summary}",
        )
    } else {
        c(Status::Info, "not shown (optional): add #{@thinkterm_summary} to status-right for the session's counts")
    }
}

fn notifications_off(d: Option<&Value>, f: &Facts) -> Option<String> {
    match d {
        Some(v) => v["notifications"]["off_because"].as_str().map(String::from),
        None if f.config.sound_disabled_by_env => Some("THINKTERM_DISABLE_SOUND is set".into()),
        None if !f.config.config.system_notifications => {
            Some("system_notifications = false in the config".into())
        }
        None => None,
    }
}

fn session_bus(f: &Facts, d: Option<&Value>) -> Check {
    let c = |s, m: String| Check::new("session_bus", "session bus", s, m);
    if let Some(why) = notifications_off(d, f) {
        return c(
            Status::Ok,
            format!("not needed: notifications are off ({why})"),
        );
    }
    match &f.bus {
        BusFacts::NoBus(why) => c(Status::Fail, "no session bus: desktop notifications cannot be sent".into())
            .detail([why.clone()])
            .fix(
                "run the daemon inside your desktop session, where DBUS_SESSION_BUS_ADDRESS is set \
                 (under systemd: `systemctl --user import-environment DBUS_SESSION_BUS_ADDRESS`, then \
                 restart it), or set system_notifications = false",
            ),
        BusFacts::NoServer { address, .. } | BusFacts::Server { address, .. } => c(
            Status::Ok,
            address.clone().unwrap_or_else(|| "the default session bus".into()),
        ),
    }
}

fn notification_server(f: &Facts, d: Option<&Value>) -> Check {
    let c = |s, m: String| Check::new("notification_server", "notification server", s, m);
    if notifications_off(d, f).is_some() {
        return c(Status::Ok, "not needed: notifications are off".into());
    }
    match &f.bus {
        BusFacts::NoBus(_) => c(Status::Info, "unknown (no session bus)".into()),
        BusFacts::NoServer { why, .. } => c(Status::Fail, "nothing owns org.freedesktop.Notifications".into())
            .detail([why.clone()])
            .fix("run a notification daemon (your desktop's, dunst, mako, xfce4-notifyd), or set system_notifications = false"),
        BusFacts::Server { info, .. } => {
            let summary = format!("{} {} ({}, spec {})", info.name, info.version, info.vendor, info.spec_version);
            let caps = format!("capabilities: {}", info.capabilities.join(", "));
            if info.capabilities.iter().any(|c| c == "actions") {
                c(Status::Ok, summary).detail([caps])
            } else {
                c(Status::Warn, summary)
                    .detail([caps])
                    .fix("it does not support actions: clicking a notification cannot bring the pane to the front (use the panel, or a server with actions such as dunst)")
            }
        }
    }
}

fn sound(f: &Facts, d: Option<&Value>) -> Check {
    let c = |s, m: String| Check::new("sound", "sound player", s, m);
    let (off, program) = match d {
        Some(v) => (
            v["sound"]["off_because"].as_str().map(String::from),
            v["sound"]["program"].as_str().map(String::from),
        ),
        None => (
            if f.config.sound_disabled_by_env {
                Some("THINKTERM_DISABLE_SOUND is set".into())
            } else if !f.config.config.sound {
                Some("sound = false in the config".into())
            } else {
                None
            },
            f.player.as_ref().map(|p| p.display().to_string()),
        ),
    };
    match (off, program) {
        (Some(why), _) => c(Status::Ok, format!("sounds are off ({why})")),
        (None, Some(p)) => c(Status::Ok, p),
        (None, None) => c(Status::Fail, "neither paplay nor pw-play is on the daemon's PATH: no sounds".into())
            .fix("apt-get install pulseaudio-utils (paplay) or pipewire-bin (pw-play), then restart the daemon; or set sound = false"),
    }
}

/// Rejected rule files: (path, reasons).
type RejectedFiles = Vec<(String, Vec<String>)>;

fn rules(f: &Facts, d: Option<&Value>) -> Check {
    let c = |s, m: String| Check::new("rules", "detection rules", s, m);
    let (agents, overrides, rejected): (u64, Vec<String>, RejectedFiles) = match d {
        Some(v) => (
            v["rules"]["agents"].as_u64().unwrap_or(0),
            v["rules"]["overrides"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|o| {
                    format!(
                        "{} from {}",
                        o["id"].as_str().unwrap_or("?"),
                        o["path"].as_str().unwrap_or("?")
                    )
                })
                .collect(),
            v["rules"]["rejected"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| {
                    let reasons = r["reasons"].as_array().into_iter().flatten();
                    (
                        r["path"].as_str().unwrap_or("?").to_string(),
                        reasons
                            .filter_map(|x| x.as_str().map(String::from))
                            .collect(),
                    )
                })
                .collect(),
        ),
        None => (
            f.local_agents as u64,
            Vec::new(),
            f.local_rejected
                .iter()
                .map(|r| (r.path.display().to_string(), r.reasons.clone()))
                .collect(),
        ),
    };
    let mut detail = overrides;
    let summary = format!(
        "{agents} agents loaded, {} override file(s) rejected",
        rejected.len()
    );
    if rejected.is_empty() {
        return c(Status::Ok, summary).detail(detail);
    }
    for (_, reasons) in &rejected {
        detail.extend(reasons.iter().map(|r| format!("rejected: {r}")));
    }
    let first = &rejected[0].0;
    c(Status::Fail, summary).detail(detail).fix(format!(
        "fix the file (`thinkterm-sidecar rules check {first}` says where), then \
         `thinkterm-sidecar rules reload`; meanwhile the bundled rules for that agent are used \
         (docs/rules.md)"
    ))
}

fn config(f: &Facts, d: Option<&Value>) -> Check {
    let c = |s, m: String| Check::new("config", "config", s, m);
    let (path, warnings): (String, Vec<String>) = match d {
        Some(v) => (
            v["config"]["path"].as_str().unwrap_or("?").to_string(),
            v["config"]["warnings"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|w| w.as_str().map(String::from))
                .collect(),
        ),
        None => (
            f.config.path.display().to_string(),
            f.config.warnings.clone(),
        ),
    };
    if warnings.is_empty() {
        c(Status::Ok, path)
    } else {
        c(Status::Warn, format!("{path}: {} warning(s)", warnings.len()))
            .detail(warnings)
            .fix("correct those lines (`thinkterm-sidecar config` lists every key), then `thinkterm-sidecar rules reload`")
    }
}

fn socket(f: &Facts) -> Check {
    let s = &f.socket;
    let c = |st, m: String| Check::new("socket", "socket", st, m);
    if !s.problems.is_empty() {
        return c(Status::Fail, s.socket.display().to_string())
            .detail(s.problems.clone())
            .fix(format!(
                "remove {} (the daemon makes it again, mode 700) and start the daemon",
                s.dir.display()
            ));
    }
    if s.exists {
        c(
            Status::Ok,
            format!("{} (yours, mode 600; directory 700)", s.socket.display()),
        )
    } else {
        c(
            Status::Info,
            format!(
                "{} (not there yet: made when the daemon starts)",
                s.socket.display()
            ),
        )
    }
}

fn machines(d: Option<&Value>) -> Check {
    let c = |s, m: String| Check::new("machines", "machines", s, m);
    let Some(list) = d.and_then(|v| v.get("machines")).and_then(Value::as_array) else {
        return c(Status::Info, "none configured".into());
    };
    if list.is_empty() {
        return c(Status::Info, "none configured".into());
    }
    let down: Vec<String> = list
        .iter()
        .filter(|m| m["reachable"] == false)
        .map(|m| {
            format!(
                "{}: {}",
                m["name"].as_str().unwrap_or("?"),
                m["error"].as_str().unwrap_or("not reachable")
            )
        })
        .collect();
    let all: Vec<String> = list
        .iter()
        .map(|m| {
            let state = if m["reachable"] == false {
                "not reachable"
            } else {
                "reachable"
            };
            format!("{}: {state}", m["name"].as_str().unwrap_or("?"))
        })
        .collect();
    if down.is_empty() {
        c(Status::Ok, format!("{} connected", list.len())).detail(all)
    } else {
        c(Status::Fail, format!("{} of {} not reachable", down.len(), list.len()))
            .detail(down)
            .fix("check the machine's bridge and the network (`thinkterm-sidecar agents` shows what is known)")
    }
}

fn terminal_notifications(f: &Facts, d: Option<&Value>) -> Check {
    let c = |s, m: String| Check::new("terminal_notifications", "terminal notifications", s, m);
    let clients: Vec<String> = f
        .tmux
        .clients
        .iter()
        .map(|(name, term)| format!("client {name}: terminal {term}"))
        .collect();
    match d
        .and_then(|v| v.get("terminal_notifications"))
        .and_then(Value::as_array)
    {
        Some(list) if !list.is_empty() => c(Status::Ok, format!("{} client(s)", list.len()))
            .detail(list.iter().map(|t| {
                format!(
                    "client {}: {}",
                    t["client"].as_str().unwrap_or("?"),
                    t["protocol"].as_str().unwrap_or("none")
                )
            })),
        _ => c(Status::Info, "none configured".into()).detail(clients),
    }
}

/// The drift alarm: panes of a known agent whose rules no longer recognise the screen.
fn drift(d: Option<&Value>) -> Check {
    let c = |s, m: String| Check::new("drift", "agents recognised", s, m);
    let Some(d) = d else {
        return c(Status::Info, "the daemon is not running".into());
    };
    let Some(list) = d.get("unrecognised").and_then(Value::as_array) else {
        return c(
            Status::Info,
            "the daemon does not report it (an older version)".into(),
        );
    };
    if list.is_empty() {
        return c(Status::Ok, "every agent's screen matches its rules".into());
    }
    let first = list[0]["pane"].as_str().unwrap_or("%0").to_string();
    c(
        Status::Warn,
        format!("{} pane(s) unrecognised (states come from the fallback)", list.len()),
    )
    .detail(list.iter().map(|p| {
        format!(
            "{}: {}{}: {}",
            p["pane"].as_str().unwrap_or("?"),
            p["agent"].as_str().unwrap_or("?"),
            p["version"].as_str().map(|v| format!(" {v}")).unwrap_or_default(),
            p["reason"].as_str().unwrap_or("?")
        )
    }))
    .fix(format!(
        "the agent probably changed its screen: save it with `thinkterm-sidecar explain {first} --save DIR` \
         and attach the two files to a bug report, or write an override rule (docs/rules.md)"
    ))
}

#[cfg(test)]
#[path = "checks_tests.rs"]
mod tests;
