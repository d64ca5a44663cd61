//! The `thinkterm-sidecar` binary: parse the command line, set up logging, call the library.

use clap::Parser;
use thinkterm_sidecar::cli::{self, Cli, Command, RulesAction};
use thinkterm_sidecar::daemon::{self, Fatal};
use thinkterm_sidecar::logging::{self, Sink};
use thinkterm_sidecar::service;

fn main() {
    // `pipe-pane` runs us as a pane's relay: hand its pipe to the daemon and leave, before
    // anything else (no command line parsing, no logging: tmux gave us no terminal).
    let mut args = std::env::args_os().skip(1);
    if args
        .next()
        .is_some_and(|a| a == thinkterm_sidecar::tmux::pipe::relay::RELAY_ARG)
    {
        let rest: Vec<std::ffi::OsString> = args.collect();
        std::process::exit(thinkterm_sidecar::tmux::pipe::relay::run(&rest));
    }
    let cli = Cli::parse();
    if matches!(&cli.command, Command::Run(a) if a.detached_child) {
        // Started by `run --detach`: no terminal, a process group and session of its own.
        service::detach::become_session_leader();
    }
    setup_logging(&cli);
    match &cli.command {
        Command::Run(args) if args.detach && !args.detached_child => {
            exit_on_error(service::run_detached(&cli, args));
            return;
        }
        Command::Completions { shell } => {
            exit_on_error(
                thinkterm_sidecar::generate::completions(*shell, &mut std::io::stdout())
                    .map_err(Into::into),
            );
            return;
        }
        Command::Man { out } => {
            exit_on_error(match out {
                Some(dir) => thinkterm_sidecar::generate::man_pages(dir).map_err(Into::into),
                None => {
                    thinkterm_sidecar::generate::man(&mut std::io::stdout()).map_err(Into::into)
                }
            });
            return;
        }
        _ => {}
    }
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
            Command::Run(args) => {
                let opts = daemon::Options {
                    server: cli.server(),
                    config_path: cli.config.clone(),
                };
                if args.exit_with_server {
                    let addr =
                        thinkterm_sidecar::tmux::server::ServerAddress::resolve(&opts.server);
                    if let Some(tmux) = thinkterm_sidecar::tmux::server::find_tmux() {
                        service::server_watch::exit_with_server(&tmux, &addr)?;
                    }
                }
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
                // Nothing may reach stdout but the daemon's replies.
                let start_fn = || service::start_in_background(&cli, false).map(|_| ());
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
            Command::Card(args) => cli::card::run(&cli, args).await,
            Command::Focus { pane, client } => cli::focus(&cli, pane.clone(), client.clone()).await,
            Command::Notify { text, title, pane } => {
                cli::notify(&cli, text, title.clone(), pane.clone()).await
            }
            Command::Read { pane, lines, json } => {
                cli::drive::read(&cli, pane, *lines, *json).await
            }
            Command::Send {
                pane,
                text,
                no_enter,
                when_idle,
                timeout,
            } => {
                let text = cli::drive::send_text(text)?;
                let limit = when_idle.then(|| std::time::Duration::from_secs_f64(timeout.max(0.0)));
                let code = cli::drive::send(&cli, pane, &text, !*no_enter, limit).await?;
                if code != 0 {
                    std::process::exit(code);
                }
                Ok(())
            }
            Command::Wait {
                pane,
                goal,
                timeout,
                json,
            } => {
                let limit = timeout.map(|t| std::time::Duration::from_secs_f64(t.max(0.0)));
                let code = cli::drive::wait(&cli, pane, *goal, limit, *json).await?;
                if code != 0 {
                    std::process::exit(code);
                }
                Ok(())
            }
            Command::Start {
                session,
                dir,
                name,
                machine,
                command,
            } => {
                cli::drive::start(
                    &cli,
                    machine.clone(),
                    session.clone(),
                    dir.clone(),
                    name.clone(),
                    command.clone(),
                )
                .await
            }
            Command::Status { format } => cli::status(&cli, format).await,
            Command::Doctor { json } => {
                let code = thinkterm_sidecar::doctor::run(&cli, *json).await;
                if code != 0 {
                    std::process::exit(code);
                }
                Ok(())
            }
            Command::Skill { action } => thinkterm_sidecar::skill::run(&cli, action).await,
            Command::Panel { .. } | Command::Completions { .. } | Command::Man { .. } => Ok(()),
        }
    });
    // Blocking work still running (a probe stuck reading /proc, a write) must not keep the
    // process alive: the daemon's state is already handed off.
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    if let Err(e) = result {
        let code = e.downcast_ref::<Fatal>().map(|f| f.code).unwrap_or(1);
        if logs_to_file() {
            tracing::error!("{e:#}");
        }
        eprintln!("thinkterm-sidecar: {e:#}");
        std::process::exit(code);
    }
}

/// Logging for this command: the daemon at the config's level, to the journal under systemd, to
/// its own file when started in the background; the other commands at `warn` on standard error.
fn setup_logging(cli: &Cli) {
    let daemon_level = || {
        thinkterm_sidecar::config::load(cli.config.as_deref())
            .config
            .log
    };
    match &cli.command {
        Command::Run(args) if args.detached_child => {
            let addr = thinkterm_sidecar::tmux::server::ServerAddress::resolve(&cli.server());
            let log = logging::daemon_log_path(&addr.key());
            logging::init(Sink::File(log), &daemon_level());
            // Standard error is /dev/null: a panic is logged instead.
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                tracing::error!("panic: {info}");
                previous(info);
            }));
        }
        Command::Run(args) if !args.detach => logging::init(Sink::from_env(), &daemon_level()),
        _ => logging::init(Sink::Stderr, "warn"),
    }
}

fn logs_to_file() -> bool {
    matches!(logging::sink(), Some(Sink::File(_)))
}

/// Exits 1 with the error, except a closed pipe (`… | head`), which is no error.
fn exit_on_error(r: anyhow::Result<()>) {
    if let Err(e) = r {
        if e.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
        {
            return;
        }
        eprintln!("thinkterm-sidecar: {e:#}");
        std::process::exit(1);
    }
}
