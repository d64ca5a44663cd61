//! The worktree line (S5.5): whether a pane's folder sits inside a linked git worktree, and which
//! branch it has checked out. Only git's own files are read (no `git` process): walk up to
//! `.git`; a linked worktree has a `.git` *file* pointing at `…/worktrees/NAME`, whose `HEAD`
//! names the branch. Results are cached per path and refreshed only when a snapshot arrives, so
//! drawing never touches the disk.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// How long a cached answer is trusted before the next snapshot reads the files again.
const CACHE_TTL_MS: u64 = 10_000;

/// A linked worktree and what it has checked out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Worktree {
    /// The worktree's folder name (`feature-login`).
    pub folder: String,
    /// The branch (`feat/login`), or the head commit's first 7 hex digits when detached.
    pub head: String,
}

/// Finds the linked worktree that holds `path`, if any (None for the main checkout).
pub fn lookup(path: &Path) -> Option<Worktree> {
    let mut dir = Some(path);
    while let Some(d) = dir {
        let dot_git = d.join(".git");
        match std::fs::symlink_metadata(&dot_git) {
            Ok(m) if m.is_dir() => return None,
            Ok(m) if m.is_file() => return linked(d, &dot_git),
            _ => dir = d.parent(),
        }
    }
    None
}

fn linked(root: &Path, dot_git: &Path) -> Option<Worktree> {
    let text = std::fs::read_to_string(dot_git).ok()?;
    let gitdir = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let gitdir = root.join(gitdir);
    // Submodules also use a `.git` file, but point into `modules/`, not `worktrees/`.
    let parent = gitdir.parent()?;
    if parent.file_name()? != "worktrees" {
        return None;
    }
    let head = std::fs::read_to_string(gitdir.join("HEAD")).ok()?;
    let head = head.trim();
    let head = match head.strip_prefix("ref:") {
        Some(r) => r
            .trim()
            .strip_prefix("refs/heads/")
            .unwrap_or(r.trim())
            .to_string(),
        None if head.len() >= 7 && head.bytes().all(|b| b.is_ascii_hexdigit()) => {
            head[..7].to_string()
        }
        None => return None,
    };
    let folder = root.file_name()?.to_string_lossy().into_owned();
    Some(Worktree { folder, head })
}

/// Cached answers per folder, refreshed off the drawing path.
#[derive(Debug, Default)]
pub struct WorktreeCache {
    entries: HashMap<PathBuf, (u64, Option<Worktree>)>,
}

impl WorktreeCache {
    /// Makes sure `path` has a fresh answer (reads git's files when stale or new).
    pub fn refresh(&mut self, path: &str, now_ms: u64) {
        if path.is_empty() {
            return;
        }
        let key = PathBuf::from(path);
        let stale = match self.entries.get(&key) {
            Some((at, _)) => now_ms.saturating_sub(*at) >= CACHE_TTL_MS,
            None => true,
        };
        if stale {
            let found = lookup(&key);
            self.entries.insert(key, (now_ms, found));
        }
    }

    /// The cached answer for `path` (never reads the disk).
    pub fn get(&self, path: &str) -> Option<&Worktree> {
        self.entries
            .get(Path::new(path))
            .and_then(|(_, w)| w.as_ref())
    }

    /// Forgets folders no pane uses any more.
    pub fn retain(&mut self, keep: impl Fn(&Path) -> bool) {
        self.entries.retain(|p, _| keep(p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn a_real_linked_worktree_shows_its_folder_and_branch_and_the_main_checkout_nothing() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let main = tmp.path().join("repo");
        std::fs::create_dir_all(main.join("src/deep")).expect("mkdir");
        git(&main, &["init", "-q"]);
        std::fs::write(main.join("src/deep/a.txt"), "a").expect("write");
        git(&main, &["add", "."]);
        git(&main, &["commit", "-q", "-m", "one"]);
        git(
            &main,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "feat/login",
                "../feature-login",
            ],
        );
        git(&main, &["worktree", "add", "-q", "--detach", "../detached"]);

        assert_eq!(
            lookup(&main.join("src/deep")),
            None,
            "main checkout gets no line"
        );
        let wt = tmp.path().join("feature-login");
        let found = lookup(&wt.join("src/deep")).expect("linked worktree found from a subfolder");
        assert_eq!(
            found,
            Worktree {
                folder: "feature-login".into(),
                head: "feat/login".into()
            }
        );

        let det = lookup(&tmp.path().join("detached")).expect("detached worktree");
        assert_eq!(det.folder, "detached");
        assert_eq!(det.head.len(), 7);
        assert!(
            det.head.bytes().all(|b| b.is_ascii_hexdigit()),
            "{}",
            det.head
        );

        assert_eq!(lookup(tmp.path()), None, "outside any repository");

        let mut cache = WorktreeCache::default();
        let key = wt.to_string_lossy().into_owned();
        assert!(cache.get(&key).is_none(), "nothing before a refresh");
        cache.refresh(&key, 0);
        assert_eq!(cache.get(&key).map(|w| w.head.as_str()), Some("feat/login"));
        git(&wt, &["checkout", "-q", "-b", "other"]);
        cache.refresh(&key, 1);
        assert_eq!(
            cache.get(&key).map(|w| w.head.as_str()),
            Some("feat/login"),
            "cached"
        );
        cache.refresh(&key, CACHE_TTL_MS + 1);
        assert_eq!(
            cache.get(&key).map(|w| w.head.as_str()),
            Some("other"),
            "refreshed when stale"
        );
    }
}
