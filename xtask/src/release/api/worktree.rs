//! A temporary `git worktree` of a past commit, removed on drop (also
//! when the listing fails), so a baseline is listed from the release's
//! own sources.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use blue_testbed::support::temp_dir::TempDir;

/// A detached worktree of one commit in a private temporary directory.
pub struct Worktree {
    repo: PathBuf,
    dir: TempDir,
    pub commit: String,
}

impl Worktree {
    /// Checks `rev` of the repository at `repo` out into a temporary directory.
    pub fn add(repo: &Path, rev: &str) -> Result<Self> {
        let commit = git(
            repo,
            &["rev-parse", "--verify", &format!("{rev}^{{commit}}")],
        )?;
        let dir = TempDir::new("blue-api-baseline")?;
        let checkout = dir.path().join("tree");
        let checkout = checkout
            .to_str()
            .context("temporary directory path is not UTF-8")?;
        git(
            repo,
            &["worktree", "add", "--detach", "--quiet", checkout, &commit],
        )?;
        Ok(Self {
            repo: repo.to_path_buf(),
            dir,
            commit,
        })
    }

    /// The checked-out tree.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("tree")
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        let tree = self.path();
        let removed = Command::new("git")
            .current_dir(&self.repo)
            .args(["worktree", "remove", "--force"])
            .arg(&tree)
            .status();
        if !removed.is_ok_and(|s| s.success()) {
            eprintln!(
                "warning: could not remove the worktree {}; `git worktree prune` will",
                tree.display()
            );
        }
    }
}

/// Runs git in `repo` and returns its trimmed standard output.
pub fn git(repo: &Path, args: &[&str]) -> Result<String> {
    let output = Command::new("git")
        .current_dir(repo)
        .args(args)
        .output()
        .with_context(|| format!("running git {}", args.join(" ")))?;
    if !output.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}
