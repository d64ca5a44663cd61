//! The running agent's version, where it is cheap to know:
//!
//! 1. the `package.json` of the package the process runs from (`node …/@openai/codex/bin/
//!    codex.js`, `…/@anthropic-ai/claude-code/bin/claude.exe`): a few `stat`s and one small read;
//! 2. a folder named after the version the binary sits in (`~/.local/share/claude/versions/
//!    2.1.332`);
//! 3. `PROGRAM --version`, run with a time limit, only for the agents' own commands, and cached
//!    per program file and modification time, so each installed version runs once.
//!
//! The parsing is pure; [`VersionCache::version_of`] does the reads and may run a program: call
//! it off the daemon's loop (the probe thread does).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::identify::ProcInfo;

/// How long `--version` may take.
pub const VERSION_LIMIT: Duration = Duration::from_secs(3);
/// Most `package.json` bytes read.
const MAX_PACKAGE_JSON: u64 = 256 * 1024;
/// Most folders walked up from a script or binary to its `package.json`.
pub const MAX_UP: usize = 4;
/// Most entries the cache keeps (installed versions of agents: a handful).
const MAX_CACHED: usize = 256;
/// Most bytes of `--version` output read.
const MAX_OUTPUT: u64 = 4096;

/// The first version-looking word (`2.1.332`, `v0.171.0`, `1.0.102.`, `1.2.3-beta.4`) of a
/// program's `--version` output, without its `v` and final dot.
pub fn parse_version_output(out: &str) -> Option<String> {
    out.split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | ',' | ';' | '"'))
        .map(|w| w.trim_start_matches('v').trim_end_matches('.'))
        .find(|w| is_version(w))
        .map(str::to_string)
}

/// `MAJOR.MINOR[.PATCH[.N]][-pre][+build]`, digits first, at most 64 plain characters.
pub fn is_version(w: &str) -> bool {
    let core = w.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    (2..=4).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit()))
        && w.len() <= 64
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+'))
}

/// The `version` of a `package.json`'s text.
pub fn package_json_version(text: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    v["version"]
        .as_str()
        .filter(|s| is_version(s))
        .map(str::to_string)
}

/// A folder above `path` named after a version (`…/versions/2.1.332/claude`), nearest first.
pub fn version_in_path(path: &Path) -> Option<String> {
    path.ancestors()
        .skip(1)
        .take(MAX_UP)
        .filter_map(|p| p.file_name()?.to_str())
        .map(|n| n.trim_start_matches('v'))
        .find(|n| is_version(n))
        .map(str::to_string)
}

/// Interpreters whose first absolute path argument is the program.
const INTERPRETERS: [&str; 8] = [
    "node", "nodejs", "bun", "deno", "python3", "python", "bash", "sh",
];

fn base(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

/// The file the process runs: the script an interpreter was given, else its binary.
pub fn program_file(p: &ProcInfo, exe: Option<&Path>) -> Option<PathBuf> {
    let interp = INTERPRETERS.contains(&base(&p.comm))
        || p.argv
            .first()
            .is_some_and(|a| INTERPRETERS.contains(&base(a)));
    if interp {
        if let Some(script) = p.argv.iter().skip(1).find(|a| a.starts_with('/')) {
            return Some(PathBuf::from(script));
        }
    }
    exe.map(Path::to_path_buf)
}

/// The version next to `file`: the nearest `package.json` with a version (within
/// [`MAX_UP`] folders), else a version-named folder. A link (`node_modules/.bin/codex`) is read
/// beside its target.
pub fn from_files(file: &Path) -> Option<String> {
    let real = std::fs::canonicalize(file).ok();
    let file = real.as_deref().unwrap_or(file);
    for dir in file.ancestors().skip(1).take(MAX_UP) {
        let pj = dir.join("package.json");
        let Ok(meta) = std::fs::metadata(&pj) else {
            continue;
        };
        if meta.is_file() && meta.len() <= MAX_PACKAGE_JSON {
            if let Some(v) = std::fs::read_to_string(&pj)
                .ok()
                .and_then(|t| package_json_version(&t))
            {
                return Some(v);
            }
        }
    }
    version_in_path(file)
}

/// The `--version` runs under way (their pids), so that the daemon can end them when it stops:
/// a program that never answers would otherwise outlive it.
static RUNNING: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// coreutils' `timeout`, which a `--version` run goes through when there is one: it ends the
/// program at the limit even when the daemon was killed and could not (a fake codex that never
/// answered outlived a SIGKILLed test daemon for good). It runs the program in a process group
/// of its own, led by itself.
const TIMEOUT: [&str; 2] = ["/usr/bin/timeout", "/bin/timeout"];
/// What the daemon waits beyond the limit for `timeout` to end the program itself.
const TIMEOUT_GRACE: Duration = Duration::from_secs(1);

/// Ends a run: its process, and the group `timeout` leads.
fn kill_run(pid: u32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

/// Ends every `--version` run under way (the daemon is stopping).
pub fn kill_running() {
    let pids = RUNNING.lock().map(|r| r.clone()).unwrap_or_default();
    for pid in pids {
        kill_run(pid);
    }
}

/// Starts `program args… --version` (through `timeout` when there is one, with `limit`), and
/// returns it with how long to wait for it.
fn spawn_version(
    program: &Path,
    args: &[String],
    limit: Duration,
) -> Option<(std::process::Child, Duration)> {
    use std::process::{Command, Stdio};
    let timeout = TIMEOUT.into_iter().find(|t| Path::new(t).exists());
    let (mut cmd, wait) = match timeout {
        Some(t) => {
            let mut c = Command::new(t);
            c.args(["-s", "KILL", &format!("{:.3}", limit.as_secs_f64())])
                .arg(program);
            (c, limit + TIMEOUT_GRACE)
        }
        None => (Command::new(program), limit),
    };
    let child = cmd
        .args(args)
        .arg("--version")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    Some((child, wait))
}

/// Runs `program args… --version` with a time limit and reads the version it prints. Blocks
/// up to `limit` (and a second more for `timeout`): call it off the daemon's loop.
pub fn run_version(program: &Path, args: &[String], limit: Duration) -> Option<String> {
    let (mut child, wait) = spawn_version(program, args, limit)?;
    let pid = child.id();
    if let Ok(mut r) = RUNNING.lock() {
        r.push(pid);
    }
    let out = wait_version(&mut child, wait);
    if let Ok(mut r) = RUNNING.lock() {
        r.retain(|p| *p != pid);
    }
    out
}

fn wait_version(child: &mut std::process::Child, limit: Duration) -> Option<String> {
    use std::io::Read;
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            _ => {
                kill_run(child.id());
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut out = Vec::new();
    child
        .stdout
        .take()?
        .take(MAX_OUTPUT)
        .read_to_end(&mut out)
        .ok()?;
    parse_version_output(&String::from_utf8_lossy(&out))
}

/// Versions found, per program file and its modification time.
#[derive(Debug, Default)]
pub struct VersionCache {
    known: HashMap<(PathBuf, Option<SystemTime>), Option<String>>,
    /// Commands whose `--version` may be run (the agents' own).
    commands: Vec<String>,
}

impl VersionCache {
    /// A cache that runs `--version` only for these command names.
    pub fn new(commands: Vec<String>) -> Self {
        VersionCache {
            known: HashMap::new(),
            commands,
        }
    }

    /// The version of process `p`: from its package's files, else (for the agents' own
    /// commands) from `--version`; each program file is looked at once per modification.
    /// May block up to [`VERSION_LIMIT`].
    pub fn version_of(&mut self, p: &ProcInfo) -> Option<String> {
        let exe = std::fs::read_link(format!("/proc/{}/exe", p.pid)).ok();
        let file = program_file(p, exe.as_deref())?;
        let mtime = std::fs::metadata(&file).and_then(|m| m.modified()).ok();
        let key = (file, mtime);
        if let Some(v) = self.known.get(&key) {
            return v.clone();
        }
        let found = from_files(&key.0).or_else(|| {
            // The agents' own commands only, by the program file's name (`codex.js` is codex,
            // `claude.exe` is claude): a script named `claude` run by bash is not bash.
            let stem = key.0.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            let ours = self.commands.iter().any(|c| c == stem);
            let exe = exe.as_deref()?;
            // An interpreter is given its script; a binary runs alone.
            let args: Vec<String> = if key.0.as_path() == exe {
                Vec::new()
            } else {
                vec![key.0.display().to_string()]
            };
            ours.then(|| run_version(exe, &args, VERSION_LIMIT))
                .flatten()
        });
        if self.known.len() >= MAX_CACHED {
            self.known.clear();
        }
        self.known.insert(key, found.clone());
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn ok<T, E: std::fmt::Display>(r: Result<T, E>) -> T {
        r.unwrap_or_else(|e| panic!("{e}"))
    }

    /// Makes an executable at `to`, a copy of `from`, through a child process (`install`), so
    /// that no descriptor of this test process ever has it open for writing: a test thread
    /// that forks while another writes a file keeps the descriptor until its child's exec, and
    /// running the file meanwhile fails with ETXTBSY ("Text file busy", seen in CI).
    fn install_exe(from: &Path, to: &Path) {
        let st = ok(std::process::Command::new("install")
            .args(["-m", "755"])
            .arg(from)
            .arg(to)
            .status());
        assert!(st.success(), "install {} {}", from.display(), to.display());
    }

    /// A script at `to` ([`install_exe`] of a file written beside it).
    fn script_exe(to: &Path, body: &str) {
        let src = to.with_extension("src");
        ok(std::fs::write(&src, body));
        install_exe(&src, to);
    }

    #[test]
    fn version_words_are_found_in_what_agents_print() {
        for (out, want) in [
            ("2.1.332 (Claude Code)\n", Some("2.1.332")),
            ("codex-cli 0.171.0\n", Some("0.171.0")),
            (
                "GitHub Copilot CLI 1.0.102.\nRun 'copilot update'",
                Some("1.0.102"),
            ),
            ("v1.18.33", Some("1.18.33")),
            ("kimi, version 1.51.0", Some("1.51.0")),
            ("pi 0.73.1-beta.2", Some("0.73.1-beta.2")),
            ("no version here 1.x", None),
            ("", None),
        ] {
            assert_eq!(parse_version_output(out).as_deref(), want, "{out:?}");
        }
        assert!(!is_version("1"));
        assert!(!is_version("1.2.3.4.5"));
        assert!(!is_version("../2.1"));
    }

    #[test]
    fn package_files_and_version_folders_give_the_version() {
        let dir = ok(tempfile::tempdir());
        let pkg = dir.path().join("node_modules/@openai/codex");
        let bin = pkg.join("bin");
        ok(std::fs::create_dir_all(&bin));
        ok(std::fs::write(
            pkg.join("package.json"),
            r#"{"name":"@openai/codex","version":"0.171.0","bin":{"codex":"bin/codex.js"}}"#,
        ));
        let script = bin.join("codex.js");
        ok(std::fs::write(&script, ""));
        let p = ProcInfo {
            pid: 1,
            comm: "node".into(),
            argv: vec!["node".into(), script.display().to_string()],
        };
        let file = program_file(&p, Some(Path::new("/usr/bin/node")));
        assert_eq!(file.as_deref(), Some(script.as_path()));
        assert_eq!(from_files(&script).as_deref(), Some("0.171.0"));
        // Regression: npm's `.bin/codex` link was read beside itself, so the version was the
        // one of the project that installed Codex (its own package.json, one folder up).
        let dot_bin = dir.path().join("node_modules/.bin");
        ok(std::fs::create_dir_all(&dot_bin));
        ok(std::fs::write(
            dir.path().join("package.json"),
            r#"{"name":"my-project","version":"1.0.0"}"#,
        ));
        ok(std::os::unix::fs::symlink(
            "../@openai/codex/bin/codex.js",
            dot_bin.join("codex"),
        ));
        assert_eq!(
            from_files(&dot_bin.join("codex")).as_deref(),
            Some("0.171.0")
        );
        // A native binary in a version-named folder, no package.json.
        let exe = dir.path().join("share/claude/versions/2.1.332/claude");
        assert_eq!(version_in_path(&exe).as_deref(), Some("2.1.332"));
        let bare = ProcInfo {
            pid: 1,
            comm: "claude".into(),
            argv: vec!["claude".into()],
        };
        assert_eq!(program_file(&bare, Some(&exe)), Some(exe.clone()));
        assert_eq!(from_files(&exe).as_deref(), Some("2.1.332"));
        assert_eq!(package_json_version(r#"{"version": "evil/../x"}"#), None);
    }

    #[test]
    fn version_runs_with_a_time_limit() {
        let dir = ok(tempfile::tempdir());
        let prog = dir.path().join("fakeagent");
        script_exe(&prog, "#!/bin/sh\necho 'fakeagent 3.4.5'\n");
        assert_eq!(
            run_version(&prog, &[], VERSION_LIMIT).as_deref(),
            Some("3.4.5")
        );
        // A program that never answers is stopped at the limit.
        let slow = dir.path().join("slow");
        script_exe(&slow, "#!/bin/sh\nexec sleep 30\n");
        let t = Instant::now();
        assert_eq!(run_version(&slow, &[], Duration::from_millis(200)), None);
        assert!(t.elapsed() < Duration::from_secs(5));
        // One under way when the daemon stops is ended with it.
        let t = Instant::now();
        let run = std::thread::spawn(move || run_version(&slow, &[], Duration::from_secs(60)));
        while RUNNING.lock().map(|r| r.is_empty()).unwrap_or(true) {
            assert!(t.elapsed() < Duration::from_secs(10), "the run registered");
            std::thread::sleep(Duration::from_millis(10));
        }
        kill_running();
        assert_eq!(ok(run.join().map_err(|_| "panicked")), None);
        assert!(t.elapsed() < Duration::from_secs(10));
    }

    /// A daemon killed while a `--version` hangs cannot end it: `timeout` does, at the limit.
    #[test]
    fn a_hanging_version_run_ends_at_the_limit_even_if_nobody_waits() {
        let dir = ok(tempfile::tempdir());
        let pidfile = dir.path().join("pid");
        let slow = dir.path().join("slow");
        script_exe(
            &slow,
            &format!(
                "#!/bin/sh\necho $$ > '{}'\nexec sleep 30\n",
                pidfile.display()
            ),
        );
        let (child, _) = spawn_version(&slow, &[], Duration::from_millis(300)).expect("spawned");
        // Abandoned, as by a daemon that was SIGKILLed: never waited for, never killed.
        std::mem::forget(child);
        let t = Instant::now();
        let pid = loop {
            if let Some(p) = std::fs::read_to_string(&pidfile)
                .ok()
                .and_then(|s| s.trim().parse::<u32>().ok())
            {
                break p;
            }
            assert!(t.elapsed() < Duration::from_secs(10), "the program started");
            std::thread::sleep(Duration::from_millis(10));
        };
        // Gone (or a zombie of `timeout`, which reaps it) well within a few seconds.
        let alive = |pid: u32| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| s.rsplit_once(')').map(|(_, r)| r.trim_start().to_string()))
                .is_some_and(|r| !r.starts_with('Z'))
        };
        while alive(pid) {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "the hanging --version outlived its limit"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn version_runs_only_for_agent_commands_and_is_cached_per_file() {
        // A copy of `sleep` named like an agent command, running: it answers `--version`
        // ("sleep (GNU coreutils) 9.1").
        let dir = ok(tempfile::tempdir());
        let agent = dir.path().join("fakeagent");
        install_exe(Path::new("/bin/sleep"), &agent);
        let mut child = ok(std::process::Command::new(&agent).arg("30").spawn());
        let p = ProcInfo {
            pid: child.id(),
            comm: "fakeagent".into(),
            argv: vec![agent.display().to_string(), "30".into()],
        };
        let mut others = VersionCache::new(vec!["codex".into()]);
        assert_eq!(
            others.version_of(&p),
            None,
            "not an agent command: nothing runs"
        );
        let mut cache = VersionCache::new(vec!["fakeagent".into()]);
        let first = cache.version_of(&p);
        assert!(first.as_deref().is_some_and(is_version), "{first:?}");
        // Cached per file and mtime: the copy, no longer executable, still answers.
        ok(std::fs::set_permissions(
            &agent,
            std::fs::Permissions::from_mode(0o644),
        ));
        assert_eq!(cache.version_of(&p), first);
        let _ = child.kill();
        let _ = child.wait();
    }
}
