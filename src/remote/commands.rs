//! The command line's side of machines: `machines` (list them, or connect one more to the
//! running daemon) and `bridge`.

use crate::cli::{connect, Cli};
use crate::ipc::schema::{MachineSpec, Reply, Request};

/// `machines` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum MachinesAction {
    /// This computer and each connected machine, and whether it answers.
    List {
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Connect one more machine to the running daemon (until it stops; `[[machines]]` in the
    /// config file are the lasting ones).
    Add {
        /// Its name in every view (`devbox`).
        name: String,
        /// An ssh destination (a `~/.ssh/config` alias works).
        #[arg(long, conflicts_with = "command", required_unless_present = "command")]
        ssh: Option<String>,
        /// One more ssh argument, before the destination (repeat it: `--ssh-arg=-p
        /// --ssh-arg=2222`).
        #[arg(long = "ssh-arg", value_name = "ARG", allow_hyphen_values = true)]
        ssh_args: Vec<String>,
        /// What ssh runs there (default `thinkterm-sidecar bridge --start`).
        #[arg(long)]
        remote_command: Option<String>,
        /// Or the whole command that reaches its sidecar, after `--`.
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
}

/// `machines`.
pub async fn machines(cli: &Cli, action: Option<&MachinesAction>) -> anyhow::Result<()> {
    let mut c = connect(cli).await?;
    match action {
        None | Some(MachinesAction::List { .. }) => {
            let json = matches!(action, Some(MachinesAction::List { json: true }));
            let Reply::Machines { machines } = c.request(&Request::Machines).await? else {
                anyhow::bail!("unexpected reply from the daemon");
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&machines)?);
                return Ok(());
            }
            for m in machines {
                let how = match (m.local, m.reachable) {
                    (true, _) => "this computer".to_string(),
                    (false, true) => "reachable".to_string(),
                    (false, false) => format!(
                        "unreachable: {}",
                        m.reason.as_deref().unwrap_or("no answer")
                    ),
                };
                println!("{:<16} {how}", m.name);
            }
            Ok(())
        }
        Some(MachinesAction::Add {
            name,
            ssh,
            ssh_args,
            remote_command,
            command,
        }) => {
            let machine = MachineSpec {
                name: name.clone(),
                ssh: ssh.clone(),
                ssh_args: ssh_args.clone(),
                remote_command: remote_command.clone(),
                command: command.clone(),
            };
            match c.request(&Request::AddMachine { machine }).await? {
                Reply::Done { message } => {
                    println!("{message}");
                    Ok(())
                }
                Reply::Error { message } => anyhow::bail!(message),
                other => anyhow::bail!("unexpected reply: {other:?}"),
            }
        }
    }
}
