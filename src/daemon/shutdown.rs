//! Stopping: what the sidecar set in tmux (status-line options, pipes, hooks) is taken away,
//! within a time budget whatever tmux does, and the effects still due are flushed.

use std::time::{Duration, Instant};

use super::core::Daemon;

impl Daemon {
    /// Removes what the sidecar set in tmux, within `budget` whatever tmux does: the commands go
    /// out as fast as the control client takes them (a server of a few hundred panes needs more
    /// than its command queue holds) and the answers are awaited together. What failed or was
    /// not sent in time is logged, with how many.
    pub(super) async fn shutdown(&mut self, budget: Duration) {
        let started = Instant::now();
        if let Some(obs) = &self.link.observer {
            let mut lines = self.clear_options_commands();
            lines.extend(obs.uninstall_commands());
            if let Some(conn) = obs.connection() {
                let total = lines.len();
                let mut sent = 0;
                let mut failed = 0;
                let mut first_error = None;
                let all = async {
                    let mut replies = Vec::with_capacity(total);
                    for l in lines {
                        replies.push(conn.start_waiting(l).await);
                        sent += 1;
                    }
                    for r in replies {
                        if let Err(e) = r.await {
                            failed += 1;
                            first_error.get_or_insert(e);
                        }
                    }
                };
                let in_time = tokio::time::timeout(budget, all).await.is_ok();
                if !in_time {
                    tracing::warn!(
                        "tmux did not take the clean-up within {budget:?}: {} of {total} commands \
                         not sent; the status line's options and pipes of the rest are left",
                        total - sent
                    );
                } else if let Some(e) = first_error {
                    tracing::warn!(
                        "{failed} of {total} clean-up commands failed in tmux (the first: {e})"
                    );
                }
            }
        }
        let left = budget.saturating_sub(started.elapsed());
        self.windows.flush(left).await;
        // A `--version` that never answers must not outlive us.
        crate::process::version::kill_running();
    }
}
