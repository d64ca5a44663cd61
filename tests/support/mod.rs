//! Test support shared by the integration test binaries: a private tmux server, the sidecar
//! daemon as a child process with private XDG directories, waiting with a deadline, and the
//! recorded agent fixtures ([`fixtures`]).
#![allow(dead_code)]

pub mod desktop;
pub mod fixtures;
pub mod sshd;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// Waits until `f` returns Some, or panics with `what` after `secs`.
pub fn wait_for<T>(secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() > deadline {
            panic!("timed out after {secs}s waiting for: {what}");
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// A private tmux server (`tmux -L NAME -f /dev/null`), killed (by pid) on drop.
pub struct Tmux {
    /// The socket name.
    pub name: String,
    /// The server's pid (noted at the first `new_session`, see `note_server`).
    pub pid: Option<u32>,
    /// The server's socket: tmux 3.3a leaves it behind when it exits, so `kill` removes it.
    socket: Option<PathBuf>,
}

impl Tmux {
    /// A unique name; the server starts with the first `new_session`.
    pub fn new() -> Tmux {
        let name = format!(
            "tt{}x{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        );
        Tmux {
            name,
            pid: None,
            socket: None,
        }
    }

    /// Runs a tmux command on this server; returns stdout, panics on failure.
    pub fn cmd(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.name, "-f", "/dev/null"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Like `cmd` but returns None on failure.
    pub fn try_cmd(&self, args: &[&str]) -> Option<String> {
        let out = Command::new("tmux")
            .args(["-L", &self.name, "-f", "/dev/null"])
            .args(args)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Creates a detached session running `command` (or a shell), 120x40.
    pub fn new_session(&mut self, name: &str, command: Option<&str>) -> String {
        // Panes run a plain bash: the user's login files (pyenv, prompts) make shells start
        // slowly and differently on each machine.
        let mut args = vec![
            "start-server",
            ";",
            "set-option",
            "-g",
            "default-command",
            "exec bash --norc --noprofile",
            ";",
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "120",
            "-y",
            "40",
            "-P",
            "-F",
            "#{pane_id}",
        ];
        if let Some(c) = command {
            args.push(c);
        }
        let pane = self.cmd(&args).trim().to_string();
        if self.pid.is_none() {
            self.note_server();
        }
        pane
    }

    /// Takes note of the running server (its pid and socket), which `kill` ends and removes.
    pub fn note_server(&mut self) {
        // One command for both: the pid, then the path (which may hold spaces).
        let out = self.cmd(&["display-message", "-p", "#{pid} #{socket_path}"]);
        let (pid, path) = out
            .trim_end_matches('\n')
            .split_once(' ')
            .unwrap_or_default();
        self.pid = pid.parse().ok();
        self.socket = Some(PathBuf::from(path));
    }

    /// Creates a window in `session` running `command`; returns its pane id.
    pub fn new_window(&self, session: &str, command: Option<&str>) -> String {
        let mut args = vec!["new-window", "-d", "-t", session, "-P", "-F", "#{pane_id}"];
        if let Some(c) = command {
            args.push(c);
        }
        self.cmd(&args).trim().to_string()
    }

    /// The id of the window holding `pane`.
    pub fn window_of(&self, pane: &str) -> String {
        self.cmd(&["display-message", "-p", "-t", pane, "#{window_id}"])
            .trim()
            .to_string()
    }

    /// A window option's value ("" when unset or unreadable).
    pub fn window_option(&self, window: &str, name: &str) -> String {
        // As a format sees it: the window's own value, else the global one (the idle default).
        self.try_cmd(&[
            "display-message",
            "-p",
            "-t",
            window,
            &format!("#{{{name}}}"),
        ])
        .unwrap_or_default()
        .trim()
        .to_string()
    }

    /// Types text and Enter into a pane.
    pub fn type_line(&self, pane: &str, text: &str) {
        self.cmd(&["send-keys", "-t", pane, "-l", text]);
        self.cmd(&["send-keys", "-t", pane, "Enter"]);
    }

    /// Kills the server and waits for its process to end.
    pub fn kill(&mut self) {
        let _ = self.try_cmd(&["kill-server"]);
        if let Some(pid) = self.pid.take() {
            let _ = Command::new("kill")
                .arg("-9")
                .arg(pid.to_string())
                .stderr(Stdio::null())
                .status();
            wait_for(10, "tmux server exit", || {
                (!Path::new(&format!("/proc/{pid}")).exists()).then_some(())
            });
            if let Some(socket) = self.socket.take() {
                let _ = std::fs::remove_file(socket);
            }
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Private XDG directories for one daemon and its clients.
pub struct Env {
    /// The temp root.
    pub dir: tempfile::TempDir,
    /// Extra variables.
    pub vars: Vec<(String, String)>,
    /// Let the daemon make sounds and notifications (off: `THINKTERM_DISABLE_SOUND=1`).
    pub effects: bool,
}

impl Env {
    /// Fresh directories.
    pub fn new() -> Env {
        let dir = tempfile::tempdir().expect("tempdir");
        for d in ["run", "config", "state"] {
            std::fs::create_dir_all(dir.path().join(d)).expect("mkdir");
        }
        Env {
            dir,
            vars: Vec::new(),
            effects: false,
        }
    }

    /// A path inside the temp root.
    pub fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    /// A command for the sidecar binary with this environment.
    pub fn sidecar(&self, tmux: &Tmux, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_thinkterm-sidecar"));
        c.args(["-L", &tmux.name]).args(args);
        c.env("XDG_RUNTIME_DIR", self.path("run"))
            .env("XDG_CONFIG_HOME", self.path("config"))
            .env("XDG_STATE_HOME", self.path("state"))
            .env_remove("TMUX")
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .env_remove("THINKTERM_DISABLE_SOUND");
        if !self.effects {
            c.env("THINKTERM_DISABLE_SOUND", "1");
        }
        for (k, v) in &self.vars {
            c.env(k, v);
        }
        c
    }

    /// Runs a sidecar client command; returns (exit code, stdout, stderr).
    pub fn run(&self, tmux: &Tmux, args: &[&str]) -> (i32, String, String) {
        let out = self
            .sidecar(tmux, args)
            .stdin(Stdio::null())
            .output()
            .expect("run sidecar");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// `explain PANE --json`, parsed (the daemon must answer).
    pub fn explain(&self, tmux: &Tmux, pane: &str) -> serde_json::Value {
        let (code, out, err) = self.run(tmux, &["explain", pane, "--json"]);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str(&out).expect("explain --json")
    }

    /// `agents --json`, parsed; None while no daemon answers.
    pub fn agents(&self, tmux: &Tmux) -> Option<serde_json::Value> {
        let (code, out, _) = self.run(tmux, &["agents", "--json"]);
        if code != 0 {
            return None;
        }
        serde_json::from_str(&out).ok()
    }

    /// The pane row of `pane` in `agents --json`.
    pub fn pane_row(&self, tmux: &Tmux, pane: &str) -> Option<serde_json::Value> {
        let v = self.agents(tmux)?;
        v["panes"]
            .as_array()?
            .iter()
            .find(|p| p["pane"] == pane)
            .cloned()
    }

    /// Waits up to `secs` for `pane`'s row to have `key` equal to `value`; returns the row.
    pub fn wait_row(
        &self,
        tmux: &Tmux,
        pane: &str,
        key: &str,
        value: &str,
        secs: u64,
    ) -> serde_json::Value {
        let mut last = None;
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let row = self.pane_row(tmux, pane);
            if let Some(r) = row.as_ref().filter(|r| r[key] == value) {
                return r.clone();
            }
            last = row.or(last);
            if Instant::now() > deadline {
                let last = last.map_or("none".to_string(), |r| r.to_string());
                panic!("timed out after {secs}s waiting for: {pane}: {key} = {value} (last row: {last})");
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

/// The sidecar daemon, logging to a file; killed (by pid) on drop.
pub struct Daemon {
    /// The process.
    pub child: Child,
    /// Its log file.
    pub log: PathBuf,
}

impl Daemon {
    /// Starts `thinkterm-sidecar -L NAME run` with the environment, logging at `info`, or at
    /// the level `TT_TEST_LOG` names (`TT_TEST_LOG=debug cargo test ...` to see why a test failed).
    pub fn start(env: &Env, tmux: &Tmux) -> Daemon {
        let log = env.path(&format!(
            "daemon-{}.log",
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        let file = std::fs::File::create(&log).expect("log file");
        let child = env
            .sidecar(tmux, &["run"])
            .env(
                "THINKTERM_LOG",
                std::env::var("TT_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("start daemon");
        Daemon { child, log }
    }

    /// The log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the daemon answers on its socket.
    pub fn wait_ready(&self, env: &Env, tmux: &Tmux) {
        wait_for(15, "daemon answers agents --json", || env.agents(tmux));
    }

    /// Stops it with SIGTERM and waits.
    pub fn stop(&mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // A test that failed with TT_TEST_LOG set shows why, whatever it waited for;
        // TT_TEST_LOG_ALL shows it for a test that passed too (what a passing run went through).
        let all = std::env::var_os("TT_TEST_LOG_ALL").is_some();
        if (std::thread::panicking() || all) && std::env::var_os("TT_TEST_LOG").is_some() {
            eprintln!(
                "the daemon's log ({}):\n{}",
                self.log.display(),
                self.log_text()
            );
        }
    }
}

/// Writes an executable script. The script itself is made by a child process (`install`
/// of a file written beside it), so that no descriptor of this test process ever has it open
/// for writing: a test thread that forks meanwhile would keep that descriptor until its
/// child's exec, and running the script then fails with ETXTBSY ("Text file busy").
pub fn script(path: &Path, body: &str) {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    let mut src = path.as_os_str().to_owned();
    src.push(".src");
    std::fs::write(&src, body).expect("write script");
    let st = Command::new("install")
        .args(["-m", "755"])
        .arg(&src)
        .arg(path)
        .status()
        .expect("install");
    assert!(st.success(), "install {}", path.display());
}

/// A person's tmux client attached in a pseudo-terminal of the given size (`script`), killed
/// on drop. Its stdin reaches the client's terminal (send `ESC [ O` for a focus-out).
pub struct Client(pub Child);

impl Client {
    /// Attaches to `session` and waits until tmux lists the client.
    pub fn attach(tmux: &Tmux, session: &str, cols: u32, rows: u32) -> Client {
        let cmd = format!(
            "stty cols {cols} rows {rows}; exec tmux -L {} attach -t {session}",
            tmux.name
        );
        let child = Command::new("script")
            .args(["-qfc", &cmd, "/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("script");
        wait_for(10, "client attached", || {
            tmux.cmd(&["list-clients", "-F", "#{client_control_mode}"])
                .lines()
                .any(|l| l == "0")
                .then_some(())
        });
        Client(child)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A fake agent named `name` (its process name is what identifies it) that draws each file
/// named on its stdin full screen, like a TUI redraw: the test types a frame's path to change
/// the screen.
pub fn drawing_agent(env: &Env, name: &str) -> PathBuf {
    let path = env.path(&format!("bin/{name}"));
    script(
        &path,
        "#!/bin/bash\nwhile read -r f; do printf '\\033[H\\033[2J'; cat \"$f\"; done\n",
    );
    path
}

/// CPU a process has used (user and system), in clock ticks (0 when it is gone).
pub fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let f: Vec<&str> = stat
        .rsplit_once(") ")
        .map(|r| r.1.split(' ').collect())
        .unwrap_or_default();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    tick(11) + tick(12)
}

/// Resident memory of a process, in KiB (`VmRSS`; 0 when it is gone).
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
