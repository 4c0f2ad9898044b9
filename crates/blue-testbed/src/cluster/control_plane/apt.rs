//! Debian's apt as provisioning uses it: apt-get with retries while
//! another apt holds the lock, and the deb-src entries that the
//! `kubernetes` source package needs.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::Duration;

use anyhow::{bail, Result};

use super::command::{as_root, run_logged};

const DEB_SRC_FILE: &str = "/etc/apt/sources.list.d/blue-deb-src.sources";

/// apt-get with retries while another apt/dpkg holds the lock.
pub fn apt(sudo: bool, args: &[&str], log: &Path) -> Result<()> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut cmd = as_root(sudo, "env");
        cmd.args(["DEBIAN_FRONTEND=noninteractive", "apt-get"]);
        cmd.args(["-q", "-o", "DPkg::Lock::Timeout=600"]).args(args);
        match run_logged(&mut cmd, log) {
            Ok(()) => return Ok(()),
            Err(err) => {
                let text = fs::read_to_string(log).unwrap_or_default();
                let locked = text.contains("Could not get lock") || text.contains("Unable to lock");
                if !locked || attempt >= 10 {
                    return Err(err);
                }
                println!("               apt is locked by another process, retrying in 15s");
                thread::sleep(Duration::from_secs(15));
            }
        }
    }
}

/// True when the source index lists a kubernetes source package.
pub fn has_source_index(logs: &Path) -> Result<bool> {
    let out = Command::new("apt-cache")
        .args(["showsrc", "kubernetes"])
        .stderr(fs::File::create(logs.join("apt-cache.log"))?)
        .output()?;
    Ok(out.status.success() && !out.stdout.is_empty())
}

/// Adds deb-src entries mirroring the existing `deb` ones (written in
/// `work`, then copied as root). Returns whether anything was written.
pub fn ensure_deb_src(sudo: bool, work: &Path) -> Result<bool> {
    let mut paths: Vec<PathBuf> = fs::read_dir("/etc/apt/sources.list.d")
        .into_iter()
        .flatten()
        .filter_map(|e| Some(e.ok()?.path()))
        .collect();
    paths.sort();
    paths.insert(0, PathBuf::from("/etc/apt/sources.list"));
    let files: Vec<(String, String)> = paths
        .iter()
        .filter_map(|p| Some((p.display().to_string(), fs::read_to_string(p).ok()?)))
        .collect();
    match plan_deb_src(&files) {
        DebSrc::Present(name) => {
            println!("               deb-src already configured in {name}");
            Ok(false)
        }
        DebSrc::Write(path, content) => {
            let draft = work.join("deb-src");
            fs::write(&draft, content)?;
            let mut cp = as_root(sudo, "cp");
            run_logged(cp.arg(&draft).arg(&path), &work.join("cp.log"))?;
            println!("               wrote {}", path.display());
            Ok(true)
        }
        DebSrc::NoDebSources => bail!(
            "found no Debian `deb` apt sources to mirror as deb-src; add deb-src entries by hand"
        ),
    }
}

#[derive(Debug, PartialEq, Eq)]
enum DebSrc {
    /// Some enabled source already has deb-src (file name).
    Present(String),
    /// Write this file.
    Write(PathBuf, String),
    NoDebSources,
}

/// Decides, from `(file name, content)` pairs of apt source files, what
/// deb-src file to write: deb822 stanzas (`*.sources`) are copied with
/// `Types: deb-src`; one-line entries (`*.list`) become `deb-src` lines.
fn plan_deb_src(files: &[(String, String)]) -> DebSrc {
    let mut deb822 = String::new();
    let mut one_line = String::new();
    for (name, text) in files {
        if name.ends_with(".sources") {
            for stanza in text.split("\n\n") {
                let types: Vec<&str> = stanza
                    .lines()
                    .find_map(|l| l.trim().strip_prefix("Types:"))
                    .unwrap_or("")
                    .split_whitespace()
                    .collect();
                let disabled = stanza
                    .lines()
                    .any(|l| l.trim().eq_ignore_ascii_case("enabled: no"));
                if disabled {
                    continue;
                }
                if types.contains(&"deb-src") {
                    return DebSrc::Present(name.clone());
                }
                if types.contains(&"deb") {
                    for line in stanza.lines().filter(|l| !l.trim().is_empty()) {
                        if line.trim().starts_with("Types:") {
                            deb822.push_str("Types: deb-src\n");
                        } else {
                            deb822.push_str(line);
                            deb822.push('\n');
                        }
                    }
                    deb822.push('\n');
                }
            }
        } else if name.ends_with(".list") || name.ends_with("/sources.list") {
            for line in text.lines().map(str::trim) {
                if line.starts_with("deb-src ") {
                    return DebSrc::Present(name.clone());
                }
                if let Some(rest) = line.strip_prefix("deb ") {
                    one_line.push_str(&format!("deb-src {rest}\n"));
                }
            }
        }
    }
    if !deb822.is_empty() {
        DebSrc::Write(PathBuf::from(DEB_SRC_FILE), deb822)
    } else if !one_line.is_empty() {
        DebSrc::Write(PathBuf::from(DEB_SRC_FILE).with_extension("list"), one_line)
    } else {
        DebSrc::NoDebSources
    }
}

#[cfg(test)]
mod tests {
    use super::{plan_deb_src, DebSrc};
    use std::path::PathBuf;

    const DEBIAN_SOURCES: &str = "Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
";

    fn files(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect()
    }

    #[test]
    fn deb822_sources_are_mirrored_as_deb_src() {
        let plan = plan_deb_src(&files(&[(
            "/etc/apt/sources.list.d/debian.sources",
            DEBIAN_SOURCES,
        )]));
        let expected = DEBIAN_SOURCES.replace("Types: deb", "Types: deb-src") + "\n";
        assert_eq!(
            plan,
            DebSrc::Write(
                PathBuf::from("/etc/apt/sources.list.d/blue-deb-src.sources"),
                expected
            )
        );
    }

    #[test]
    fn existing_deb_src_is_detected() {
        let src = DEBIAN_SOURCES.replace("Types: deb", "Types: deb-src");
        let plan = plan_deb_src(&files(&[
            ("/etc/apt/sources.list.d/debian.sources", DEBIAN_SOURCES),
            ("/etc/apt/sources.list.d/blue-deb-src.sources", &src),
        ]));
        assert_eq!(
            plan,
            DebSrc::Present("/etc/apt/sources.list.d/blue-deb-src.sources".into())
        );
    }

    #[test]
    fn one_line_sources_become_deb_src_lines() {
        let plan = plan_deb_src(&files(&[(
            "/etc/apt/sources.list",
            "# comment\ndeb http://deb.debian.org/debian bookworm main\n",
        )]));
        assert_eq!(
            plan,
            DebSrc::Write(
                PathBuf::from("/etc/apt/sources.list.d/blue-deb-src.list"),
                "deb-src http://deb.debian.org/debian bookworm main\n".into()
            )
        );
        assert_eq!(plan_deb_src(&[]), DebSrc::NoDebSources);
    }
}
