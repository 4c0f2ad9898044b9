//! The migration's rules, without I/O or a clock: whether a pass may
//! start, what each page and each write leads to, whether a finished pass
//! counts, and the pace of the writes. The driver (`driver.rs`) performs
//! what these say and feeds back what happened.

use super::facts::{storage_version_hash, Facts};
use blue_kubernetes_client::{ErrorKind, ResourceDescriptor};
use std::collections::HashSet;

/// How many times in a row one request may fail with a passing error
/// (the server busy or unreachable) before the migration stops.
pub(crate) const MAX_ATTEMPTS: u32 = 8;
/// The first retry's wait; it doubles with each failure in a row.
const FIRST_RETRY_MS: u64 = 200;
/// The longest wait between two attempts.
const MAX_RETRY_MS: u64 = 10_000;

/// Whether a migration of `target` has work to do, from one reading.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// `storedVersions` holds the storage version alone: nothing is
    /// stored at another version.
    Done,
    /// Not yet (see [`Waiting`]).
    Wait(Waiting),
    /// A pass may start; what it must still find when it ends.
    Pass(Mark),
}

/// Why a migration waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Waiting {
    /// The CRD is not installed, or names no storage version.
    NotInstalled,
    /// The CRD stores at another version than the package: the new CRD
    /// is not applied yet (or was rolled back). Objects are only ever
    /// migrated to the version the package stores at.
    StoredElsewhere,
    /// The CRD says the package's version, but discovery still reports
    /// the hash of another: the API server may still write objects at the
    /// old version, so a rewrite now could store them there again.
    DiscoveryBehind,
}

/// What a pass started from: it counts only if the CRD's spec and the
/// storage version discovery reports are the same at its end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mark {
    pub(crate) storage: String,
    pub(crate) generation: i64,
    pub(crate) hash: String,
}

/// Whether a migration of `target` (the package's descriptor: its
/// version is the one it stores at) may start a pass, given `facts`.
pub(crate) fn start(target: &ResourceDescriptor, facts: &Facts) -> Start {
    let Some(storage) = &facts.storage else {
        return Start::Wait(Waiting::NotInstalled);
    };
    if *storage != target.version {
        return Start::Wait(Waiting::StoredElsewhere);
    }
    if facts.stored_versions == [storage.as_str()] {
        return Start::Done;
    }
    let expected = storage_version_hash(&target.group, storage, &target.kind);
    if facts.discovered_hash.as_deref() != Some(expected.as_str()) {
        return Start::Wait(Waiting::DiscoveryBehind);
    }
    Start::Pass(Mark {
        storage: storage.clone(),
        generation: facts.generation,
        hash: expected,
    })
}

/// What a finished pass leads to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// Every object was rewritten while the storage version held: write
    /// `stored_versions` to the CRD's status, guarded by
    /// `resource_version`.
    Retire {
        stored_versions: Vec<String>,
        resource_version: String,
    },
    /// Someone retired the old versions meanwhile.
    Done,
    /// The pass does not count: the CRD's spec or the storage version
    /// discovery reports changed while it ran. Start again.
    Again(Changed),
}

/// What changed under a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Changed {
    /// The CRD's spec (its generation): the storage flag may have moved
    /// and moved back.
    Spec,
    /// The `storageVersionHash` discovery reports.
    Hash,
}

/// Whether the pass started at `mark` counts, given `now` read after its
/// last write.
pub(crate) fn end(mark: &Mark, now: &Facts) -> End {
    if now.generation != mark.generation || now.storage.as_deref() != Some(&mark.storage) {
        return End::Again(Changed::Spec);
    }
    if now.discovered_hash.as_deref() != Some(mark.hash.as_str()) {
        return End::Again(Changed::Hash);
    }
    if now.stored_versions == [mark.storage.as_str()] {
        return End::Done;
    }
    End::Retire {
        stored_versions: vec![mark.storage.clone()],
        resource_version: now.resource_version.clone(),
    }
}

/// What one page of the list came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Listed {
    /// A page of `items`, with `remaining` more after it when the API
    /// server says (`metadata.remainingItemCount`).
    Page { items: u64, remaining: Option<u64> },
    /// The list failed.
    Failed(ErrorKind),
}

/// What one rewrite came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Written {
    /// The write landed with a new resourceVersion: the object was stored
    /// at another version and is now at the storage version.
    Rewritten,
    /// The write landed without a new resourceVersion: the object was
    /// stored at the storage version already, and the API server wrote
    /// nothing.
    Current,
    /// Conflict: the object changed since it was listed, so it was
    /// written (at the storage version) after the pass started.
    Conflict,
    /// Deleted since it was listed.
    Gone,
    /// The write failed.
    Failed(ErrorKind),
}

/// What to do after a page or a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// On to the next object (or page).
    Go,
    /// The same request again after `after_ms`.
    Retry { after_ms: u64 },
    /// List again from the first page: the continue token expired (the
    /// API server compacts what a token reads, every 5 minutes by
    /// default). The pass goes on: objects it already wrote are skipped
    /// ([`Pass::skips`]), so a pass longer than a token's life still ends.
    Relist,
    /// The migration cannot go on: a refusal no retry changes.
    Stop(ErrorKind),
}

/// The counts of one pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) rewritten: u64,
    pub(crate) current: u64,
    pub(crate) conflicts: u64,
    pub(crate) gone: u64,
    /// Objects listed but not written yet, and those the API server
    /// said remain after the last page read.
    pub(crate) left: u64,
}

/// Failures in a row of one request, and what each leads to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Attempts {
    failures: u32,
}

impl Attempts {
    /// The request succeeded: the next failure is the first again.
    pub(crate) fn succeeded(&mut self) {
        self.failures = 0;
    }

    /// The request failed with `kind`: retried with a growing wait while
    /// the error may pass, else the migration stops.
    pub(crate) fn failed(&mut self, kind: ErrorKind) -> Next {
        let passing = matches!(
            kind,
            ErrorKind::Timeout | ErrorKind::Unavailable | ErrorKind::Other
        );
        self.failures += 1;
        if !passing || self.failures >= MAX_ATTEMPTS {
            return Next::Stop(kind);
        }
        let after_ms = FIRST_RETRY_MS.saturating_mul(1 << (self.failures - 1).min(16));
        Next::Retry {
            after_ms: after_ms.min(MAX_RETRY_MS),
        }
    }
}

/// One pass over every object of the kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pass {
    pub(crate) mark: Mark,
    pub(crate) tally: Tally,
    attempts: Attempts,
    /// The uids of the objects this pass settled (written, found current,
    /// rewritten by someone else, gone): a relist skips them. Each was
    /// written after the storage version took effect, so it is stored
    /// there whatever happens to it later. About 80 bytes an object.
    settled: HashSet<String>,
    /// Settled objects met again since the last (re)list.
    met_again: u64,
}

impl Pass {
    pub(crate) fn new(mark: Mark) -> Self {
        Self {
            mark,
            tally: Tally::default(),
            attempts: Attempts::default(),
            settled: HashSet::new(),
            met_again: 0,
        }
    }

    /// Whether the listed object `uid` was settled by this pass before a
    /// relist: it is skipped, not written again.
    pub(crate) fn skips(&mut self, uid: Option<&str>) -> bool {
        let skip = uid.is_some_and(|uid| self.settled.contains(uid));
        self.met_again += u64::from(skip);
        skip
    }

    /// A page was read (or not); `items` counts those it does not skip.
    pub(crate) fn listed(&mut self, listed: Listed) -> Next {
        match listed {
            Listed::Page { items, remaining } => {
                self.attempts.succeeded();
                // After a relist, the settled objects not met again yet
                // are still ahead among the remaining ones.
                let ahead = (self.settled.len() as u64).saturating_sub(self.met_again);
                self.tally.left = items + remaining.unwrap_or(0).saturating_sub(ahead);
                Next::Go
            }
            Listed::Failed(ErrorKind::Gone) => {
                self.attempts.succeeded();
                self.met_again = 0;
                Next::Relist
            }
            Listed::Failed(kind) => self.attempts.failed(kind),
        }
    }

    /// The write of the object `uid` came to `written`.
    pub(crate) fn written(&mut self, uid: Option<&str>, written: Written) -> Next {
        let count = match written {
            Written::Rewritten => &mut self.tally.rewritten,
            Written::Current => &mut self.tally.current,
            Written::Conflict => &mut self.tally.conflicts,
            Written::Gone => &mut self.tally.gone,
            Written::Failed(kind) => return self.attempts.failed(kind),
        };
        *count += 1;
        if let Some(uid) = uid {
            self.settled.insert(uid.to_owned());
        }
        self.attempts.succeeded();
        self.tally.left = self.tally.left.saturating_sub(1);
        Next::Go
    }
}

/// The writes' pace: at most `per_second` a second, evenly spaced (no
/// bursts: a busy API server sees a steady trickle).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pace {
    interval_ms: u64,
    next_ms: Option<u64>,
}

impl Pace {
    /// `per_second` writes a second (at least one).
    pub(crate) fn new(per_second: u32) -> Self {
        Self {
            interval_ms: 1000 / u64::from(per_second.max(1)),
            next_ms: None,
        }
    }

    /// How long to wait at `now_ms` before the next write; the write is
    /// then taken as sent.
    pub(crate) fn wait_ms(&mut self, now_ms: u64) -> u64 {
        let at = self.next_ms.map_or(now_ms, |next| next.max(now_ms));
        self.next_ms = Some(at + self.interval_ms);
        at - now_ms
    }
}

#[cfg(test)]
mod tests;
