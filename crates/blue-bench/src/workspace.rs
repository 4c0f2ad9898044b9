//! Where a run writes: the workspace's `BENCHMARKS.md` and `target/bench`,
//! its blocks replaced between their markers.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::report::{with_blocks, Block};

/// The workspace's root directory (two levels above this package).
pub fn workspace_root() -> PathBuf {
    let package = Path::new(env!("CARGO_MANIFEST_DIR"));
    package
        .ancestors()
        .nth(2)
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Replaces (or appends) `blocks` in the Markdown file `out`, keeping
/// everything written by hand around them.
pub fn write_blocks(out: &Path, blocks: &[Block]) -> Result<()> {
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let doc = std::fs::read_to_string(out).unwrap_or_default();
    std::fs::write(out, with_blocks(&doc, blocks))
        .with_context(|| format!("writing {}", out.display()))
}
