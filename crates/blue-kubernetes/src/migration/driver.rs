//! The I/O of one kind's migration: it reads the CRD and discovery, lists
//! page by page, rewrites each object and retires the old versions, as
//! the decision (`decision.rs`) says, through the client crate.

use super::decision::{self, Attempts, End, Listed, Next, Pace, Pass, Start, Waiting, Written};
use super::error::MigrationError;
use super::facts::Facts;
use super::metrics::{MigrationMetrics, PassResult};
use super::page::{object_name, object_path, Page};
use crate::clock::Clock;
use blue_kubernetes_client::{ApiPath, ApiRequest, Client, Error, Method, ResourceDescriptor};
use serde_json::Value;
use std::time::Duration;

/// How often progress is logged while a pass runs.
const PROGRESS_EVERY_MS: u64 = 10_000;

/// What one kind's migration came to, for the caller holding the lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum KindOutcome {
    /// `storedVersions` holds the storage version alone.
    Done,
    /// Not yet: ask again later.
    Wait(Waiting),
    /// The lease was lost or the process asked to stop, mid-pass.
    Interrupted,
}

/// One kind's migration, through a client whose writes are fenced.
pub(crate) struct Driver<'a> {
    pub(crate) client: &'a dyn Client,
    pub(crate) target: &'a ResourceDescriptor,
    pub(crate) page_size: u32,
    pub(crate) pace: Pace,
    pub(crate) clock: &'a Clock,
    pub(crate) metrics: &'a MigrationMetrics,
    /// Whether a write may still be sent: the lease is held and nobody
    /// asked to stop.
    pub(crate) may_write: &'a (dyn Fn() -> bool + Send + Sync),
}

/// A finished pass, or why it did not finish.
enum PassEnd {
    Finished(Pass),
    Interrupted,
}

impl Driver<'_> {
    fn crd_name(&self) -> String {
        self.target.qualified_plural()
    }

    fn failed(&self, what: impl Into<String>, error: &Error) -> MigrationError {
        MigrationError::Request {
            kind: self.crd_name(),
            what: what.into(),
            error: error.kind(),
        }
    }

    /// Migrates the kind until its old versions are retired, or says why
    /// it cannot yet.
    pub(crate) async fn run(&self) -> Result<KindOutcome, MigrationError> {
        let kind = self.crd_name();
        loop {
            let (facts, _) = self.read().await?;
            let mark = match decision::start(self.target, &facts) {
                Start::Done => return Ok(KindOutcome::Done),
                Start::Wait(why) => return Ok(KindOutcome::Wait(why)),
                Start::Pass(mark) => mark,
            };
            tracing::info!(
                kind, storage = mark.storage, stored_versions = ?facts.stored_versions,
                "storage migration: a pass over every object begins"
            );
            let pass = match self.pass(Pass::new(mark)).await? {
                PassEnd::Finished(pass) => pass,
                PassEnd::Interrupted => {
                    self.metrics.pass(&kind, PassResult::Stopped);
                    return Ok(KindOutcome::Interrupted);
                }
            };
            let t = pass.tally;
            tracing::info!(
                kind,
                rewritten = t.rewritten,
                current = t.current,
                conflicts = t.conflicts,
                gone = t.gone,
                "storage migration: the pass wrote every object"
            );
            match self.retire(&pass).await? {
                Some(outcome) => return Ok(outcome),
                None => self.metrics.pass(&kind, PassResult::Restarted),
            }
        }
    }

    /// After a finished pass: the old versions removed from
    /// `status.storedVersions` if the pass counts (`None`: it does not,
    /// start over).
    async fn retire(&self, pass: &Pass) -> Result<Option<KindOutcome>, MigrationError> {
        let kind = self.crd_name();
        let mut conflicts = 0;
        loop {
            let (now, crd) = self.read().await?;
            let (stored_versions, resource_version) = match decision::end(&pass.mark, &now) {
                End::Done => {
                    self.metrics.pass(&kind, PassResult::Completed);
                    return Ok(Some(KindOutcome::Done));
                }
                End::Again(changed) => {
                    tracing::info!(kind, ?changed, "storage migration: the storage version or the CRD changed during the pass; it does not count, starting over");
                    return Ok(None);
                }
                End::Retire {
                    stored_versions,
                    resource_version,
                } => (stored_versions, resource_version),
            };
            if !(self.may_write)() {
                self.metrics.pass(&kind, PassResult::Stopped);
                return Ok(Some(KindOutcome::Interrupted));
            }
            let mut crd = crd;
            crd["metadata"]["resourceVersion"] = Value::from(resource_version);
            crd["status"]["storedVersions"] = Value::from(stored_versions.clone());
            let path = ApiPath::cluster(
                "apiextensions.k8s.io",
                "v1",
                "customresourcedefinitions",
                Some(&kind),
                Some("status"),
            )
            .map_err(|e| self.failed("naming the CRD", &e))?;
            let request = ApiRequest::new(Method::Put, path).with_body(crd);
            match self.client.send_raw(request).await {
                Ok(_) => {
                    self.metrics.pass(&kind, PassResult::Completed);
                    tracing::info!(kind, ?stored_versions, "storage migration complete: the old versions are retired from the CRD's status.storedVersions");
                    return Ok(Some(KindOutcome::Done));
                }
                Err(Error::Fenced { .. }) => {
                    self.metrics.pass(&kind, PassResult::Stopped);
                    return Ok(Some(KindOutcome::Interrupted));
                }
                // The CRD changed since it was read: judge the pass again
                // (a CRD that never holds still makes the pass start over).
                Err(e) if e.is_conflict() && conflicts < decision::MAX_ATTEMPTS => {
                    conflicts += 1;
                }
                Err(e) if e.is_conflict() => return Ok(None),
                Err(e) => return Err(self.failed("updating the CRD's status.storedVersions", &e)),
            }
        }
    }

    /// One pass: every page, every object rewritten in turn.
    async fn pass(&self, mut pass: Pass) -> Result<PassEnd, MigrationError> {
        let kind = self.crd_name();
        let mut pace = self.pace;
        let mut continue_token: Option<String> = None;
        let mut logged = Progress {
            at_ms: (self.clock)(),
            tally: pass.tally,
        };
        loop {
            let page = loop {
                let (next, page) = match self.list(continue_token.as_deref()).await {
                    Ok(mut page) => {
                        page.items.retain(|item| !pass.skips(uid(item)));
                        (pass.listed(page.listed()), Some(page))
                    }
                    Err(e) => (pass.listed(Listed::Failed(e.kind())), None),
                };
                match (next, page) {
                    (Next::Go, Some(page)) => break page,
                    (Next::Retry { after_ms }, _) => sleep(after_ms).await,
                    (Next::Relist, _) => {
                        tracing::info!(
                            kind,
                            "storage migration: a continue token expired; listing again, \
                             skipping the objects this pass wrote"
                        );
                        continue_token = None;
                    }
                    (next, _) => return Err(self.stopped("listing", next)),
                }
            };
            for item in &page.items {
                loop {
                    if !(self.may_write)() {
                        return Ok(PassEnd::Interrupted);
                    }
                    sleep(pace.wait_ms((self.clock)())).await;
                    let before = pass.tally;
                    let written = match self.rewrite(item).await {
                        Some(written) => written,
                        None => return Ok(PassEnd::Interrupted),
                    };
                    let next = pass.written(uid(item), written);
                    self.metrics.add(&kind, &before, &pass.tally);
                    match next {
                        Next::Go => break,
                        Next::Retry { after_ms } => sleep(after_ms).await,
                        // A write never relists; only a list does.
                        Next::Stop(_) | Next::Relist => {
                            let what = format!("rewriting {}", object_name(item));
                            return Err(self.stopped(&what, next));
                        }
                    }
                }
                logged.progress(&kind, (self.clock)(), &pass);
            }
            match page.continue_token {
                Some(token) => continue_token = Some(token),
                None => return Ok(PassEnd::Finished(pass)),
            }
        }
    }

    fn stopped(&self, what: &str, next: Next) -> MigrationError {
        let error = match next {
            Next::Stop(kind) => kind,
            _ => blue_kubernetes_client::ErrorKind::Other,
        };
        MigrationError::Request {
            kind: self.crd_name(),
            what: what.to_owned(),
            error,
        }
    }

    /// The write of `item` unchanged, guarded by its resourceVersion;
    /// `None` when the fence refused it.
    async fn rewrite(&self, item: &Value) -> Option<Written> {
        let path = match object_path(self.target, item) {
            Ok(path) => path,
            Err(e) => return Some(Written::Failed(e.kind())),
        };
        let mut body = item.clone();
        body["apiVersion"] = Value::from(self.target.api_version());
        body["kind"] = Value::from(self.target.kind.as_str());
        let request = ApiRequest::new(Method::Put, path).with_body(body);
        let before = item["metadata"]["resourceVersion"].as_str();
        Some(match self.client.send_raw(request).await {
            Ok(answer) => {
                let body = answer.body.unwrap_or_default();
                match body["metadata"]["resourceVersion"].as_str() == before {
                    true => Written::Current,
                    false => Written::Rewritten,
                }
            }
            Err(Error::Fenced { .. }) => return None,
            Err(e) if e.is_conflict() => Written::Conflict,
            Err(e) if e.kind() == blue_kubernetes_client::ErrorKind::NotFound => Written::Gone,
            Err(e) => Written::Failed(e.kind()),
        })
    }

    /// The CRD and discovery of the package's version, retried while
    /// their errors may pass.
    pub(crate) async fn read(&self) -> Result<(Facts, Value), MigrationError> {
        let mut attempts = Attempts::default();
        loop {
            let error = match self.read_once().await {
                Ok(read) => return Ok(read),
                Err(e) => e,
            };
            match attempts.failed(error.kind()) {
                Next::Retry { after_ms } => sleep(after_ms).await,
                _ => return Err(self.failed("reading the CRD and discovery", &error)),
            }
        }
    }

    async fn read_once(&self) -> Result<(Facts, Value), Error> {
        let crds = ResourceDescriptor::new(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
        )
        .cluster_scoped();
        let crd = self
            .client
            .get_resource(&crds, "", &self.crd_name())
            .await?;
        let crd = crd.unwrap_or_default();
        let group = ApiPath::new(["apis", &self.target.group, &self.target.version])?;
        let discovery = match self.client.send_raw(ApiRequest::get(group)).await {
            Ok(answer) => answer.body,
            // Not served (yet): no hash to compare.
            Err(e) if e.kind() == blue_kubernetes_client::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let facts = Facts::read(&crd, discovery.as_ref(), &self.target.plural);
        Ok((facts, crd))
    }

    /// One page of every object of the kind, in every namespace, read at
    /// the storage version from etcd (no resourceVersion: a consistent
    /// list, not the watch cache's).
    async fn list(&self, continue_token: Option<&str>) -> Result<Page, Error> {
        let t = self.target;
        let mut path = ApiPath::cluster(&t.group, &t.version, &t.plural, None, None)?
            .with_query("limit", &self.page_size.to_string());
        if let Some(token) = continue_token {
            path = path.with_query("continue", token);
        }
        let answer = self.client.send_raw(ApiRequest::get(path)).await?;
        Ok(Page::of(answer.body.unwrap_or_default()))
    }
}

/// An object's uid (every object the API server lists has one).
fn uid(item: &Value) -> Option<&str> {
    item["metadata"]["uid"].as_str()
}

/// The last progress line's time and counts.
struct Progress {
    at_ms: u64,
    tally: decision::Tally,
}

impl Progress {
    /// Logs progress at most every [`PROGRESS_EVERY_MS`].
    fn progress(&mut self, kind: &str, now_ms: u64, pass: &Pass) {
        if now_ms.saturating_sub(self.at_ms) < PROGRESS_EVERY_MS {
            return;
        }
        let t = pass.tally;
        let written = (t.rewritten + t.current + t.conflicts + t.gone)
            - (self.tally.rewritten + self.tally.current + self.tally.conflicts + self.tally.gone);
        tracing::info!(
            kind,
            rewritten = t.rewritten,
            current = t.current,
            conflicts = t.conflicts,
            gone = t.gone,
            left = t.left,
            since_last = written,
            "storage migration in progress"
        );
        *self = Progress {
            at_ms: now_ms,
            tally: t,
        };
    }
}

async fn sleep(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

#[cfg(test)]
mod tests;
