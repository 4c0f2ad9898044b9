//! Storage migration: every object of a kind stored anew at the version
//! its package stores at, then the old versions retired from the CRD's
//! `status.storedVersions`, so a later release may drop them.
//!
//! The API cannot say at which version an object is stored, so a
//! migration rewrites every object of the kind: a paginated list (from
//! etcd, in every namespace) and, for each object, a write of it
//! unchanged guarded by its resourceVersion. The API server encodes the
//! write at the storage version; one already stored there is not written
//! at all (its resourceVersion stays, no watch event). A Conflict means
//! someone wrote the object after the pass read it, which stored it at
//! the storage version already: counted and skipped. Writes are paced
//! ([`MigrationSettings::rate_per_second`], 50 a second by default).
//!
//! A pass starts only once the CRD stores at the package's version and
//! discovery reports that version's `storageVersionHash` (Kubernetes
//! reports it for custom resources too: the API server writes new
//! objects at that version from then on), and it counts only if the
//! CRD's spec (its generation) and the discovered hash are the same when
//! it ends. Then `status.storedVersions` is set to the storage version
//! alone, guarded by the CRD's resourceVersion.
//!
//! One migration runs at a time: it holds a Lease of its own (by default
//! `<operator>-storage-migration` in the operator's namespace), and every
//! write it sends is fenced by that Lease, in the term it was won in. A
//! crash or a lost Lease ends the pass; the next holder starts from the
//! first page (a pass is idempotent: what was rewritten already is a
//! no-op the second time).
//!
//! ```no_run
//! use blue_kubernetes::migration::{Migration, MigrationSettings};
//! use blue_kubernetes::telemetry::Metrics;
//! use blue_kubernetes_client::{Client, ResourceDescriptor};
//! # async fn demo(client: std::sync::Arc<dyn Client>) -> Result<(), Box<dyn std::error::Error>> {
//! let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
//! let settings = MigrationSettings::new("widget-operator-storage-migration", "infra");
//! let migration = Migration::new(client, settings, &Metrics::new())?;
//! let (_stop, stopped) = tokio::sync::watch::channel(false);
//! migration.run(&[widgets], stopped).await?; // storedVersions: ["v1"]
//! # Ok(()) }
//! ```

mod decision;
mod driver;
mod error;
mod facts;
mod lease;
mod manifests;
mod metrics;
mod page;

pub use error::MigrationError;
pub use manifests::{migration_manifests, MigrationManifests};

use crate::clock::{system_clock, Clock};
use crate::replicas::LeaderElectionConfig;
use crate::telemetry::Metrics;
use blue_kubernetes_client::{Client, ResourceDescriptor};
use decision::{Pace, Waiting};
use driver::{Driver, KindOutcome};
use lease::Held;
use metrics::MigrationMetrics;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Writes a second unless set: a steady trickle a busy API server
/// tolerates (on two cores, 100 reads a second cost it about a tenth of
/// a core; a write costs several reads), which migrates 10,000 objects
/// in under four minutes.
pub const DEFAULT_RATE_PER_SECOND: u32 = 50;

/// How a [`Migration`] runs.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MigrationSettings {
    /// The Lease that keeps one migration at a time, and fences its
    /// writes (its timings as for leader election).
    pub lease: LeaderElectionConfig,
    /// At most this many writes a second (default
    /// [`DEFAULT_RATE_PER_SECOND`]).
    pub rate_per_second: u32,
    /// Objects per list page (default 500).
    pub page_size: u32,
    /// While waiting for the CRD or discovery to show the new storage
    /// version, look again this often (default 5000 ms).
    pub wait_ms: u64,
}

impl MigrationSettings {
    /// Settings with the defaults, holding the Lease
    /// `lease_namespace/lease_name`.
    pub fn new(lease_name: impl Into<String>, lease_namespace: impl Into<String>) -> Self {
        Self {
            lease: LeaderElectionConfig::new(lease_name, lease_namespace),
            rate_per_second: DEFAULT_RATE_PER_SECOND,
            page_size: 500,
            wait_ms: 5_000,
        }
    }

    /// The default Lease name of `operator`'s migration:
    /// `<operator>-storage-migration`.
    pub fn lease_name_of(operator: &str) -> String {
        format!("{operator}-storage-migration")
    }
}

/// Migrates the storage of kinds, one migration at a time in the
/// cluster (see the module documentation).
pub struct Migration {
    client: Arc<dyn Client>,
    settings: MigrationSettings,
    metrics: MigrationMetrics,
    clock: Clock,
}

impl Migration {
    /// A migration through `client` (not fenced by anything else: it
    /// fences its own writes), its metrics registered into `metrics`
    /// (`blue_storage_migration_*`).
    pub fn new(
        client: Arc<dyn Client>,
        settings: MigrationSettings,
        metrics: &Metrics,
    ) -> Result<Self, MigrationError> {
        if settings.rate_per_second == 0 || settings.page_size == 0 {
            return Err(MigrationError::Settings(
                "the rate and the page size must be at least 1".into(),
            ));
        }
        settings
            .lease
            .validate()
            .map_err(|e| MigrationError::Settings(e.to_string()))?;
        Ok(Self {
            client,
            settings,
            metrics: MigrationMetrics::new(metrics),
            clock: system_clock(),
        })
    }

    /// Migrates every kind of `kinds` (each a package's descriptor: its
    /// version is the one it stores at) and returns once each one's
    /// `status.storedVersions` holds that version alone. Waits, without
    /// the Lease, while a CRD stores at another version or discovery does
    /// not show the new one yet. Returns [`MigrationError::Stopped`] once
    /// `stop` holds `true`.
    pub async fn run(
        &self,
        kinds: &[ResourceDescriptor],
        mut stop: watch::Receiver<bool>,
    ) -> Result<(), MigrationError> {
        let mut waits: HashMap<String, Waiting> = HashMap::new();
        loop {
            if *stop.borrow() {
                return Err(MigrationError::Stopped);
            }
            // Read without the Lease: a migration with nothing to do
            // writes nothing, not even a Lease.
            let pending = self.pending_kinds(kinds, &mut waits).await?;
            if pending.is_empty() && waits.is_empty() {
                return Ok(());
            }
            if pending.is_empty() {
                self.pause(&mut stop).await;
                continue;
            }
            let client = self.client.clone();
            let Some(held) =
                Held::acquire(client, &self.settings.lease, self.clock.clone(), &mut stop).await?
            else {
                return Err(MigrationError::Stopped);
            };
            let outcome = self.under(&held, &pending, &stop).await;
            held.release().await;
            if outcome? {
                self.pause(&mut stop).await;
            }
        }
    }

    /// The kinds with old versions to retire; those that must wait are
    /// in `waits` (logged when their reason changes).
    async fn pending_kinds(
        &self,
        kinds: &[ResourceDescriptor],
        waits: &mut HashMap<String, Waiting>,
    ) -> Result<Vec<ResourceDescriptor>, MigrationError> {
        let mut pending = Vec::new();
        for kind in kinds {
            let name = kind.qualified_plural();
            let (facts, _) = self
                .driver(self.client.as_ref(), kind, &|| false)
                .read()
                .await?;
            match decision::start(kind, &facts) {
                decision::Start::Done => {
                    waits.remove(&name);
                }
                decision::Start::Wait(why) => {
                    if waits.insert(name.clone(), why) != Some(why) {
                        tracing::info!(kind = name, ?why, storage = ?facts.storage, "storage migration waits");
                    }
                }
                decision::Start::Pass(_) => {
                    waits.remove(&name);
                    pending.push(kind.clone());
                }
            }
        }
        Ok(pending)
    }

    /// Migrates `kinds` while `held`; `true` when one must wait after all
    /// or the hold ended mid-way (look again after a pause).
    async fn under(
        &self,
        held: &Held,
        kinds: &[ResourceDescriptor],
        stop: &watch::Receiver<bool>,
    ) -> Result<bool, MigrationError> {
        let fenced = held.fenced(self.client.clone());
        let may_write = || held.may_write() && !*stop.borrow();
        let mut again = false;
        for kind in kinds {
            match self.driver(fenced.as_ref(), kind, &may_write).run().await? {
                KindOutcome::Done => {}
                KindOutcome::Wait(_) | KindOutcome::Interrupted => again = true,
            }
            if *stop.borrow() {
                return Err(MigrationError::Stopped);
            }
        }
        Ok(again)
    }

    fn driver<'a>(
        &'a self,
        client: &'a dyn Client,
        target: &'a ResourceDescriptor,
        may_write: &'a (dyn Fn() -> bool + Send + Sync),
    ) -> Driver<'a> {
        Driver {
            client,
            target,
            page_size: self.settings.page_size,
            pace: Pace::new(self.settings.rate_per_second),
            clock: &self.clock,
            metrics: &self.metrics,
            may_write,
        }
    }

    /// Waits `wait_ms`, or until `stop` changes.
    async fn pause(&self, stop: &mut watch::Receiver<bool>) {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(self.settings.wait_ms)) => {}
            _ = stop.changed() => {}
        }
    }
}
