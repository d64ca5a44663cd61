//! The install tests' rig: a private tmux server whose environment (XDG directories, PATH,
//! HOME) reaches the plugin's jobs, a copy of the plugin outside the checkout (so its
//! `target/release` is not found), the daemons of a server found in /proc, and their cleanup
//! by pid.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::{wait_for, Env, Tmux};

/// Tools the plugin and its jobs use, linked into a directory that is the whole PATH of a
/// "bare" server: no thinkterm-sidecar and no cargo on it, whatever the machine has.
const TOOLS: [&str; 14] = [
    "tmux", "bash", "sh", "env", "mkdir", "rmdir", "mktemp", "rm", "ln", "dirname", "basename",
    "cat", "sleep", "tail",
];

/// The plugin, copied into the test's directory.
pub fn plugin_copy(env: &Env) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("thinkterm.tmux");
    let dst = env.path("plugin/thinkterm.tmux");
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    std::fs::copy(&src, &dst).unwrap();
    std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o755)).unwrap();
    dst
}

/// A private server started with the test's environment.
pub struct Server {
    /// `#{socket_path}`.
    pub socket: String,
    /// Its global PATH.
    pub path: String,
}

impl Server {
    /// The server, with the sidecar binary on PATH (`ENV/bin/thinkterm-sidecar`).
    pub fn start(tmux: &mut Tmux, env: &Env, session: &str, command: Option<&str>) -> Server {
        let bin = env.path("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let link = bin.join("thinkterm-sidecar");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_thinkterm-sidecar"), &link).unwrap();
        let path = format!("{}:{}", bin.display(), tools(env).display());
        Server::spawn(tmux, env, session, command, path)
    }

    /// The server with nothing but [`TOOLS`] on PATH.
    pub fn start_bare(tmux: &mut Tmux, env: &Env, session: &str) -> Server {
        let path = tools(env).display().to_string();
        Server::spawn(tmux, env, session, None, path)
    }

    fn spawn(tmux: &mut Tmux, env: &Env, session: &str, cmd: Option<&str>, path: String) -> Server {
        std::fs::create_dir_all(env.path("home")).unwrap();
        let mut args = vec![
            "-L",
            &tmux.name,
            "-f",
            "/dev/null",
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
            session,
            "-x",
            "120",
            "-y",
            "40",
        ];
        args.extend(cmd);
        let st = Command::new("tmux")
            .args(&args)
            .env_clear()
            .env("PATH", &path)
            .env("HOME", env.path("home"))
            .env("TERM", "xterm-256color")
            .env("XDG_RUNTIME_DIR", env.path("run"))
            .env("XDG_CONFIG_HOME", env.path("config"))
            .env("XDG_STATE_HOME", env.path("state"))
            .env("THINKTERM_DISABLE_SOUND", "1")
            .stdin(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success(), "tmux new-session");
        tmux.note_server();
        let socket = tmux
            .cmd(&["display-message", "-p", "#{socket_path}"])
            .trim()
            .to_string();
        Server { socket, path }
    }

    /// Puts `dir` first on the server's PATH (what later jobs get).
    pub fn add_path(&mut self, tmux: &Tmux, dir: &Path) {
        self.path = format!("{}:{}", dir.display(), self.path);
        tmux.cmd(&["set-environment", "-g", "PATH", &self.path]);
    }

    /// Waits until no background job of `plugin` (`--start`, `--build`) runs.
    pub fn wait_plugin_jobs(&self, plugin: &Path) {
        let p = plugin.display().to_string();
        wait_for(15, "the plugin's background jobs end", || {
            let busy = processes().any(|(_, argv)| {
                argv.iter().any(|a| a.contains(&p))
                    && argv.iter().any(|a| a == "--start" || a == "--build")
            });
            (!busy).then_some(())
        });
    }
}

fn tools(env: &Env) -> PathBuf {
    let dir = env.path("tools");
    if dir.exists() {
        return dir;
    }
    std::fs::create_dir_all(&dir).unwrap();
    for t in TOOLS {
        let found = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(t))
            .find(|p| p.exists())
            .unwrap_or_else(|| panic!("{t} not installed"));
        std::os::unix::fs::symlink(found, dir.join(t)).unwrap();
    }
    dir
}

/// Every live (not zombie) process with its argv.
fn processes() -> impl Iterator<Item = (u32, Vec<String>)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| !gone(*pid))
        .filter_map(|pid| {
            let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let argv = raw
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            Some((pid, argv))
        })
}

/// The background daemons (`run --detached-child`) serving the server at `socket`.
pub fn daemons_of(socket: &str) -> Vec<u32> {
    let mut v: Vec<u32> = processes()
        .filter(|(_, argv)| {
            argv.iter().any(|a| a == "--detached-child")
                && argv.windows(2).any(|w| w[0] == "-S" && w[1] == socket)
        })
        .map(|(pid, _)| pid)
        .collect();
    v.sort();
    v
}

/// Whether `pid` has exited (no process, or a zombie nobody reaped yet).
pub fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

/// Kills (SIGKILL, by pid) the processes it holds that still run, on drop.
#[derive(Default)]
pub struct Killer(pub Vec<u32>);

impl Drop for Killer {
    fn drop(&mut self) {
        for pid in &self.0 {
            if !gone(*pid) {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
        }
    }
}

/// Runs `bash -c SCRIPT`; its stdout, or a panic with its stderr.
pub fn sh(script: &str) -> String {
    let out = Command::new("bash").args(["-c", script]).output().unwrap();
    assert!(
        out.status.success(),
        "{script}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
