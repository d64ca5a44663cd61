//! A private session bus with a recording notification server (zbus), and a recording audio
//! player stand-in, shared by the test binaries that check notifications and sounds.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use zbus::object_server::SignalEmitter;
use zbus::zvariant::OwnedValue;

/// A private session bus, killed by pid on drop.
pub struct Bus {
    child: Child,
    /// Its address.
    pub address: String,
}

impl Bus {
    /// Starts one listening at `unix:path=PATH` (so that a restarted bus has the old address).
    pub fn start_at(path: &std::path::Path) -> Bus {
        let _ = std::fs::remove_file(path);
        Self::spawn(&[format!("--address=unix:path={}", path.display())])
    }

    /// Starts one.
    pub fn start() -> Bus {
        Self::spawn(&[])
    }

    fn spawn(extra: &[String]) -> Bus {
        let mut child = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address"])
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .expect("dbus-daemon starts");
        let mut line = String::new();
        let out = child.stdout.take().expect("stdout");
        BufReader::new(out)
            .read_line(&mut line)
            .expect("address line");
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

#[derive(Clone, Debug)]
pub struct Call {
    /// Summary.
    pub summary: String,
    /// Body.
    pub body: String,
    /// Actions.
    pub actions: Vec<String>,
    /// Hints.
    pub hints: HashMap<String, OwnedValue>,
    /// When the server received it.
    pub at: std::time::SystemTime,
}

#[derive(Default)]
pub struct Server {
    /// Every Notify call, in order.
    pub calls: Arc<Mutex<Vec<Call>>>,
    next: u32,
}

#[zbus::interface(name = "org.freedesktop.Notifications")]
impl Server {
    #[allow(clippy::too_many_arguments)]
    fn notify(
        &mut self,
        _app: String,
        _replaces: u32,
        _icon: String,
        summary: String,
        body: String,
        actions: Vec<String>,
        hints: HashMap<String, OwnedValue>,
        _timeout: i32,
    ) -> u32 {
        self.calls.lock().expect("lock").push(Call {
            summary,
            body,
            actions,
            hints,
            at: std::time::SystemTime::now(),
        });
        self.next += 1;
        self.next
    }
    fn get_capabilities(&self) -> Vec<String> {
        vec!["body".into(), "actions".into()]
    }
    fn get_server_information(&self) -> (String, String, String, String) {
        ("test".into(), "thinkterm".into(), "1".into(), "1.2".into())
    }
    fn close_notification(&self, _id: u32) {}
    #[zbus(signal)]
    pub async fn action_invoked(e: &SignalEmitter<'_>, id: u32, key: &str) -> zbus::Result<()>;
}

/// The notification server's object path.
pub const PATH: &str = "/org/freedesktop/Notifications";

/// Serves a recording notification server on `bus`.
pub async fn serve(bus: &Bus) -> (zbus::Connection, Arc<Mutex<Vec<Call>>>) {
    let server = Server::default();
    let calls = server.calls.clone();
    let conn = zbus::connection::Builder::address(bus.address.as_str())
        .expect("address")
        .name("org.freedesktop.Notifications")
        .expect("name")
        .serve_at(PATH, server)
        .expect("serve")
        .build()
        .await
        .expect("server connects");
    (conn, calls)
}

/// A string hint of a call.
pub fn hint_str(call: &Call, key: &str) -> Option<String> {
    call.hints
        .get(key)
        .and_then(|v| String::try_from(v.try_clone().ok()?).ok())
}

/// A `paplay` stand-in that appends its name and argv to `log`, and waits while `gate` exists.
pub fn stand_in(dir: &Path, name: &str, log: &Path, gate: &Path) {
    let script = format!(
        "#!/bin/sh\necho \"$(basename \"$0\") $*\" >> '{}'\nwhile [ -e '{}' ]; do sleep 0.02; done\n",
        log.display(),
        gate.display()
    );
    let p = dir.join(name);
    std::fs::write(&p, script).expect("write stand-in");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// The lines of a stand-in's log.
pub fn lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}
