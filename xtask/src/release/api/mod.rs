//! `cargo xtask api`: the breaking-change check. Each published crate's
//! public API (listed from rustdoc's JSON, with the features docs.rs
//! documents) is compared with the listing committed in `api/` at the
//! last release; a line of that listing gone or changed fails the check
//! unless the crate's version has moved to one Cargo treats as
//! incompatible (0.x: the minor; from 1.0: the major).

mod baseline;
mod items;
mod listing;
mod names;
mod render;
mod rustdoc;
mod worktree;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::crates::{published, workspace_root, Published};
use baseline::{compatible, Baseline};
use worktree::{git, Worktree};

pub const USAGE: &str = "  api [--bless [--at <commit>]]\n                       \
     check each published crate's public API against its listing in api/ (the last release's);\n                       \
     --bless rewrites the listings from the working tree, or from a temporary worktree of <commit>";

pub fn main(args: &[String]) -> Result<()> {
    let root = workspace_root();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => check(&root),
        ["--bless"] => bless(&root, None),
        ["--bless", "--at", rev] => bless(&root, Some(rev)),
        _ => bail!("usage: cargo xtask api [--bless [--at <commit>]]"),
    }
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}

fn listing_file(root: &Path, krate: &str) -> PathBuf {
    root.join("api").join(format!("{krate}.txt"))
}

fn check(root: &Path) -> Result<()> {
    let mut failed = Vec::new();
    for krate in published(&root.join("Cargo.toml"))? {
        let file = listing_file(root, &krate.name);
        if !file.exists() {
            println!(
                "{}: no listing in api/ (never released): nothing to compare",
                krate.name
            );
            continue;
        }
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        let baseline = Baseline::parse(&krate.name, &text)?;
        let json = rustdoc::json(root, &target_dir(root), &krate, &krate.docs_features)?;
        let current = listing::listing(&json);
        let missing = baseline.missing_from(&current);
        let added = current.difference(&baseline.lines).count();
        let (old, new) = (&baseline.version, &krate.version);
        if missing.is_empty() {
            println!(
                "{}: the API of {old} is intact ({added} line(s) added)",
                krate.name
            );
        } else if !compatible(old, new)? {
            let n = missing.len();
            println!(
                "{}: {n} line(s) of {old}'s API changed or gone, allowed by the version {new}",
                krate.name
            );
        } else {
            eprintln!(
                "{}: {} line(s) of {old}'s API changed or gone, but the version is still {new}:",
                krate.name,
                missing.len()
            );
            for line in &missing {
                eprintln!("  - {line}");
            }
            let format = json["format_version"].to_string();
            if format != baseline.format {
                eprintln!("  (the listing was taken with rustdoc JSON format {}, this toolchain writes {format}: if only the spelling changed, take the listing again at its commit with `cargo xtask api --bless --at {}`)", baseline.format, baseline.commit);
            }
            failed.push(krate.name.clone());
        }
    }
    if !failed.is_empty() {
        bail!(
            "breaking changes without a version bump in {}: bump the version (0.x: the minor) and add CHANGELOG migration rows, or keep the old API",
            failed.join(", ")
        );
    }
    Ok(())
}

fn bless(root: &Path, rev: Option<&str>) -> Result<()> {
    let worktree = rev.map(|rev| Worktree::add(root, rev)).transpose()?;
    let (tree, commit, target) = match &worktree {
        // Its own target dir: the same crate names at other sources would
        // otherwise share (and overwrite) one JSON file.
        Some(w) => (
            w.path(),
            w.commit.clone(),
            target_dir(root).join("api-baseline"),
        ),
        None => (
            root.to_path_buf(),
            git(root, &["rev-parse", "HEAD"])?,
            target_dir(root),
        ),
    };
    let then = published(&tree.join("Cargo.toml"))?;
    std::fs::create_dir_all(root.join("api")).context("creating api/")?;
    for now in published(&root.join("Cargo.toml"))? {
        let Some(old) = then.iter().find(|k| k.name == now.name) else {
            println!("{}: not published at {commit}: no listing", now.name);
            continue;
        };
        let features = old.features_known_of(&now.docs_features);
        let krate = Published {
            docs_cargo_args: now.docs_cargo_args.clone(),
            ..old.clone()
        };
        let json = rustdoc::json(&tree, &target, &krate, &features)?;
        let lines: BTreeSet<String> = listing::listing(&json);
        let baseline = Baseline {
            krate: krate.name.clone(),
            version: krate.version.clone(),
            commit: commit.clone(),
            format: json["format_version"].to_string(),
            features,
            lines,
        };
        let file = listing_file(root, &krate.name);
        std::fs::write(&file, baseline.to_text())
            .with_context(|| format!("writing {}", file.display()))?;
        println!(
            "{}: {} lines of {} written to {}",
            krate.name,
            baseline.lines.len(),
            krate.version,
            file.display()
        );
    }
    Ok(())
}
