//! Configuration: defaults in code, then `$XDG_CONFIG_HOME/thinkterm/config.toml` (or
//! `--config`), then the environment (`THINKTERM_<KEY>` for every key, and
//! `THINKTERM_DISABLE_SOUND`). Unknown keys and bad values are warned about as
//! `file:line: ...` and never fatal: the rest of the file still applies.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// The four display switches of S5.3 (description, waiting reason, progress, subtasks).
pub type Display = crate::effects::notification::DisplaySwitches;

/// The effective configuration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Config {
    /// S1.2: detection on; when off only native escape sequences drive window marks.
    pub agent_status_detection: bool,
    /// S6.3: sounds on.
    pub sound: bool,
    /// S6.3: desktop notifications on.
    pub system_notifications: bool,
    /// S6.6: always decide "in the background" by "not the current window of any client",
    /// even when tmux knows focus.
    pub notify_without_focus: bool,
    /// File played for `done` (None: the bundled chime).
    pub sound_done: Option<PathBuf>,
    /// File played for `waiting` (None: the bundled chime).
    pub sound_waiting: Option<PathBuf>,
    /// Animate the status-line spinner while something runs.
    pub spinner: bool,
    /// Spinner frame interval in milliseconds (rounded to the read grid). Every frame redraws
    /// the status line of every attached client, over ssh too: 5 frames a second by default.
    pub spinner_interval_ms: u64,
    /// How long output may settle before a dirty pane is captured, in milliseconds.
    pub capture_delay_ms: u64,
    /// Shortest time between two captures of a pane that keeps drawing, in milliseconds.
    pub capture_interval_ms: u64,
    /// Seconds between slow re-probes of foreground processes.
    pub probe_interval_s: u64,
    /// While panes keep writing, read their control client every this many milliseconds instead
    /// of at every write; capture rounds and spinner frames land on the same grid, at half this
    /// step (0: read every write at once).
    pub read_batch_ms: u64,
    /// A pane with no agent, report or variable that writes more than this many KiB per second
    /// has its copy of the output paused in the sidecar's control client (0: never).
    pub flood_pause_kib_s: u64,
    /// Set tmux user options for the status line.
    pub status_line: bool,
    /// Log filter (`warn`, `info`, `debug`, or a tracing filter).
    pub log: String,
    /// The display switches.
    pub display: Display,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            agent_status_detection: true,
            sound: true,
            system_notifications: true,
            notify_without_focus: false,
            sound_done: None,
            sound_waiting: None,
            spinner: true,
            spinner_interval_ms: 200,
            capture_delay_ms: 40,
            capture_interval_ms: 100,
            probe_interval_s: 10,
            read_batch_ms: 100,
            flood_pause_kib_s: 256,
            status_line: true,
            log: "info".into(),
            display: Display::default(),
        }
    }
}

/// Longest `read_batch_ms`: output read later than this would delay what it reports.
pub const MAX_READ_BATCH_MS: u64 = 200;

/// Every key, dotted for tables.
pub const KEYS: &[&str] = &[
    "agent_status_detection",
    "sound",
    "system_notifications",
    "notify_without_focus",
    "sound_done",
    "sound_waiting",
    "spinner",
    "spinner_interval_ms",
    "capture_delay_ms",
    "capture_interval_ms",
    "probe_interval_s",
    "read_batch_ms",
    "flood_pause_kib_s",
    "status_line",
    "log",
    "display.description",
    "display.waiting_reason",
    "display.progress",
    "display.subtasks",
];

/// Where a value came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Source {
    /// The built-in default.
    Default,
    /// The config file, at a line.
    File(String),
    /// An environment variable.
    Env(String),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File(at) => f.write_str(at),
            Source::Env(v) => write!(f, "environment {v}"),
        }
    }
}

/// A loaded configuration with its provenance and the warnings met on the way.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The values.
    pub config: Config,
    /// Key → where its value came from (keys absent here are defaults).
    pub sources: BTreeMap<String, Source>,
    /// `file:line: ...` warnings.
    pub warnings: Vec<String>,
    /// The file that was read (or would have been).
    pub path: PathBuf,
    /// `THINKTERM_DISABLE_SOUND` was set: no sound, no notifications (S6.4).
    pub sound_disabled_by_env: bool,
}

impl Loaded {
    /// Sounds actually play (config and S6.4).
    pub fn sound_enabled(&self) -> bool {
        self.config.sound && !self.sound_disabled_by_env
    }

    /// Notifications actually go out (config and S6.4).
    pub fn notifications_enabled(&self) -> bool {
        self.config.system_notifications && !self.sound_disabled_by_env
    }

    /// `key = value  # source` lines, for `thinkterm-sidecar config`.
    pub fn describe(&self) -> String {
        let mut out = format!("# config file: {}\n", self.path.display());
        let json = serde_json::to_value(&self.config).unwrap_or_default();
        for key in KEYS {
            let mut v = &json;
            for part in key.split('.') {
                v = &v[part];
            }
            let shown = match v {
                serde_json::Value::Null => "(unset)".to_string(),
                other => other.to_string(),
            };
            let src = self.sources.get(*key).cloned().unwrap_or(Source::Default);
            out.push_str(&format!("{key} = {shown}  # {src}\n"));
        }
        if self.sound_disabled_by_env {
            out.push_str("# THINKTERM_DISABLE_SOUND is set: no sounds and no notifications\n");
        }
        out
    }
}

/// Loads from `path` (None: the XDG default) and the process environment.
pub fn load(path: Option<&Path>) -> Loaded {
    let env: Vec<(String, String)> = std::env::vars().collect();
    load_with(
        path.map(Path::to_path_buf)
            .unwrap_or_else(crate::paths::config_file),
        &env,
    )
}

/// Loads from a file and an explicit environment (for tests).
pub fn load_with(path: PathBuf, env: &[(String, String)]) -> Loaded {
    let mut l = Loaded {
        config: Config::default(),
        sources: BTreeMap::new(),
        warnings: Vec::new(),
        path: path.clone(),
        sound_disabled_by_env: false,
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => apply_file(&mut l, &text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => l
            .warnings
            .push(format!("{}: cannot read: {e}", path.display())),
    }
    for key in KEYS {
        let var = format!("THINKTERM_{}", key.replace('.', "_").to_uppercase());
        if let Some((_, v)) = env.iter().find(|(k, _)| *k == var) {
            // `0` and `1` read as false and true, and as numbers for the numeric keys
            // (`THINKTERM_FLOOD_PAUSE_KIB_S=0` turns flood control off).
            let set_as_number = |c: &mut Config, why: String| match v.trim().parse::<i64>() {
                Ok(n @ 0..=1) => set(c, key, toml::Value::Integer(n)),
                _ => Err(why),
            };
            match set(&mut l.config, key, parse_env_value(v))
                .or_else(|why| set_as_number(&mut l.config, why))
            {
                Ok(()) => {
                    l.sources.insert(key.to_string(), Source::Env(var));
                }
                Err(why) => l.warnings.push(format!("{var}: {why}")),
            }
        }
    }
    l.sound_disabled_by_env = env.iter().any(|(k, _)| k == "THINKTERM_DISABLE_SOUND");
    l
}

fn parse_env_value(v: &str) -> toml::Value {
    match v {
        "true" | "1" | "yes" | "on" => toml::Value::Boolean(true),
        "false" | "0" | "no" | "off" => toml::Value::Boolean(false),
        _ => v
            .parse::<i64>()
            .map(toml::Value::Integer)
            .unwrap_or_else(|_| toml::Value::String(v.into())),
    }
}

fn apply_file(l: &mut Loaded, text: &str) {
    let file = l.path.display().to_string();
    let table: toml::Table = match text.parse() {
        Ok(t) => t,
        Err(e) => {
            let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(1);
            l.warnings.push(format!("{file}:{line}: {}", e.message()));
            return;
        }
    };
    let mut flat = Vec::new();
    for (k, v) in table {
        match v {
            toml::Value::Table(inner) => {
                for (k2, v2) in inner {
                    flat.push((format!("{k}.{k2}"), k2, v2));
                }
            }
            other => flat.push((k.clone(), k, other)),
        }
    }
    // Report in file order.
    flat.sort_by_key(|(_, leaf, _)| find_key_line(text, leaf));
    for (dotted, leaf, value) in flat {
        let line = find_key_line(text, &leaf);
        let at = format!("{file}:{line}");
        if !KEYS.contains(&dotted.as_str()) {
            let hint = suggest(&dotted)
                .map(|s| format!(" (did you mean \"{s}\"?)"))
                .unwrap_or_default();
            l.warnings
                .push(format!("{at}: unknown key \"{dotted}\"{hint}"));
            continue;
        }
        match set(&mut l.config, &dotted, value) {
            Ok(()) => {
                l.sources.insert(dotted, Source::File(at));
            }
            Err(why) => l.warnings.push(format!("{at}: {dotted}: {why}")),
        }
    }
}

fn set(c: &mut Config, key: &str, v: toml::Value) -> Result<(), String> {
    fn b(v: &toml::Value) -> Result<bool, String> {
        v.as_bool()
            .ok_or_else(|| format!("expected true or false, found {v}"))
    }
    fn n(v: &toml::Value) -> Result<u64, String> {
        v.as_integer()
            .and_then(|i| u64::try_from(i).ok())
            .ok_or_else(|| format!("expected a positive integer, found {v}"))
    }
    fn s(v: &toml::Value) -> Result<String, String> {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("expected a string, found {v}"))
    }
    match key {
        "agent_status_detection" => c.agent_status_detection = b(&v)?,
        "sound" => c.sound = b(&v)?,
        "system_notifications" => c.system_notifications = b(&v)?,
        "notify_without_focus" => c.notify_without_focus = b(&v)?,
        "sound_done" => c.sound_done = Some(PathBuf::from(s(&v)?)),
        "sound_waiting" => c.sound_waiting = Some(PathBuf::from(s(&v)?)),
        "spinner" => c.spinner = b(&v)?,
        "spinner_interval_ms" => c.spinner_interval_ms = n(&v)?.max(30),
        "capture_delay_ms" => c.capture_delay_ms = n(&v)?,
        "capture_interval_ms" => c.capture_interval_ms = n(&v)?,
        "probe_interval_s" => c.probe_interval_s = n(&v)?.max(1),
        "read_batch_ms" => c.read_batch_ms = n(&v)?.min(MAX_READ_BATCH_MS),
        "flood_pause_kib_s" => c.flood_pause_kib_s = n(&v)?,
        "status_line" => c.status_line = b(&v)?,
        "log" => c.log = s(&v)?,
        "display.description" => c.display.description = b(&v)?,
        "display.waiting_reason" => c.display.waiting_reason = b(&v)?,
        "display.progress" => c.display.progress = b(&v)?,
        "display.subtasks" => c.display.subtasks = b(&v)?,
        _ => return Err("unknown key".into()),
    }
    Ok(())
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|&b| b == b'\n')
        .count()
        + 1
}

fn find_key_line(text: &str, leaf: &str) -> usize {
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix(leaf) {
            if rest.trim_start().starts_with('=') {
                return i + 1;
            }
        }
    }
    1
}

/// The closest known key, when close enough to be a typo.
fn suggest(key: &str) -> Option<&'static str> {
    KEYS.iter()
        .map(|k| (levenshtein(k, key), *k))
        .filter(|(d, k)| *d <= 3.max(k.len() / 4))
        .min()
        .map(|(_, k)| k)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur.push((prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str, env: &[(&str, &str)]) -> Loaded {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).expect("write");
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        load_with(path, &env)
    }

    #[test]
    fn unknown_keys_warn_with_line_and_suggestion_and_the_rest_applies() {
        let l = load_text("sound = false\nsystem_notificatons = false\n[display]\nprogres = false\nsubtasks = false\n", &[]);
        assert!(!l.config.sound);
        assert!(l.config.system_notifications, "misspelt key must not apply");
        assert!(!l.config.display.subtasks);
        assert_eq!(l.warnings.len(), 2, "{:?}", l.warnings);
        assert!(
            l.warnings[0].ends_with(
                ":2: unknown key \"system_notificatons\" (did you mean \"system_notifications\"?)"
            ),
            "{}",
            l.warnings[0]
        );
        assert!(
            l.warnings[1].contains(
                ":4: unknown key \"display.progres\" (did you mean \"display.progress\"?)"
            ),
            "{}",
            l.warnings[1]
        );
        assert!(matches!(l.sources.get("sound"), Some(Source::File(at)) if at.ends_with(":1")));
    }

    #[test]
    fn bad_values_and_bad_syntax_warn_and_keep_defaults() {
        let l = load_text("sound = \"loud\"\nspinner = false\n", &[]);
        assert!(l.config.sound);
        assert!(!l.config.spinner);
        assert!(
            l.warnings[0].contains(":1: sound: expected true or false"),
            "{:?}",
            l.warnings
        );
        let l = load_text("sound = = false\n", &[]);
        assert_eq!(l.config, Config::default());
        assert!(l.warnings[0].contains(":1:"), "{:?}", l.warnings);
    }

    #[test]
    fn environment_overrides_file_and_disable_sound_stops_both() {
        let l = load_text(
            "sound = true\n",
            &[("THINKTERM_SOUND", "0"), ("THINKTERM_DISABLE_SOUND", "")],
        );
        assert!(!l.config.sound);
        assert_eq!(
            l.sources.get("sound"),
            Some(&Source::Env("THINKTERM_SOUND".into()))
        );
        assert!(!l.sound_enabled() && !l.notifications_enabled());
        let d = l.describe();
        assert!(
            d.contains("sound = false  # environment THINKTERM_SOUND"),
            "{d}"
        );
        assert!(d.contains("spinner = true  # default"), "{d}");
    }

    /// Regression: `0` and `1` in the environment were read only as booleans, so a numeric key
    /// set to 0 from the environment (`THINKTERM_FLOOD_PAUSE_KIB_S=0`, documented as turning
    /// flood control off) was rejected and kept its default.
    #[test]
    fn zero_and_one_from_the_environment_set_numbers_too() {
        let l = load_text(
            "",
            &[
                ("THINKTERM_FLOOD_PAUSE_KIB_S", "0"),
                ("THINKTERM_READ_BATCH_MS", "0"),
                ("THINKTERM_CAPTURE_DELAY_MS", "1"),
                ("THINKTERM_SPINNER", "0"),
            ],
        );
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        assert_eq!(l.config.flood_pause_kib_s, 0);
        assert_eq!(l.config.read_batch_ms, 0);
        assert_eq!(l.config.capture_delay_ms, 1);
        assert!(!l.config.spinner);
    }
}
