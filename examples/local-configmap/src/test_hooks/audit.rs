//! The `audit-file` test hook: one line when each `converge` or `delete`
//! starts and one when it ends, so a test can prove from the file alone
//! that no identity ran in two replicas at once ([`overlaps`]).
//!
//! A line is `<unix nanos> <replica> <identity hash> <callback> <event>
//! <start|end>`, space-separated: the wall clock (comparable across
//! processes on one host, unlike a monotonic clock), the replica's
//! identity, the package's state identity hash (what sharding splits by),
//! the callback, the event (`create`, `stop`, `delete`) and the phase. It
//! holds no configuration value and no data.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// Whether a line marks a callback's start or its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The callback began (before any effect).
    Start,
    /// The callback returned (after every effect), successfully or not.
    End,
}

impl Phase {
    /// The line's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Start => "start",
            Phase::End => "end",
        }
    }
}

/// One line of the audit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEntry {
    /// Wall-clock time, nanoseconds since the Unix epoch.
    pub unix_nanos: u128,
    /// The replica's identity (the Lease holder identity).
    pub replica: String,
    /// The resource's state identity hash.
    pub identity: String,
    /// `converge` or `delete`.
    pub callback: String,
    /// `create`, `stop` or `delete`.
    pub event: String,
    /// Start or end.
    pub phase: Phase,
}

impl AuditEntry {
    /// The entry as one line, newline included.
    pub fn line(&self) -> String {
        format!(
            "{} {} {} {} {} {}\n",
            self.unix_nanos,
            self.replica,
            self.identity,
            self.callback,
            self.event,
            self.phase.as_str()
        )
    }
}

/// A line of an audit that is not an [`AuditEntry`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("audit line {line}: {problem}")]
pub struct AuditParseError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub problem: &'static str,
}

/// Every entry of an audit file's text, in file order; blank lines are
/// skipped. A line cut short (a writer killed mid-line cannot leave one:
/// each line is one `write`) is an error rather than silently dropped.
pub fn parse_audit(text: &str) -> Result<Vec<AuditEntry>, AuditParseError> {
    let mut entries = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let error = |problem| AuditParseError {
            line: index + 1,
            problem,
        };
        let fields: Vec<&str> = raw.split(' ').collect();
        let [nanos, replica, identity, callback, event, phase] = fields[..] else {
            return Err(error("expected 6 space-separated fields"));
        };
        if [replica, identity, callback, event]
            .iter()
            .any(|f| f.is_empty())
        {
            return Err(error("empty field"));
        }
        let unix_nanos = nanos.parse().map_err(|_| error("time is not unix nanos"))?;
        let phase = match phase {
            "start" => Phase::Start,
            "end" => Phase::End,
            _ => return Err(error("phase is neither start nor end")),
        };
        entries.push(AuditEntry {
            unix_nanos,
            replica: replica.to_string(),
            identity: identity.to_string(),
            callback: callback.to_string(),
            event: event.to_string(),
            phase,
        });
    }
    Ok(entries)
}

/// One callback run: from its start line to its end line (`None`: no end
/// line, e.g. the replica was killed; it counts as still running).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interval {
    /// The replica that ran it.
    pub replica: String,
    /// The identity it ran for.
    pub identity: String,
    /// Start, unix nanos.
    pub start: u128,
    /// End, unix nanos, if it ended.
    pub end: Option<u128>,
}

impl Interval {
    /// True when both ran at some instant: touching (one ends exactly when
    /// the other starts) is not overlapping.
    fn overlaps(&self, other: &Interval) -> bool {
        let before = |a: &Interval, b: &Interval| a.end.is_some_and(|end| end <= b.start);
        !before(self, other) && !before(other, self)
    }
}

/// The callback runs in `entries`: each end line closes the earliest open
/// start of the same replica and identity. Ordered by start.
pub fn intervals(entries: &[AuditEntry]) -> Vec<Interval> {
    let mut runs: Vec<Interval> = Vec::new();
    for entry in entries {
        match entry.phase {
            Phase::Start => runs.push(Interval {
                replica: entry.replica.clone(),
                identity: entry.identity.clone(),
                start: entry.unix_nanos,
                end: None,
            }),
            Phase::End => {
                let open = runs.iter_mut().find(|r| {
                    r.end.is_none() && r.replica == entry.replica && r.identity == entry.identity
                });
                if let Some(run) = open {
                    run.end = Some(entry.unix_nanos);
                }
            }
        }
    }
    runs.sort_by_key(|r| r.start);
    runs
}

/// Adds an end line at `unix_nanos` for every callback of `replica` left
/// without one: what a test that SIGKILLed `replica` at that time knows
/// (its callbacks ended by then, at the latest). Without it, a killed
/// replica's last callbacks run forever and overlap every later run of
/// their identities.
pub fn close_killed(entries: &mut Vec<AuditEntry>, replica: &str, unix_nanos: u128) {
    let open: Vec<Interval> = intervals(entries)
        .into_iter()
        .filter(|r| r.replica == replica && r.end.is_none())
        .collect();
    entries.extend(open.into_iter().map(|r| AuditEntry {
        unix_nanos,
        replica: r.replica,
        identity: r.identity,
        callback: "killed".into(),
        event: "killed".into(),
        phase: Phase::End,
    }));
}

/// Every pair of runs of one identity by two different replicas that
/// overlap in time: empty is the proof that no identity was ever
/// dispatched in two processes at once.
pub fn overlaps(entries: &[AuditEntry]) -> Vec<(Interval, Interval)> {
    let runs = intervals(entries);
    let mut found = Vec::new();
    for (i, a) in runs.iter().enumerate() {
        for b in &runs[i + 1..] {
            if a.identity == b.identity && a.replica != b.replica && a.overlaps(b) {
                found.push((a.clone(), b.clone()));
            }
        }
    }
    found
}

/// The audit file of one replica, shared with the others.
#[derive(Debug)]
pub struct AuditLog {
    file: File,
    replica: String,
}

impl AuditLog {
    /// Opens (creating) `path` in append mode for `replica`, which must be
    /// one non-empty field of a line (no whitespace).
    pub fn open(path: &Path, replica: impl Into<String>) -> std::io::Result<Self> {
        let replica = replica.into();
        if replica.is_empty() || replica.contains(char::is_whitespace) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the replica identity must be non-empty without whitespace for the audit",
            ));
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Self { file, replica })
    }

    /// Appends one line, stamped now. The line is one `write` on a file
    /// opened with O_APPEND: on Linux such a write of a regular file moves
    /// to the end and writes in one step, so lines of several processes
    /// sharing the file never interleave (the lines are far below a page).
    /// Blocking, but one small local write: not worth a blocking thread.
    pub fn record(
        &self,
        identity: &str,
        callback: &str,
        event: &str,
        phase: Phase,
    ) -> std::io::Result<()> {
        let unix_nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let line = AuditEntry {
            unix_nanos,
            replica: self.replica.clone(),
            identity: identity.to_string(),
            callback: callback.to_string(),
            event: event.to_string(),
            phase,
        }
        .line();
        let written = (&self.file).write(line.as_bytes())?;
        if written != line.len() {
            return Err(std::io::Error::other("audit line written in part"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
