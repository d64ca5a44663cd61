//! Where the sidecar keeps things (XDG base directories), in one place.

use std::path::PathBuf;

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

fn xdg(var: &str, fallback: &str) -> PathBuf {
    match std::env::var_os(var) {
        Some(v) if !v.is_empty() && PathBuf::from(&v).is_absolute() => PathBuf::from(v),
        _ => home().join(fallback),
    }
}

/// `$XDG_CONFIG_HOME/thinkterm`.
pub fn config_dir() -> PathBuf {
    xdg("XDG_CONFIG_HOME", ".config").join("thinkterm")
}

/// `$XDG_CONFIG_HOME/thinkterm/config.toml`.
pub fn config_file() -> PathBuf {
    config_dir().join("config.toml")
}

/// `$XDG_CONFIG_HOME/thinkterm/agent-detection`: rule overrides.
pub fn rules_dir() -> PathBuf {
    config_dir().join("agent-detection")
}

/// `$XDG_STATE_HOME/thinkterm`.
pub fn state_dir() -> PathBuf {
    xdg("XDG_STATE_HOME", ".local/state").join("thinkterm")
}

/// `$XDG_RUNTIME_DIR/thinkterm` (falls back to `/tmp/thinkterm-UID` like tmux does for its own).
pub fn runtime_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(v) if !v.is_empty() => PathBuf::from(v).join("thinkterm"),
        _ => PathBuf::from(format!("/tmp/thinkterm-{}", uid())),
    }
}

/// The real user id of this process.
pub fn uid() -> u32 {
    // SAFETY-free: read from procfs rather than calling libc.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|u| u.parse().ok()))
        })
        .unwrap_or(0)
}
