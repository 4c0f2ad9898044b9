//! A private temporary directory, removed on drop.

use std::path::Path;

use anyhow::{Context, Result};

/// A private (0700) directory under the system temp dir, removed on drop.
#[derive(Debug)]
pub struct TempDir(tempfile::TempDir);

impl TempDir {
    /// Creates `<tmp>/<prefix>-<pid>-<random>`.
    pub fn new(prefix: &str) -> Result<Self> {
        let prefix = format!("{prefix}-{}-", std::process::id());
        let dir = tempfile::Builder::new().prefix(&prefix).tempdir();
        Ok(Self(dir.context("creating a temporary directory")?))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.0.path()
    }
}
