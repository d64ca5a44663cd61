//! `explain` with files: a saved screen classified again (`--file`, the agent and title from
//! the `.json` beside it when not given) and a live pane saved as a fixture (`--save`).

use std::path::{Path, PathBuf};

use super::ExplainArgs;

/// `explain --file`: the agent and title come from the flags, else from the `.json` beside the
/// screen (a fixture, or a pane saved with `--save`).
pub(super) fn explain_file(args: &ExplainArgs, file: &Path) -> anyhow::Result<()> {
    let screen =
        std::fs::read_to_string(file).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let meta_path = file.with_extension("json");
    let meta: Option<serde_json::Value> = match std::fs::read_to_string(&meta_path) {
        Ok(t) => Some(
            serde_json::from_str(&t)
                .map_err(|e| anyhow::anyhow!("{}: {e}", meta_path.display()))?,
        ),
        Err(_) => None,
    };
    let from_meta = |k: &str| {
        meta.as_ref()
            .and_then(|m| m[k].as_str().map(str::to_string))
    };
    let Some(agent) = args.agent.clone().or_else(|| from_meta("agent")) else {
        anyhow::bail!(
            "{}: which agent? give --agent ID (or keep the .json saved beside the screen)",
            file.display()
        );
    };
    let title = args.title.clone().or_else(|| from_meta("title"));
    let catalog = crate::rules::Catalog::load(&crate::paths::rules_dir()).catalog;
    let e = crate::daemon::explain_screen(
        &catalog,
        &agent,
        &screen,
        title.as_deref(),
        args.progress.as_deref(),
    );
    if args.json {
        println!("{}", e.to_json());
    } else {
        print!("{}", e.render());
    }
    Ok(())
}

/// Writes the fixture of `pane` (from the daemon's explain answer) into `dir`.
pub(super) fn save_fixture(
    dir: &Path,
    pane: crate::ids::PaneId,
    value: &serde_json::Value,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    use crate::rules::fixture::{fixture, next_number, PaneFacts};
    std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
    let names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    let n = next_number(names.iter().map(String::as_str));
    let procs: Vec<crate::process::identify::ProcInfo> =
        serde_json::from_value(value["foreground"].clone()).unwrap_or_default();
    let label = format!("saved from pane {pane}");
    let size = |k: &str| value[k].as_u64().and_then(|v| u32::try_from(v).ok());
    let rule = value["explanation"]["rule"].as_str();
    let facts = PaneFacts {
        agent: value["agent"].as_str(),
        version: value["agent_version"].as_str(),
        screen: value["screen"].as_str().unwrap_or(""),
        title: value["title"].as_str(),
        current_command: value["current_command"].as_str().unwrap_or(""),
        foreground: &procs,
        width: size("width"),
        height: size("height"),
        state: value["explanation"]["state"]
            .as_str()
            .or(value["state"].as_str())
            .unwrap_or("unknown"),
        rule,
        fallback: value["explanation"]["fallback"].as_bool().unwrap_or(false),
        unrecognised: value["unrecognised_reason"].as_str(),
        label: &label,
    };
    let files = fixture(&facts, n);
    let txt = dir.join(format!("{}.txt", files.stem));
    let json = dir.join(format!("{}.json", files.stem));
    std::fs::write(&txt, &files.txt).map_err(|e| anyhow::anyhow!("{}: {e}", txt.display()))?;
    std::fs::write(&json, &files.json).map_err(|e| anyhow::anyhow!("{}: {e}", json.display()))?;
    Ok((txt, json))
}
