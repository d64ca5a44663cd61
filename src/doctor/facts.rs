//! What the doctor finds out, gathered in the client: tmux (its version, the server, the options
//! the status line and notifications depend on, the attached clients), the daemon's own answer
//! (`Request::Doctor`, `src/daemon/doctor.rs`), the socket's directory and mode, the session bus
//! and notification server ([`super::bus`]), the sound players, and, when no daemon runs, the
//! rules and config as this machine would load them. Gathering only; judging is in
//! [`super::checks`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::cli::Cli;
use crate::ipc::schema::{Reply, Request};
use crate::tmux::server::ServerAddress;

/// The longest wait for the daemon's answer.
pub const DAEMON_TIMEOUT: Duration = Duration::from_secs(3);

/// Options the checks read (global values; user options they reference are added too).
pub const OPTIONS: [&str; 6] = [
    "focus-events",
    "status",
    "window-status-format",
    "window-status-current-format",
    "status-left",
    "status-right",
];

/// The tmux side.
#[derive(Clone, Debug, Default)]
pub struct TmuxFacts {
    /// The `tmux` found on PATH.
    pub path: Option<PathBuf>,
    /// `tmux -V` (`tmux 3.3a`).
    pub client_version: Option<String>,
    /// The server answers at the address.
    pub server_running: bool,
    /// The server's `#{version}`.
    pub server_version: Option<String>,
    /// Global option values by name (missing: unset), with the `@user` options the formats
    /// name, so a theme that builds its formats from options is followed.
    pub options: BTreeMap<String, String>,
    /// Attached clients that are people: (name, terminal name).
    pub clients: Vec<(String, String)>,
}

/// What the daemon said.
#[derive(Clone, Debug)]
pub enum DaemonFacts {
    /// Nothing answers on the socket.
    NotRunning(String),
    /// It answers but does not know the doctor request (an older build), or failed.
    Unhelpful(String),
    /// Its answer (`docs/schema.md`, "doctor").
    Running(serde_json::Value),
}

/// The socket's directory and file.
#[derive(Clone, Debug, Default)]
pub struct SocketFacts {
    /// The directory.
    pub dir: PathBuf,
    /// The socket.
    pub socket: PathBuf,
    /// Problems found (empty: fine).
    pub problems: Vec<String>,
    /// The socket exists.
    pub exists: bool,
}

/// Everything found.
#[derive(Clone, Debug)]
pub struct Facts {
    /// The server's address.
    pub server: PathBuf,
    /// tmux.
    pub tmux: TmuxFacts,
    /// The daemon.
    pub daemon: DaemonFacts,
    /// The socket.
    pub socket: SocketFacts,
    /// The session bus and notification server, as the daemon would reach them.
    pub bus: super::bus::BusFacts,
    /// The sound player on this PATH (the daemon's answer wins when it runs).
    pub player: Option<PathBuf>,
    /// The config as this machine loads it.
    pub config: crate::config::Loaded,
    /// Rule files rejected when loaded here (used when no daemon answers).
    pub local_rejected: Vec<crate::rules::Rejected>,
    /// Agents known when loaded here.
    pub local_agents: usize,
    /// This build's version.
    pub version: &'static str,
}

/// Gathers everything for the server `cli` points at.
pub async fn gather(cli: &Cli) -> Facts {
    let addr = ServerAddress::resolve(&cli.server());
    let socket = cli.daemon_socket();
    let daemon = ask_daemon(&socket).await;
    let bus_address = match &daemon {
        DaemonFacts::Running(v) => v["notifications"]["bus_address"].as_str().map(String::from),
        _ => None,
    }
    .or_else(|| std::env::var("DBUS_SESSION_BUS_ADDRESS").ok());
    let bus = super::bus::probe(bus_address).await;
    let a = addr.clone();
    let tmux = tokio::task::spawn_blocking(move || tmux_facts(&a))
        .await
        .unwrap_or_default();
    let config = crate::config::load(cli.config.as_deref());
    let report = crate::rules::Catalog::load(&crate::paths::rules_dir());
    Facts {
        server: addr.socket,
        tmux,
        daemon,
        socket: socket_facts(&socket),
        bus,
        player: crate::effects::sound::player::find_player(std::env::var_os("PATH").as_deref()),
        config,
        local_agents: report.catalog.agents().count(),
        local_rejected: report.rejected,
        version: env!("CARGO_PKG_VERSION"),
    }
}

async fn ask_daemon(socket: &Path) -> DaemonFacts {
    let mut c = match crate::ipc::Client::connect(socket).await {
        Ok(c) => c,
        Err(e) => return DaemonFacts::NotRunning(format!("{}: {e}", socket.display())),
    };
    match tokio::time::timeout(DAEMON_TIMEOUT, c.request(&Request::Doctor)).await {
        Ok(Ok(Reply::Value { value })) => DaemonFacts::Running(value),
        Ok(Ok(Reply::Error { message })) => DaemonFacts::Unhelpful(message),
        Ok(Ok(other)) => DaemonFacts::Unhelpful(format!("unexpected reply {other:?}")),
        Ok(Err(e)) => DaemonFacts::Unhelpful(e.to_string()),
        Err(_) => DaemonFacts::Unhelpful(format!("no answer within {DAEMON_TIMEOUT:?}")),
    }
}

/// Runs `tmux -S SOCKET ARGS…`; stdout when it succeeded.
fn tmux_out(tmux: &Path, addr: &ServerAddress, args: &[&str]) -> Option<String> {
    let out = Command::new(tmux)
        .args(addr.tmux_args())
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Blocking: spawns a handful of `tmux` commands.
pub fn tmux_facts(addr: &ServerAddress) -> TmuxFacts {
    let Some(path) = crate::tmux::server::find_tmux() else {
        return TmuxFacts::default();
    };
    let client_version = Command::new(&path)
        .arg("-V")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let mut f = TmuxFacts {
        client_version,
        ..TmuxFacts::default()
    };
    let sep = crate::tmux::command::SEP;
    if let Some(v) = tmux_out(&path, addr, &["display-message", "-p", "#{version}"]) {
        f.server_running = true;
        f.server_version = Some(v.trim().to_string());
        let mut wanted: Vec<String> = OPTIONS.iter().map(|s| s.to_string()).collect();
        while let Some(name) = wanted.pop() {
            if f.options.contains_key(&name) || f.options.len() > 64 {
                continue;
            }
            let value = option(&path, addr, &name);
            if let Some(v) = &value {
                wanted.extend(user_options_in(v).filter(|u| !f.options.contains_key(u)));
            }
            if let Some(v) = value {
                f.options.insert(name, v);
            }
        }
        let fmt = format!("#{{client_name}}{sep}#{{client_termname}}{sep}#{{client_control_mode}}");
        f.clients = tmux_out(&path, addr, &["list-clients", "-F", &fmt])
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let mut p = l.split(sep);
                let (name, term, control) = (p.next()?, p.next()?, p.next()?);
                (control != "1").then(|| (name.to_string(), term.to_string()))
            })
            .collect();
    }
    f.path = Some(path);
    f
}

/// A global option's value: session scope, then window scope (user options can be either).
fn option(tmux: &Path, addr: &ServerAddress, name: &str) -> Option<String> {
    for scope in ["-gqv", "-gwqv"] {
        if let Some(v) = tmux_out(tmux, addr, &["show-options", scope, name]) {
            let v = v.strip_suffix('\n').unwrap_or(&v);
            if !v.is_empty() || !name.starts_with('@') {
                return Some(v.to_string());
            }
        }
    }
    None
}

/// The `@user` options a format names (`#{@x}`, `#{E:@x}`, `#{?@x,…}`).
pub fn user_options_in(format: &str) -> impl Iterator<Item = String> + '_ {
    format.match_indices('@').filter_map(move |(i, _)| {
        let rest = &format[i + 1..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(rest.len());
        let before = format[..i].chars().last();
        (end > 0 && matches!(before, Some('{' | ':' | ',' | '?')))
            .then(|| format!("@{}", &rest[..end]))
    })
}

fn socket_facts(socket: &Path) -> SocketFacts {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let dir = socket.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut f = SocketFacts {
        dir: dir.clone(),
        socket: socket.to_path_buf(),
        ..SocketFacts::default()
    };
    let uid = crate::paths::uid();
    match std::fs::symlink_metadata(&dir) {
        Err(_) => {}
        Ok(m) if m.file_type().is_symlink() => f
            .problems
            .push(format!("{} is a symbolic link", dir.display())),
        Ok(m) if !m.is_dir() => f
            .problems
            .push(format!("{} is not a directory", dir.display())),
        Ok(m) => {
            if m.uid() != uid {
                f.problems.push(format!(
                    "{} is owned by uid {}, not by you (uid {uid})",
                    dir.display(),
                    m.uid()
                ));
            }
            if m.mode() & 0o077 != 0 {
                f.problems.push(format!(
                    "{} has mode {:o}, not 700",
                    dir.display(),
                    m.mode() & 0o777
                ));
            }
        }
    }
    if let Ok(m) = std::fs::symlink_metadata(socket) {
        f.exists = true;
        if !m.file_type().is_socket() {
            f.problems
                .push(format!("{} is not a socket", socket.display()));
        } else if m.mode() & 0o077 != 0 {
            f.problems.push(format!(
                "{} has mode {:o}, not 600",
                socket.display(),
                m.mode() & 0o777
            ));
        }
        if m.uid() != uid {
            f.problems.push(format!(
                "{} is owned by uid {}, not by you",
                socket.display(),
                m.uid()
            ));
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_options_are_found_in_formats() {
        let found: Vec<String> =
            user_options_in("#I #{@a}#{E:@theme_text}#{?@thinkterm_icon, x,} me@host #{@}")
                .collect();
        assert_eq!(found, ["@a", "@theme_text", "@thinkterm_icon"]);
    }

    #[test]
    fn a_loose_socket_directory_is_named() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("thinkterm");
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let f = socket_facts(&dir.join("x.sock"));
        assert_eq!(f.problems.len(), 1, "{:?}", f.problems);
        assert!(f.problems[0].contains("has mode 755, not 700"));
        assert!(!f.exists);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        assert!(socket_facts(&dir.join("x.sock")).problems.is_empty());
    }
}
