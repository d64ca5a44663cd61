//! `focus` and `notify`: asking the daemon to act on a pane.

use crate::ipc::schema::{Reply, Request};

use super::{connect, Cli};

/// `focus`.
pub async fn focus(
    cli: &Cli,
    pane: crate::ids::PaneTarget,
    client: Option<String>,
) -> anyhow::Result<()> {
    let mut c = connect(cli).await?;
    let focus = Request::Focus {
        pane: pane.pane,
        client,
        machine: pane.machine,
    };
    match c.request(&focus).await? {
        Reply::Done { message } => {
            println!("{message}");
            Ok(())
        }
        Reply::Error { message } => anyhow::bail!(message),
        other => anyhow::bail!("unexpected reply: {other:?}"),
    }
}

/// `notify`: a notification about a pane.
pub async fn notify(
    cli: &Cli,
    text: &[String],
    title: Option<String>,
    pane: Option<crate::ids::PaneTarget>,
) -> anyhow::Result<()> {
    let pane = match pane {
        Some(p) => p,
        None => std::env::var("TMUX_PANE")
            .ok()
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("name the pane with --pane %N (not inside tmux)"))?,
    };
    let mut c = connect(cli).await?;
    let ask = Request::Notify {
        pane: pane.pane,
        machine: pane.machine,
        title,
        body: text.join(" "),
    };
    match c.request(&ask).await? {
        Reply::Done { .. } => Ok(()),
        Reply::Error { message } => anyhow::bail!(message),
        other => anyhow::bail!("unexpected reply: {other:?}"),
    }
}
