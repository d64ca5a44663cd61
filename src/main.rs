//! The `thinkterm-sidecar` binary: parse the command line, set up logging, call the library.

use clap::Parser;
use thinkterm_sidecar::cli::{self, Cli, Command, RulesAction};
use thinkterm_sidecar::daemon::{self, Fatal};

fn main() {
    let cli = Cli::parse();
    let filter = std::env::var("THINKTERM_LOG")
        .ok()
        .unwrap_or_else(|| match cli.command {
            Command::Run { .. } => {
                thinkterm_sidecar::config::load(cli.config.as_deref())
                    .config
                    .log
            }
            _ => "warn".into(),
        });
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_new(&filter).unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    if let Command::Panel { origin, options } = &cli.command {
        // The panel runs its own threads (no runtime).
        let socket = cli.daemon_socket();
        let origin = origin.or_else(thinkterm_sidecar::panel::origin_from_env);
        let options = options
            .clone()
            .unwrap_or_else(thinkterm_sidecar::panel::default_options_path);
        if let Err(e) = thinkterm_sidecar::panel::run(socket, origin, options) {
            eprintln!("thinkterm-sidecar: {e:#}");
            std::process::exit(1);
        }
        return;
    }
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("thinkterm-sidecar: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    let result = rt.block_on(async {
        match &cli.command {
            Command::Run { detached } => {
                if *detached {
                    // Its own session, no controlling terminal: a hang-up of the caller's
                    // session (ssh closing) does not reach it.
                    let _ = rustix::process::setsid();
                }
                let opts = daemon::Options {
                    server: cli.server(),
                    config_path: cli.config.clone(),
                };
                // The daemon runs as a task, not as the future `block_on` polls: waking that
                // future costs an eventfd write and an extra epoll round per wake-up, and the
                // daemon is woken for every read of every control client.
                match tokio::spawn(daemon::run(opts)).await {
                    Ok(r) => r,
                    Err(e) => Err(anyhow::anyhow!("the daemon task failed: {e}")),
                }
            }
            Command::Agents {
                json,
                attention,
                machine,
            } => cli::agents(&cli, *json, *attention, machine.as_deref()).await,
            Command::Bridge { start } => {
                let addr = thinkterm_sidecar::tmux::server::ServerAddress::resolve(&cli.server());
                let starter = |a: &thinkterm_sidecar::tmux::server::ServerAddress| {
                    thinkterm_sidecar::remote::bridge::start_daemon(a, cli.config.as_deref())
                };
                let start_fn = || starter(&addr);
                thinkterm_sidecar::remote::bridge::run(
                    &addr,
                    start.then_some(&start_fn as &dyn Fn() -> anyhow::Result<()>),
                )
                .await
            }
            Command::Machines { action } => {
                thinkterm_sidecar::remote::commands::machines(&cli, action.as_ref()).await
            }
            Command::Events { json } => cli::events(&cli, *json).await,
            Command::Config => {
                let l = thinkterm_sidecar::config::load(cli.config.as_deref());
                for w in &l.warnings {
                    eprintln!("warning: {w}");
                }
                print!("{}", l.describe());
                Ok(())
            }
            Command::Rules {
                action: RulesAction::Reload,
            } => cli::rules_reload(&cli).await,
            Command::Rules { action } => match cli::rules_local(action) {
                Ok(0) => Ok(()),
                Ok(code) => std::process::exit(code),
                Err(e) => Err(e),
            },
            Command::Explain(args) => cli::explain(&cli, args).await,
            Command::Report(args) => cli::report(args),
            Command::Focus { pane, client } => cli::focus(&cli, pane.clone(), client.clone()).await,
            Command::Status { format } => cli::status(&cli, format).await,
            Command::Panel { .. } => Ok(()),
        }
    });
    // Blocking work still running (a probe stuck reading /proc, a write) must not keep the
    // process alive: the daemon's state is already handed off.
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    if let Err(e) = result {
        let code = e.downcast_ref::<Fatal>().map(|f| f.code).unwrap_or(1);
        eprintln!("thinkterm-sidecar: {e:#}");
        std::process::exit(code);
    }
}
