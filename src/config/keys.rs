//! Every config key, written once: its doc, type, default and, for a number, the range it
//! accepts. [`settings!`](super::setting) makes the structs, their defaults, the list of known
//! keys and the setter from this; the file, the environment, `thinkterm-sidecar config` and the
//! "did you mean" hints all read that list.
//!
//! The ranges keep every value one the daemon can use as it is: no timer faster than the read
//! grid can serve, none so slow that the feature looks broken, and no product that overflows.

use serde::{Deserialize, Serialize};

use super::setting::settings;
use std::path::PathBuf;

/// Longest `read_batch_ms`: output read later than this would delay what it reports.
pub const MAX_READ_BATCH_MS: u64 = 200;

/// Highest `flood_pause_kib_s` (1 GiB/s): in bytes per second (× 1024) it stays far below
/// `u64::MAX`, so the daemon's `flood_pause_kib_s * 1024` cannot overflow.
pub const MAX_FLOOD_PAUSE_KIB_S: u64 = 1 << 20;

settings! {
    /// S5.3's four display switches; all on by default. In the config as the `[display]` table
    /// of booleans; the panel's view options hold the same four.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(default)]
    pub struct DisplaySwitches {
        /// What the program does, has finished, or why it stopped (its `msg`).
        description: bool = true;
        /// What a blocked program waits for (permission, question, sign-in).
        waiting_reason: bool = true;
        /// Reported progress.
        progress: bool = true;
        /// Subtasks, as a counting line.
        subtasks: bool = true;
    }
}

/// The four display switches of S5.3 (description, waiting reason, progress, subtasks).
pub type Display = DisplaySwitches;

settings! {
    /// The effective configuration.
    #[derive(Clone, Debug, PartialEq, Serialize)]
    pub struct Config {
        /// S1.2: detection on; when off only native escape sequences drive window marks.
        agent_status_detection: bool = true;
        /// S6.3: sounds on.
        sound: bool = true;
        /// S6.3: desktop notifications on.
        system_notifications: bool = true;
        /// S6.6: always decide "in the background" by "not the current window of any client",
        /// even when tmux knows focus.
        notify_without_focus: bool = false;
        /// File played for `done` (None, or an empty string in the config: the bundled chime).
        sound_done: Option<PathBuf> = None;
        /// File played for `waiting` (None, or an empty string in the config: the bundled chime).
        sound_waiting: Option<PathBuf> = None;
        /// Animate the status-line spinner while something runs (in the tabs a person's client
        /// shows of windows it is not looking at; the window looked at keeps a still glyph).
        spinner: bool = true;
        /// Spinner frame interval in milliseconds (rounded to the read grid). Every frame is
        /// a `set-option`, which makes tmux redraw every attached client whole, over ssh too,
        /// and costs the tmux server about 1 ms of CPU: 2 frames a second by default, at most
        /// 20; one frame in 5 s is still a sign of life.
        spinner_interval_ms: u64 = 500, range 50..=5000;
        /// How long output may settle before a dirty pane is captured, in milliseconds (up to
        /// 2 s: a later capture would show a state long after it began). A look that an agent
        /// pane's verified screen model serves does not wait: the bytes are in the model.
        capture_delay_ms: u64 = 40, range 0..=2000;
        /// Shortest time between two looks at (captures of) a pane that keeps drawing, in
        /// milliseconds, on the grid of half `read_batch_ms` its pipe is read on while it draws
        /// (at least 20: one capture per redraw would cost more than the redraw; at most 5 s).
        capture_interval_ms: u64 = 50, range 20..=5000;
        /// An agent pane read through its pipe keeps a terminal model of its screen, fed by
        /// its bytes: its screen is read from the model, and captured from tmux only to check
        /// the model, at most every this many milliseconds while it draws and once after it
        /// stops; each capture in a row that agrees doubles the wait, up to sixteen times this (a
        /// capture that differs puts the pane back on captures until one confirms the model
        /// again, and the wait back to this). 0: no model, every look at a screen is a capture.
        screen_model_check_ms: u64 = 2000, range 0..=60000;
        /// Seconds between slow re-probes of foreground processes (at most an hour).
        probe_interval_s: u64 = 10, range 1..=3600;
        /// While panes keep writing, read their control client or pipe every this many
        /// milliseconds instead of at every write (an agent's pipe at half this step); capture
        /// rounds and spinner frames land on the same grid, at half this step (0: read every
        /// write at once). 175 by default: an agent's pipe is read every 87.5 ms while it
        /// draws, and a look its screen model serves comes in the same wake-up, so a write
        /// waits at most 87.5 ms to be seen (the bound is 100 ms; each step of the
        /// grid costs the daemon's own CPU a wake-up while agents draw).
        read_batch_ms: u64 = 175, range 0..=MAX_READ_BATCH_MS;
        /// A pane with no agent, report or variable that writes more than this many KiB per
        /// second has its copy of the output paused in the sidecar's control client (0: never;
        /// a pane read through its pipe is never paused).
        flood_pause_kib_s: u64 = 256, range 0..=MAX_FLOOD_PAUSE_KIB_S;
        /// An agent pane whose bytes carry nothing but its screen and title and that writes
        /// more than this many KiB between two captures of its screen has the copy of its
        /// output paused until the next capture, which reads its title too (0: never).
        redraw_pause_kib: u64 = 16, range 0..=65536;
        /// Read each pane's bytes through a pipe of its own (`pipe-pane`, handed to the
        /// sidecar by its relay), raw, instead of as the control clients' escaped copy: far
        /// less work for the tmux server. A pane that already has a pipe (your own
        /// `pipe-pane`) is read through its control client. false: every pane through the
        /// control clients (taken at the next connection to tmux).
        pane_pipes: bool = true;
        /// Seconds an agent's screen may keep changing while no rule of its manifest matches
        /// before the pane is marked unrecognised (the drift alarm, `docs/detection.md`; at
        /// least 1, at most an hour).
        drift_after_s: u64 = 30, range 1..=3600;
        /// Set tmux user options for the status line.
        status_line: bool = true;
        /// Log filter (`warn`, `info`, `debug`, or a tracing filter).
        log: String = "info".into();
        /// The display switches.
        display: Display = Display::default();
        /// This computer's name in the views that list machines (empty: the host name).
        machine_name: String = String::new();
        /// While another sidecar follows this one and takes its notifications (a laptop over
        /// ssh), show them here too.
        notify_when_followed: bool = false;
        /// Notifications written to the terminal of the person's attached tmux client (for a
        /// sidecar on a server with no desktop): `off`, `auto` (from what tmux knows of the
        /// client's terminal), `osc777`, `osc9` or `osc99`.
        terminal_notifications: String = "off".into();
        /// With terminal notifications, also ring the client terminal's bell (many terminals
        /// mark an unfocused window urgent on a bell).
        terminal_bell: bool = false;
        /// Show the notifications that programs in panes send themselves (OSC 9, OSC 777 `notify`,
        /// OSC 99), while their pane is not in front, at most 3 at once and one per 10 s after
        /// that per pane.
        program_notifications: bool = true;
    }
}
