//! Doing a plan ([`super::plan`]), and saying what it does (or, with `--dry-run`, would do).
//!
//! Each file is read again just before it is written: when it changed since the plan was made
//! (the agent saved its settings meanwhile), nothing more is written and the error says to run
//! again. Files are replaced atomically (a temporary file renamed over them) with their
//! permissions kept; a settings file that is a symbolic link (dotfiles) has its target written,
//! so the link stays.

use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::diff;
use super::plan::{Backup, FileChange, Section};
use super::target::backup_of;

/// A new file longer than this is shown by its head in a dry run.
const NEW_FILE_LINES: usize = 20;

/// Reads a file for planning: its bytes, or None when it does not exist.
pub fn read_file(path: &Path) -> io::Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Makes the changes of a section, in order.
pub fn apply(section: &Section) -> anyhow::Result<()> {
    for c in &section.changes {
        apply_one(c)?;
    }
    for d in &section.remove_dirs {
        // Only when empty: anything the person put there stays.
        let _ = std::fs::remove_dir(d);
    }
    Ok(())
}

fn apply_one(c: &FileChange) -> anyhow::Result<()> {
    let now = read_file(&c.path).with_context(|| format!("cannot read {}", c.path.display()))?;
    if now != c.before {
        anyhow::bail!(
            "{} changed while setting up (another program wrote it); nothing more was written: run this again",
            c.path.display()
        );
    }
    if c.backup == Backup::Save {
        if let Some(b) = &c.before {
            write_atomic(&backup_of(&c.path), b)?;
        }
    }
    match &c.after {
        Some(bytes) => write_atomic(&c.path, bytes)?,
        None => std::fs::remove_file(&c.path)
            .with_context(|| format!("cannot remove {}", c.path.display()))?,
    }
    if c.backup == Backup::Drop {
        let copy = backup_of(&c.path);
        match std::fs::remove_file(&copy) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot remove {}", copy.display())),
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file in the same folder, keeping the old file's
/// permissions and following a symbolic link to the file it names.
fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let real = real_target(path);
    let dir = real
        .parent()
        .ok_or_else(|| anyhow::anyhow!("{}: no folder", real.display()))?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let name = real.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.thinkterm-sidecar-{}", std::process::id()));
    let result = (|| -> io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        if let Ok(m) = std::fs::metadata(&real) {
            std::fs::set_permissions(
                &tmp,
                std::fs::Permissions::from_mode(m.permissions().mode()),
            )?;
        }
        std::fs::rename(&tmp, &real)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", real.display()));
    }
    Ok(())
}

/// The file a path names: the target of a symbolic link (resolved like the kernel would), else
/// the path itself.
fn real_target(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path).unwrap_or_else(|_| {
            // A dangling link: write where it points.
            std::fs::read_link(path)
                .map(|t| path.parent().unwrap_or(Path::new("/")).join(t))
                .unwrap_or_else(|_| path.to_path_buf())
        }),
        _ => path.to_path_buf(),
    }
}

/// The plan in words: per agent, each change (with its lines, for a dry run) and the notes.
pub fn describe(sections: &[Section], dry_run: bool) -> String {
    let mut out = String::new();
    for s in sections {
        out.push_str(&format!(
            "{} ({}):\n",
            s.target.agent.name(),
            s.target.dir.display()
        ));
        if s.changes.is_empty() {
            out.push_str("  nothing to change\n");
        }
        for c in &s.changes {
            let verb = match (&c.before, &c.after, dry_run) {
                (None, Some(_), true) => "would create",
                (None, Some(_), false) => "created",
                (Some(_), Some(_), true) => "would update",
                (Some(_), Some(_), false) => "updated",
                (_, None, true) => "would remove",
                (_, None, false) => "removed",
            };
            out.push_str(&format!("  {verb} {}: {}\n", c.path.display(), c.what));
            match c.backup {
                Backup::Save => out.push_str(&format!(
                    "    {} the copy from before setup: {}\n",
                    if dry_run { "keeping" } else { "kept" },
                    backup_of(&c.path).display()
                )),
                Backup::Drop => out.push_str(&format!(
                    "    {} {}\n",
                    if dry_run {
                        "and removing its copy"
                    } else {
                        "and removed its copy"
                    },
                    backup_of(&c.path).display()
                )),
                Backup::Keep => {}
            }
            if dry_run && c.after.is_some() {
                let text = |b: &Option<Vec<u8>>| {
                    b.as_deref()
                        .map(|b| String::from_utf8_lossy(b).into_owned())
                        .unwrap_or_default()
                };
                let after = text(&c.after);
                let lines = after.lines().count();
                if c.before.is_none() && lines > NEW_FILE_LINES {
                    // A new long file (the skill): its head, which holds its frontmatter.
                    let head: String = after.lines().take(4).map(|l| format!("{l}\n")).collect();
                    out.push_str(&diff::render("", &head, "    "));
                    out.push_str(&format!("    + … {} more lines\n", lines - 4));
                } else {
                    out.push_str(&diff::render(&text(&c.before), &after, "    "));
                }
            }
        }
        for n in &s.notes {
            out.push_str(&format!("  note: {n}\n"));
        }
    }
    out
}
