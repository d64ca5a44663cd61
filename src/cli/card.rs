//! `card`: a window's card (S4.3) printed as text or JSON, kept up in a popup (`--hold`), or
//! shown as a tmux menu on a client (`--menu`). Glue only: the card is [`crate::card`]; this
//! asks the daemon for its snapshot, asks tmux for the clients, and runs `tmux display-menu`
//! with an argv (no shell).

use std::io::{IsTerminal, Write};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};

use crate::card::{self, CardJson, Extent, MenuBox, WindowTarget};
use crate::ids::{PaneId, WindowId};
use crate::ipc::schema::{Reply, Request};
use crate::panel::options::DisplaySwitches;
use crate::tmux::command::SEP;
use crate::tmux::server::{find_tmux, ServerAddress};

use super::{connect, Cli};

/// `card` arguments.
#[derive(Debug, clap::Args)]
pub struct CardArgs {
    /// The window: `@N`, `%N` (the window of that pane) or `SESSION:WINDOW` (index or name);
    /// default: the window of `$TMUX_PANE`, else (with `--menu`) the client's current window.
    pub window: Option<WindowTarget>,
    /// Width in cells, or `N%` of the terminal (with `--menu`: of the client); default: the
    /// terminal's (80 when not printing to one).
    #[arg(long, value_name = "W")]
    pub width: Option<Extent>,
    /// Height in lines, or `N%` as for the width; default: the terminal's (no limit when not
    /// printing to one). Agents that do not fit are counted in a last line, `N more`.
    #[arg(long, value_name = "H")]
    pub height: Option<Extent>,
    /// JSON instead of text (`docs/schema.md`); every agent unless `--height` is given.
    #[arg(long, conflicts_with_all = ["menu", "hold"])]
    pub json: bool,
    /// Show the card as a tmux menu on a client; choosing an agent goes to its pane.
    #[arg(long)]
    pub menu: bool,
    /// With `--menu`: the client to show it on (its name or tty); default: the most recently
    /// active one.
    #[arg(long, requires = "menu", value_name = "CLIENT")]
    pub client: Option<String>,
    /// Keep the card on the terminal until a key is pressed (for `display-popup -E`).
    #[arg(long, conflicts_with = "menu")]
    pub hold: bool,
}

/// A person's tmux client, as `list-clients` gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ClientFacts {
    name: String,
    tty: String,
    width: usize,
    height: usize,
    window: Option<WindowId>,
    activity: u64,
}

/// `card`.
pub async fn run(cli: &Cli, args: &CardArgs) -> anyhow::Result<()> {
    let now_ms = crate::clock::unix_ms();
    let show = display_switches();
    let client = if args.menu {
        Some(pick_client(cli, args.client.as_deref())?)
    } else {
        None
    };
    let target = match (&args.window, pane_from_env(), &client) {
        (Some(t), _, _) => t.clone(),
        (None, Some(p), _) => WindowTarget::Pane(p),
        (
            None,
            None,
            Some(ClientFacts {
                window: Some(w), ..
            }),
        ) => WindowTarget::Window(*w),
        _ => bail!(
            "name the window: @N, %N (the window of a pane) or SESSION:WINDOW (not inside tmux)"
        ),
    };

    let mut c = connect(cli).await?;
    let reply = c.request(&Request::Agents).await?;
    let Reply::Snapshot {
        panes,
        windows,
        machines,
        ..
    } = reply
    else {
        bail!("unexpected reply from the daemon: {reply:?}");
    };
    let local = card::model::local_panes(&panes, &machines);
    let window = card::model::resolve(&target, &local).map_err(anyhow::Error::msg)?;
    let Some(card) = card::build(window, &local, &windows) else {
        bail!("no window {window} on this tmux server");
    };

    if let Some(client) = client {
        let room = MenuBox {
            width: args
                .width
                .map_or(client.width, |e| e.of(client.width))
                .min(client.width),
            height: args
                .height
                .map_or(client.height, |e| e.of(client.height))
                .min(client.height),
        };
        let argv = card::menu_argv(&card, show, Some(&client.name), room, now_ms)
            .map_err(|e| anyhow::anyhow!("client {}: {e}", client.name))?;
        return tmux(cli, &argv).map(|_| ());
    }

    let terminal = terminal_size();
    if args.json {
        let height = args
            .height
            .map(|e| resolve(e, terminal.map(|t| t.1), "--height"))
            .transpose()?;
        println!(
            "{}",
            serde_json::to_string_pretty(&CardJson::new(&card, height))?
        );
        return Ok(());
    }
    let width = match args.width {
        Some(e) => resolve(e, terminal.map(|t| t.0), "--width")?,
        None => terminal.map_or(80, |t| t.0),
    };
    let height = match args.height {
        Some(e) => Some(resolve(e, terminal.map(|t| t.1), "--height")?),
        // Held in a popup the card takes every line; printed to a shell, one is kept for the
        // prompt that follows.
        None if args.hold => terminal.map(|t| t.1),
        None => terminal.map(|t| t.1.saturating_sub(1).max(2)),
    };
    let lines = card::text_lines(&card, show, width, height, now_ms);
    let mut out = std::io::stdout().lock();
    if args.hold {
        // No newline after the last line: on the terminal's last row it would scroll the
        // header away.
        write!(out, "{}", lines.join("\r\n"))?;
        out.flush()?;
        drop(out);
        return wait_for_key();
    }
    for l in &lines {
        writeln!(out, "{l}")?;
    }
    Ok(())
}

/// A size in cells: cells as given, a percentage of the terminal's `whole`.
fn resolve(e: Extent, whole: Option<usize>, flag: &str) -> anyhow::Result<usize> {
    match (e, whole) {
        (Extent::Cells(n), _) => Ok(n),
        (Extent::Percent(_), Some(w)) => Ok(e.of(w)),
        (Extent::Percent(p), None) => {
            bail!("{flag} {p}% needs a terminal to be a percentage of (give cells)")
        }
    }
}

/// Columns and lines of the terminal standard output goes to, if it goes to one.
fn terminal_size() -> Option<(usize, usize)> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    ratatui::crossterm::terminal::size()
        .ok()
        .filter(|(w, h)| *w > 0 && *h > 0)
        .map(|(w, h)| (w as usize, h as usize))
}

/// Blocks until a key is pressed on the terminal (raw mode, restored after).
fn wait_for_key() -> anyhow::Result<()> {
    use ratatui::crossterm::event::{self, Event, KeyEventKind};
    use ratatui::crossterm::terminal;
    terminal::enable_raw_mode().context("cannot read keys from the terminal")?;
    let got = loop {
        match event::read() {
            Ok(Event::Key(k)) if k.kind == KeyEventKind::Press => break Ok(()),
            Ok(_) => continue,
            Err(e) => break Err(e),
        }
    };
    let _ = terminal::disable_raw_mode();
    got.context("reading a key")
}

/// The four display switches of the panel's saved view options (S5.3: they apply to the card
/// too); the defaults when the file is missing or broken (a warning says which).
fn display_switches() -> DisplaySwitches {
    let path = crate::panel::default_options_path();
    match crate::panel::ViewOptions::load(&path) {
        Ok(o) => o.display,
        Err(e) => {
            eprintln!("warning: {e:#}; showing everything");
            DisplaySwitches::default()
        }
    }
}

fn pane_from_env() -> Option<PaneId> {
    std::env::var("TMUX_PANE")
        .ok()
        .and_then(|p| PaneId::parse(&p))
}

/// Runs `tmux -S SOCKET ARGV…` and waits for it; its stdout, or tmux's own error.
fn tmux(cli: &Cli, argv: &[String]) -> anyhow::Result<String> {
    let path = find_tmux().context("tmux is not on PATH")?;
    let addr = ServerAddress::resolve(&cli.server());
    let out = Command::new(&path)
        .args(addr.tmux_args())
        .args(argv)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", path.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        bail!(
            "tmux {}: {}",
            argv.first().map(String::as_str).unwrap_or_default(),
            err.trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The client to show the menu on: the one named (by name or tty), else the person's client
/// used last.
fn pick_client(cli: &Cli, name: Option<&str>) -> anyhow::Result<ClientFacts> {
    let format = crate::tmux::command::format_of(&[
        "client_name",
        "client_tty",
        "client_width",
        "client_height",
        "window_id",
        "client_control_mode",
        "client_activity",
    ]);
    let listed = tmux(cli, &["list-clients".into(), "-F".into(), format])?;
    let clients = parse_clients(&listed);
    let picked = match name {
        Some(n) => clients.into_iter().find(|c| c.name == n || c.tty == n),
        None => clients.into_iter().max_by_key(|c| c.activity),
    };
    match (picked, name) {
        (Some(c), _) => Ok(c),
        (None, Some(n)) => bail!("no tmux client {n:?} (see `tmux list-clients`)"),
        (None, None) => bail!("no tmux client is attached to show the menu on"),
    }
}

/// People's clients from `list-clients` lines (control-mode clients, the sidecar's own
/// included, are left out).
fn parse_clients(listed: &str) -> Vec<ClientFacts> {
    listed
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split(SEP).collect();
            if f.len() != 7 || f[5] == "1" {
                return None;
            }
            Some(ClientFacts {
                name: f[0].to_string(),
                tty: f[1].to_string(),
                width: f[2].parse().ok()?,
                height: f[3].parse().ok()?,
                window: WindowId::parse(f[4]),
                activity: f[6].parse().unwrap_or(0),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_are_read_and_control_clients_left_out() {
        let s = SEP;
        let listed = format!(
            "/dev/pts/3{s}/dev/pts/3{s}100{s}30{s}@2{s}0{s}1700\n\
             thinkterm-sidecar-9-1{s}{s}80{s}24{s}@1{s}1{s}1900\n\
             /dev/pts/5{s}/dev/pts/5{s}80{s}12{s}@4{s}0{s}1800\n"
        );
        let c = parse_clients(&listed);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].window, Some(WindowId(2)));
        assert_eq!((c[1].width, c[1].height), (80, 12));
        assert_eq!(
            c.iter().max_by_key(|c| c.activity).map(|c| c.name.as_str()),
            Some("/dev/pts/5")
        );
    }

    #[test]
    fn percentages_need_a_terminal() {
        assert_eq!(resolve(Extent::Cells(30), None, "--width").ok(), Some(30));
        assert_eq!(
            resolve(Extent::Percent(50), Some(81), "--width").ok(),
            Some(40)
        );
        let e = resolve(Extent::Percent(50), None, "--height").expect_err("no terminal");
        assert!(
            e.to_string().contains("--height 50% needs a terminal"),
            "{e}"
        );
    }
}
