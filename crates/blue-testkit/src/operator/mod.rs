//! [`TestOperator`]: your package's operator over a [`FakeCluster`] and a
//! [`FakeClock`], as a package test needs it.

mod admission;
mod conversion;

use crate::{Crash, CrashAt, FakeClock, FakeCluster};
use blue_kubernetes::config::LockDomain;
use blue_kubernetes::crd::{self, CrdConfig};
use blue_kubernetes::resource::Phase;
use blue_kubernetes::{controller, reconcile, Config, Controller};
use blue_kubernetes::{Package, Report};
use serde_json::Value;
use std::sync::Arc;

/// The most passes [`TestOperator::settle`] runs before it gives up.
pub const SETTLE_PASSES: usize = 20;

type Configure = Arc<dyn Fn(Config) -> Config + Send + Sync>;

/// An operator process for a package test: a controller for your
/// packages over a [`FakeCluster`] (the cluster's [`FakeClock`] is its
/// clock), with a [`Crash`] switch in front of its client, which changes
/// nothing until armed.
///
/// - **Its own identity lock:** every controller it builds gets a
///   [`LockDomain`] of its own, so tests running in parallel in one
///   process never see each other's resources `Busy`, whatever identities
///   their packages compute. Share one on purpose with
///   [`with_lock_domain`](Self::with_lock_domain).
/// - **Crash and restart:** [`crash_at`](Self::crash_at) kills a pass at
///   a chosen point and starts a new process, [`restart`](Self::restart)
///   starts one: a new controller over the same cluster, with nothing of
///   the old one's memory.
/// - **Settle:** [`settle`](Self::settle) runs passes, moving the clock
///   to each retry, until the resource is Ready or released.
///
/// Resources are created in its namespace (`default` unless
/// [`in_namespace`](Self::in_namespace)), of its first package's kind.
///
/// ```
/// use blue_kubernetes::{resource::{Phase, Reason}, Report};
/// use blue_kubernetes_client::ResourceDescriptor;
/// use blue_testkit::{FakeInfra, TestOperator};
/// use serde_json::json;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let infra = FakeInfra::new();
/// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
/// let op = TestOperator::new(infra.package(d)).with_crds();
/// op.create("web", json!({"config": {"value": 3}}));
/// assert_eq!(op.settle("web").await, Report::Reconciled(Phase::Ready, Reason::Converged));
/// assert_eq!(infra.get("default--web"), Some(json!(3)));
/// # }
/// ```
#[derive(Clone)]
pub struct TestOperator {
    setup: Setup,
    controller: Controller,
}

/// What every controller of a [`TestOperator`] is built from.
#[derive(Clone)]
struct Setup {
    cluster: FakeCluster,
    crash: Crash,
    packages: Vec<Package>,
    namespace: String,
    /// Shared on purpose; `None`: each controller gets a domain of its own.
    shared_locks: Option<LockDomain>,
    configure: Option<Configure>,
    /// The CRD options asked for (their names are always the
    /// controller's); `None`: no CRD installed.
    crds: Option<CrdConfig>,
}

impl Setup {
    fn build(&self) -> Controller {
        let client = self.crash.client(Arc::new(self.cluster.clone()));
        let locks = self.shared_locks.clone().unwrap_or_else(LockDomain::new);
        let config = Config::new(client, self.packages.clone())
            .with_namespace(self.namespace.as_str().into())
            .with_clock(self.cluster.clock().as_fn())
            .with_lock_domain(locks);
        let config = match &self.configure {
            Some(f) => f(config),
            None => config,
        };
        controller(config).unwrap_or_else(|e| panic!("TestOperator: {e}"))
    }

    /// Installs each package's CRD generated with the CRD options asked
    /// for and `controller`'s names, if CRDs were asked for. The names are
    /// the controller's whatever the options say: a CRD declaring another
    /// destroy-protection key than the controller's prunes the one it
    /// reads, so a protected resource would be released in the test and
    /// blocked on a real server.
    fn install_crds(&self, controller: &Controller) {
        let Some(options) = &self.crds else {
            return;
        };
        let options = options
            .clone()
            .with_names(controller.config().names.clone());
        for package in &self.packages {
            let definition = crd::generate(package, &options).expect("a CRD");
            let version = package.descriptor().version.clone();
            self.cluster.install_crd(&definition, &version);
        }
    }
}

impl std::fmt::Debug for TestOperator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestOperator")
            .field("namespace", &self.setup.namespace)
            .field("packages", &self.setup.packages.len())
            .field("controller", &self.controller)
            .finish_non_exhaustive()
    }
}

impl TestOperator {
    /// The operator of `package`, over a new [`FakeCluster`].
    pub fn new(package: Package) -> Self {
        Self::on(&FakeCluster::new(), vec![package])
    }

    /// The operator of `packages` over `cluster` (for packages that were
    /// given the cluster as their [`RawApi`](blue_kubernetes_client::RawApi),
    /// or two operators on one cluster). The first package is the one
    /// [`reconcile`](Self::reconcile) and the resource helpers use.
    ///
    /// # Panics
    /// With no package, or a configuration the controller refuses.
    pub fn on(cluster: &FakeCluster, packages: Vec<Package>) -> Self {
        assert!(!packages.is_empty(), "TestOperator::on: no package");
        let setup = Setup {
            cluster: cluster.clone(),
            crash: Crash::new(),
            packages,
            namespace: "default".into(),
            shared_locks: None,
            configure: None,
            crds: None,
        };
        let controller = setup.build();
        Self { setup, controller }
    }

    /// Manages `namespace` instead of `default`.
    #[must_use]
    pub fn in_namespace(mut self, namespace: &str) -> Self {
        self.setup.namespace = namespace.into();
        self.rebuilt()
    }

    /// Changes every controller's [`Config`] (this one and each restart's)
    /// with `f`, after the harness set its client, clock, namespace and
    /// lock domain: e.g. `|c| c.with_names(my_names())`.
    #[must_use]
    pub fn configure(mut self, f: impl Fn(Config) -> Config + Send + Sync + 'static) -> Self {
        self.setup.configure = Some(Arc::new(f));
        self.rebuilt()
    }

    /// Takes `domain`'s identity lock instead of one of its own, in this
    /// controller and every restart's: to make two operators of a test
    /// contend, as two controllers of one process would.
    #[must_use]
    pub fn with_lock_domain(mut self, domain: LockDomain) -> Self {
        self.setup.shared_locks = Some(domain);
        self.rebuilt()
    }

    /// Installs each package's generated CRD in the cluster, so that it
    /// prunes, defaults and validates every write as the API server would:
    /// generated with the operator's [`Names`](blue_kubernetes::config::Names)
    /// (its destroy-protection key, as [`configure`](Self::configure) set
    /// them, before or after this call) and default CRD options otherwise.
    ///
    /// # Panics
    /// When a CRD cannot be generated or the server would refuse it.
    #[must_use]
    pub fn with_crds(self) -> Self {
        self.with_crd_config(CrdConfig::default())
    }

    /// [`with_crds`](Self::with_crds) with the CRD options the operator
    /// ships (short names, immutable fields, CEL, printer columns). Their
    /// [`names`](CrdConfig::names) are replaced by the operator's, which is
    /// what its `crd` subcommand must print too.
    ///
    /// # Panics
    /// As [`with_crds`](Self::with_crds).
    #[must_use]
    pub fn with_crd_config(mut self, options: CrdConfig) -> Self {
        self.setup.crds = Some(options);
        self.setup.install_crds(&self.controller);
        self
    }

    /// Rebuilds the controller after a change of its setup; CRDs already
    /// installed follow a change of names.
    fn rebuilt(mut self) -> Self {
        self.restart();
        self.setup.install_crds(&self.controller);
        self
    }

    /// A new operator process: a controller with nothing of the old one's
    /// memory (and, unless shared, a lock domain of its own), over the
    /// same cluster and clock, its crash switch unarmed
    /// ([`Crash::reset`]).
    ///
    /// # Panics
    /// When the controller refuses the configuration.
    pub fn restart(&mut self) {
        self.setup.crash.reset();
        self.controller = self.setup.build();
    }

    /// One pass of the first package's resource `name`, as
    /// [`blue_kubernetes::reconcile`] runs it.
    ///
    /// # Panics
    /// On a transport failure, or when the pass crashes (use
    /// [`crash_at`](Self::crash_at) or [`expect_crash`](Self::expect_crash)).
    pub async fn reconcile(&self, name: &str) -> Report {
        self.reconcile_of(&self.setup.packages[0], name).await
    }

    /// One pass of `package`'s resource `name` (a package given to
    /// [`on`](Self::on)); panics as [`reconcile`](Self::reconcile).
    pub async fn reconcile_of(&self, package: &Package, name: &str) -> Report {
        let pass = reconcile(&self.controller, package, &self.setup.namespace, name);
        match self.setup.crash.run(pass).await {
            Some(report) => report.unwrap_or_else(|e| panic!("reconcile {name}: {e}")),
            None => panic!("reconcile {name}: the pass crashed; use crash_at or expect_crash"),
        }
    }

    /// Arms `at` and runs a pass of `name` that must die there, then
    /// restarts (see [`Crash`] for the points and what dies).
    ///
    /// # Panics
    /// When the pass ends without crashing.
    pub async fn crash_at(&mut self, at: CrashAt, name: &str) {
        self.setup.crash.arm(at.clone());
        self.dies(name, &format!("{at:?}")).await;
    }

    /// Runs a pass of `name` that must die (your fake backend calls
    /// [`Crash::here`] on [`crash`](Self::crash), say), then restarts.
    ///
    /// # Panics
    /// When the pass ends without crashing.
    pub async fn expect_crash(&mut self, name: &str) {
        self.dies(name, "Crash::here").await;
    }

    async fn dies(&mut self, name: &str, at: &str) {
        let pass = reconcile(
            &self.controller,
            &self.setup.packages[0],
            &self.setup.namespace,
            name,
        );
        if let Some(report) = self.setup.crash.run(pass).await {
            panic!("{name}: no crash at {at}: the pass ended {report:?}");
        }
        self.restart();
    }

    /// Runs passes of `name`, moving the clock to each stored next check,
    /// until the resource is Ready (the report is then
    /// `Reconciled(Ready, _)`) or released (`Released`, or `NotFound` once
    /// it is gone); at most [`SETTLE_PASSES`].
    ///
    /// # Panics
    /// When it is neither after that many passes, naming each report.
    pub async fn settle(&self, name: &str) -> Report {
        let mut reports = Vec::new();
        for _ in 0..SETTLE_PASSES {
            let report = self.reconcile(name).await;
            if matches!(
                report,
                Report::Reconciled(Phase::Ready, _) | Report::Released | Report::NotFound
            ) {
                return report;
            }
            reports.push(report);
            self.until_next_check(name);
        }
        panic!("{name}: neither Ready nor released after {SETTLE_PASSES} passes: {reports:?}");
    }

    /// Moves the clock to `name`'s stored next check, if it is later.
    fn until_next_check(&self, name: &str) {
        let next = self.status(name)["nextReconcileTime"].clone();
        let Some(at) = next
            .as_str()
            .and_then(|t| humantime::parse_rfc3339_weak(t).ok())
        else {
            return;
        };
        let at = at
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let clock = self.clock();
        clock.advance(at.saturating_sub(clock.now_ms()));
    }

    /// Creates the first package's resource `name` with `spec`.
    pub fn create(&self, name: &str, spec: Value) -> Value {
        self.setup
            .cluster
            .create(self.descriptor(), &self.setup.namespace, name, spec)
    }

    /// Edits resource `name`'s spec as a user would (a new generation).
    pub fn edit_spec(&self, name: &str, f: impl FnOnce(&mut Value)) -> Value {
        self.setup
            .cluster
            .edit_spec(self.descriptor(), &self.setup.namespace, name, f)
    }

    /// Deletes resource `name` as a user would: with finalizers it stays,
    /// marked for deletion, until the operator releases it.
    pub fn delete(&self, name: &str) {
        self.setup
            .cluster
            .delete(self.descriptor(), &self.setup.namespace, name);
    }

    /// Resource `name`, if it exists.
    pub fn get(&self, name: &str) -> Option<Value> {
        self.setup
            .cluster
            .get(self.descriptor(), &self.setup.namespace, name)
    }

    /// Resource `name`'s status (`null` without one, or without the
    /// resource).
    pub fn status(&self, name: &str) -> Value {
        self.get(name)
            .map(|r| r["status"].clone())
            .unwrap_or_default()
    }

    fn descriptor(&self) -> &blue_kubernetes_client::ResourceDescriptor {
        self.setup.packages[0].descriptor()
    }

    /// The cluster, to script faults, act as a user or read what is stored.
    pub fn cluster(&self) -> &FakeCluster {
        &self.setup.cluster
    }

    /// The clock the cluster and the controller read.
    pub fn clock(&self) -> FakeClock {
        self.setup.cluster.clock()
    }

    /// The crash switch in front of the controller's client.
    pub fn crash(&self) -> &Crash {
        &self.setup.crash
    }

    /// The current process's controller (e.g. for
    /// [`blue_kubernetes::start`] or
    /// [`Controller::reconcile_now`](blue_kubernetes::Controller::reconcile_now)).
    pub fn controller(&self) -> &Controller {
        &self.controller
    }

    /// The first package.
    pub fn package(&self) -> &Package {
        &self.setup.packages[0]
    }

    /// The namespace it manages.
    pub fn namespace(&self) -> &str {
        &self.setup.namespace
    }

    /// The current controller's lock domain, to share with another
    /// operator ([`with_lock_domain`](Self::with_lock_domain)).
    pub fn lock_domain(&self) -> LockDomain {
        self.controller.config().lock_domain.clone()
    }
}
