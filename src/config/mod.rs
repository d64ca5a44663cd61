//! Configuration: defaults in code, then `$XDG_CONFIG_HOME/thinkterm/config.toml` (or
//! `--config`), then the environment (`THINKTERM_<KEY>` for every key, and
//! `THINKTERM_DISABLE_SOUND`). Unknown keys, bad values and numbers out of their range are
//! warned about as `file:line: ...` (or `THINKTERM_<KEY>: ...`) and never fatal: the key keeps
//! its previous value and the rest still applies.
//!
//! - [`keys`]: every key, written once (doc, type, default, range);
//! - [`setting`]: the macro and trait that turn that list into struct, defaults and setter;
//! - [`file`]: the TOML file into dotted keys with their lines.

pub mod file;
pub mod keys;
pub mod setting;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::ipc::schema::MachineSpec;

pub use keys::{Config, Display, DisplaySwitches, MAX_FLOOD_PAUSE_KIB_S, MAX_READ_BATCH_MS};
pub use setting::Key;
use setting::{Input, SetError, Setting};

/// S6.4: set to anything (even empty) in the sidecar's environment, this silences every sound
/// and stops desktop notifications, whatever the config says. Read only here.
pub const DISABLE_SOUND_ENV: &str = "THINKTERM_DISABLE_SOUND";

/// Every known key (dotted inside tables), in the order of [`Config`]'s fields.
pub fn keys() -> Vec<Key> {
    let mut out = Vec::new();
    Config::keys("", &mut out);
    out
}

/// The environment variable of `key`: `THINKTERM_` and the key in capitals, dots as `_`.
pub fn env_var(key: &str) -> String {
    format!("THINKTERM_{}", key.replace('.', "_").to_uppercase())
}

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
    /// [`DISABLE_SOUND_ENV`] was set: no sound, no notifications (S6.4).
    pub sound_disabled_by_env: bool,
    /// The `[[machines]]` the file lists (each checked: a name, unique, and a way to reach it).
    pub machines: Vec<MachineSpec>,
}

impl Loaded {
    /// What the effects may do: the config's switches with S6.4 applied.
    pub fn enabled(&self) -> crate::effects::Enabled {
        crate::effects::Enabled::resolve(
            self.sound_disabled_by_env,
            self.config.sound,
            self.config.system_notifications,
        )
    }

    /// Sounds actually play (config and S6.4).
    pub fn sound_enabled(&self) -> bool {
        self.enabled().sound
    }

    /// Notifications actually go out (config and S6.4).
    pub fn notifications_enabled(&self) -> bool {
        self.enabled().notifications
    }

    /// `key = value  # source` lines, for `thinkterm-sidecar config`.
    pub fn describe(&self) -> String {
        let mut out = format!("# config file: {}\n", self.path.display());
        let json = serde_json::to_value(&self.config).unwrap_or_default();
        for key in keys() {
            let mut v = &json;
            for part in key.name.split('.') {
                v = &v[part];
            }
            let shown = match v {
                serde_json::Value::Null => "(unset)".to_string(),
                other => other.to_string(),
            };
            let src = self
                .sources
                .get(&key.name)
                .cloned()
                .unwrap_or(Source::Default);
            out.push_str(&format!("{} = {shown}  # {src}\n", key.name));
        }
        if self.sound_disabled_by_env {
            out.push_str(&format!(
                "# {DISABLE_SOUND_ENV} is set: no sounds and no notifications\n"
            ));
        }
        out
    }
}

/// This process's environment. Variables whose name is not UTF-8 cannot be ours and are left
/// out; a value that is not UTF-8 is read lossily (it then fails its key's check with a
/// warning, and [`DISABLE_SOUND_ENV`] counts as set whatever its value).
fn process_env() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.to_string_lossy().into_owned())))
        .collect()
}

/// S6.4's rule, in one place: the variable is present, with any value.
fn sound_disabled_in(env: &[(String, String)]) -> bool {
    env.iter().any(|(k, _)| k == DISABLE_SOUND_ENV)
}

/// Whether [`DISABLE_SOUND_ENV`] is set in this process's environment.
pub fn sound_disabled_by_env() -> bool {
    sound_disabled_in(&process_env())
}

/// Loads from `path` (None: the XDG default) and the process environment.
pub fn load(path: Option<&Path>) -> Loaded {
    load_with(
        path.map(Path::to_path_buf)
            .unwrap_or_else(crate::paths::config_file),
        &process_env(),
    )
}

/// Loads from a file and an explicit environment (for tests).
pub fn load_with(path: PathBuf, env: &[(String, String)]) -> Loaded {
    match std::fs::read_to_string(&path) {
        Ok(text) => load_text(path, Some(&text), env),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => load_text(path, None, env),
        Err(e) => {
            let warning = format!("{}: cannot read: {e}", path.display());
            let mut l = load_text(path, None, env);
            l.warnings.insert(0, warning);
            l
        }
    }
}

/// Loads from the text of the file at `path` (None: there is no file) and an explicit
/// environment. Pure: what the fuzz target `config` feeds.
pub fn load_text(path: PathBuf, text: Option<&str>, env: &[(String, String)]) -> Loaded {
    let mut l = Loaded {
        config: Config::default(),
        sources: BTreeMap::new(),
        warnings: Vec::new(),
        path,
        sound_disabled_by_env: sound_disabled_in(env),
        machines: Vec::new(),
    };
    if let Some(text) = text {
        apply_file(&mut l, text);
    }
    for key in keys() {
        let var = env_var(&key.name);
        if let Some((_, v)) = env.iter().find(|(k, _)| *k == var) {
            match l.config.set(&key.name, Input::Env(v)) {
                Ok(()) => {
                    l.sources.insert(key.name, Source::Env(var));
                }
                Err(e) => l.warnings.push(warning(&var, &key.name, &e)),
            }
        }
    }
    if crate::effects::terminal::Setting::parse(&l.config.terminal_notifications).is_none() {
        let at = l
            .sources
            .get("terminal_notifications")
            .map(ToString::to_string)
            .unwrap_or_default();
        l.warnings.push(format!(
            "{at}: terminal_notifications = {:?} is not one of {}; off",
            l.config.terminal_notifications,
            crate::effects::terminal::Setting::WORDS.join(", ")
        ));
        l.config.terminal_notifications = "off".into();
    }
    l
}

/// `at: key: why`, or `at: key = value is out of range (min..=max)`.
fn warning(at: &str, key: &str, e: &SetError) -> String {
    match e {
        SetError::OutOfRange { .. } => format!("{at}: {key} = {e}"),
        _ => format!("{at}: {key}: {e}"),
    }
}

/// Reads the `[[machines]]` tables: each must parse, have a name no other has, and a way to
/// reach it (`ssh` or `command`); a bad one is left out with `file:line: why`.
fn apply_machines(l: &mut Loaded, text: &str) {
    let file = l.path.display().to_string();
    for (line, value) in file::machines(text) {
        let at = format!("{file}:{line}");
        let spec: MachineSpec = match value.try_into() {
            Ok(s) => s,
            Err(e) => {
                l.warnings
                    .push(format!("{at}: [[machines]]: {}", e.message()));
                continue;
            }
        };
        if let Err(why) = crate::remote::spec::check(&spec, &l.machines) {
            l.warnings.push(format!("{at}: [[machines]]: {why}"));
            continue;
        }
        l.machines.push(spec);
    }
}

fn apply_file(l: &mut Loaded, text: &str) {
    apply_machines(l, text);
    let file = l.path.display().to_string();
    let entries = match file::entries(text) {
        Ok(e) => e,
        Err((line, message)) => {
            l.warnings.push(format!("{file}:{line}: {message}"));
            return;
        }
    };
    let known = keys();
    for e in entries {
        let at = format!("{file}:{}", e.line);
        if !known.iter().any(|k| k.name == e.key) {
            let hint = file::suggest(&e.key, known.iter().map(|k| k.name.as_str()))
                .map(|s| format!(" (did you mean \"{s}\"?)"))
                .unwrap_or_default();
            l.warnings
                .push(format!("{at}: unknown key \"{}\"{hint}", e.key));
            continue;
        }
        match l.config.set(&e.key, Input::Toml(&e.value)) {
            Ok(()) => {
                l.sources.insert(e.key, Source::File(at));
            }
            Err(err) => l.warnings.push(warning(&at, &e.key, &err)),
        }
    }
}

#[cfg(test)]
mod tests;
