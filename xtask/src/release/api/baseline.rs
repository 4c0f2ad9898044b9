//! The committed listing of a crate's public API at its last release, and
//! the rule it enforces: a line of it may go only with a version that
//! Cargo treats as incompatible (a major bump; a minor one below 1.0).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use anyhow::{bail, Context, Result};

/// A listing as committed: the version and commit it was taken at, and
/// its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Baseline {
    pub krate: String,
    pub version: String,
    pub commit: String,
    pub format: String,
    pub features: Vec<String>,
    pub lines: BTreeSet<String>,
}

impl Baseline {
    /// The file's text: a header saying what it is, then one line per item.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "# The public API of {} {}, listed by `cargo xtask api` from rustdoc's\n\
             # JSON at the release commit below. `cargo xtask api` fails when a line\n\
             # here is gone while the crate's version is still compatible with this\n\
             # one. Taken again at each release: `cargo xtask api --bless --at <commit>`.\n",
            self.krate, self.version
        );
        let _ = writeln!(s, "version {}", self.version);
        let _ = writeln!(s, "commit {}", self.commit);
        let _ = writeln!(s, "rustdoc-json-format {}", self.format);
        let _ = writeln!(s, "features {}", self.features.join(","));
        s.push('\n');
        for line in &self.lines {
            s.push_str(line);
            s.push('\n');
        }
        s
    }

    /// Reads a file written by [`Baseline::to_text`].
    pub fn parse(krate: &str, text: &str) -> Result<Self> {
        let mut baseline = Baseline {
            krate: krate.to_string(),
            version: String::new(),
            commit: String::new(),
            format: String::new(),
            features: Vec::new(),
            lines: BTreeSet::new(),
        };
        let mut in_header = true;
        for line in text.lines() {
            if line.starts_with('#') {
                continue;
            }
            if line.is_empty() {
                in_header = false;
                continue;
            }
            if !in_header {
                baseline.lines.insert(line.to_string());
                continue;
            }
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            match key {
                "version" => baseline.version = value.to_string(),
                "commit" => baseline.commit = value.to_string(),
                "rustdoc-json-format" => baseline.format = value.to_string(),
                "features" => {
                    baseline.features = value
                        .split(',')
                        .filter(|f| !f.is_empty())
                        .map(String::from)
                        .collect()
                }
                other => bail!("unknown header line `{other}` in the API listing of {krate}"),
            }
        }
        if baseline.version.is_empty() {
            bail!("the API listing of {krate} names no version");
        }
        Ok(baseline)
    }

    /// The baseline's lines the current API no longer has.
    pub fn missing_from(&self, current: &BTreeSet<String>) -> Vec<&str> {
        self.lines
            .iter()
            .filter(|l| !current.contains(*l))
            .map(String::as_str)
            .collect()
    }
}

/// Whether Cargo would let a user's `^old` requirement pick `new`: the
/// same major version, below 1.0 the same minor, below 0.1 the same patch.
/// A line of the API may go only when this is false.
pub fn compatible(old: &str, new: &str) -> Result<bool> {
    let (a, b) = (numbers(old)?, numbers(new)?);
    Ok(match a {
        (0, 0, _) => a == b,
        (0, minor, _) => b.0 == 0 && b.1 == minor,
        (major, _, _) => b.0 == major,
    })
}

fn numbers(version: &str) -> Result<(u64, u64, u64)> {
    let core = version.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<u64> = core
        .split('.')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .with_context(|| format!("version `{version}` is not MAJOR.MINOR.PATCH"))?;
    match parts[..] {
        [major, minor, patch] => Ok((major, minor, patch)),
        _ => bail!("version `{version}` is not MAJOR.MINOR.PATCH"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn baseline(lines: &[&str]) -> Baseline {
        Baseline {
            krate: "demo".into(),
            version: "0.2.0".into(),
            commit: "576071e".into(),
            format: "57".into(),
            features: vec!["runner".into(), "kube".into()],
            lines: lines.iter().map(|l| l.to_string()).collect(),
        }
    }

    #[test]
    fn a_listing_reads_back_as_written() {
        let written = baseline(&[
            "fn render(&[core::option::Option<alloc::string::String>]) -> alloc::string::String",
            "mod a",
        ]);
        assert_eq!(
            Baseline::parse("demo", &written.to_text()).unwrap(),
            written
        );
    }

    #[test]
    fn a_removed_or_changed_line_is_missing_and_an_added_one_is_not() {
        let old = baseline(&["fn a() -> u8", "fn b()"]);
        let current: BTreeSet<String> = ["fn a() -> u16", "fn c()", "fn b()"]
            .map(String::from)
            .into();
        assert_eq!(old.missing_from(&current), vec!["fn a() -> u8"]);
    }

    #[test]
    fn below_one_only_a_minor_bump_allows_a_break() {
        assert!(compatible("0.2.0", "0.2.0").unwrap());
        assert!(compatible("0.2.0", "0.2.7").unwrap());
        assert!(!compatible("0.2.0", "0.3.0").unwrap());
        assert!(!compatible("0.2.0", "1.0.0").unwrap());
        assert!(!compatible("0.0.3", "0.0.4").unwrap());
    }

    #[test]
    fn from_one_on_only_a_major_bump_allows_a_break() {
        assert!(compatible("1.2.0", "1.9.0").unwrap());
        assert!(!compatible("1.2.0", "2.0.0").unwrap());
        assert!(compatible("1.2.0", "1.3.0-rc.1").unwrap());
    }

    #[test]
    fn a_version_that_is_not_three_numbers_is_refused() {
        assert!(compatible("0.2", "0.3.0").is_err());
        assert!(Baseline::parse("demo", "commit abc\n\nfn a()\n").is_err());
    }
}
