//! `rules` and `explain`: the detection rules, here and in the daemon, and why a pane reads
//! as it does.

use crate::ipc::schema::{Reply, Request};

use super::{connect, screen_file, Cli};
use super::{ExplainArgs, RulesAction};

/// `rules reload`.
pub async fn rules_reload(cli: &Cli) -> anyhow::Result<()> {
    let mut c = connect(cli).await?;
    match c.request(&Request::Reload).await? {
        Reply::Done { message } => {
            println!("{message}");
            Ok(())
        }
        Reply::Error { message } => anyhow::bail!(message),
        other => anyhow::bail!("unexpected reply: {other:?}"),
    }
}

/// `rules list|explain|check` (local: the rules of this machine).
pub fn rules_local(action: &RulesAction) -> anyhow::Result<i32> {
    use crate::rules::{render, Catalog};
    let dir = crate::paths::rules_dir();
    let report = Catalog::load(&dir);
    for r in &report.rejected {
        for reason in &r.reasons {
            eprintln!("warning: rejected: {reason}");
        }
    }
    match action {
        RulesAction::List => {
            print!(
                "{}",
                render::render_list(&report.catalog, &render::default_command_dirs())
            );
            Ok(0)
        }
        RulesAction::Explain { id } => {
            match render::render_rules_explain(&report.catalog, id, &dir) {
                Some(text) => {
                    print!("{text}");
                    Ok(0)
                }
                None => anyhow::bail!("unknown agent {id:?} (see `thinkterm-sidecar rules list`)"),
            }
        }
        RulesAction::Check { files } => {
            let (text, ok) = render::render_check(files);
            print!("{text}");
            Ok(if ok { 0 } else { 1 })
        }
        RulesAction::Reload => Ok(0),
    }
}

/// `explain`.
pub async fn explain(cli: &Cli, args: &ExplainArgs) -> anyhow::Result<()> {
    if let Some(file) = &args.file {
        return screen_file::explain_file(args, file);
    }
    let Some(pane) = args.pane.clone() else {
        anyhow::bail!(
            "give a pane (`explain %3`) or a screen (`explain --file SCREEN.txt --agent ID`)"
        );
    };
    let mut c = connect(cli).await?;
    let explain = Request::Explain {
        pane: pane.pane,
        machine: pane.machine.clone(),
    };
    match c.request(&explain).await? {
        Reply::Value { value } => {
            if let Some(dir) = &args.save {
                let (txt, json) = screen_file::save_fixture(dir, pane.pane, &value)?;
                eprintln!("saved {} and {}", txt.display(), json.display());
            }
            if args.json {
                println!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                println!(
                    "pane {pane}: agent {}{}, state {}",
                    value["agent"].as_str().unwrap_or("-"),
                    value["agent_version"]
                        .as_str()
                        .map(|v| format!(" {v}"))
                        .unwrap_or_default(),
                    value["state"].as_str().unwrap_or("unknown")
                );
                if let Some(why) = value["unrecognised_reason"].as_str() {
                    println!("unrecognised: {why}");
                }
                if let Some(text) = value["explanation_text"].as_str() {
                    print!("{text}");
                }
            }
            Ok(())
        }
        Reply::Error { message } => anyhow::bail!(message),
        other => anyhow::bail!("unexpected reply: {other:?}"),
    }
}
