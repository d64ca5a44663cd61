//! `thinkterm-sidecar doctor`: checks, for the tmux server it is pointed at, everything a first
//! run depends on (tmux and its version, the server, the daemon and which one, `focus-events`,
//! the window formats showing the icon, the session bus and the notification server, the sound
//! player, the rules loaded and rejected, the config, the socket's permissions, connected
//! machines, terminal notifications) and says how to fix each miss. Text or `--json`; exit 1
//! when something is wrong.
//!
//! [`facts`] gathers (tmux commands, the daemon's `Request::Doctor` answer, the bus), [`checks`]
//! judges, [`report`] prints.

pub mod bus;
pub mod checks;
pub mod facts;
pub mod report;

use crate::cli::Cli;
pub use report::{Check, Report, Status};

/// Gathers, judges and returns the report.
pub async fn examine(cli: &Cli) -> Report {
    let f = facts::gather(cli).await;
    Report {
        server: f.server.display().to_string(),
        checks: checks::all(&f),
    }
}

/// Prints the report; returns the exit code (1 when a check failed).
pub async fn run(cli: &Cli, json: bool) -> i32 {
    let report = examine(cli).await;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report.to_json()).unwrap_or_default()
        );
    } else {
        print!("{}", report.render());
    }
    report.exit_code()
}
