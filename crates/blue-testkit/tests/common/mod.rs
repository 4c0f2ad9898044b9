//! Shared fixtures for the controller behaviour tests.
#![allow(dead_code)]

pub mod log;
pub mod sharding;
pub mod watchdog;

use blue_kubernetes::{controller, reconcile, Config, Controller, Package, Report};

use blue_kubernetes::config::{Clock, LockDomain};
use blue_kubernetes_client::{Client, ResourceDescriptor};
use blue_testkit::{FakeClock, FakeCluster, FakeInfra};
use serde_json::{json, Value};
use std::sync::Arc;

pub const NS: &str = "dev";

pub fn widgets() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
}

pub fn gadgets() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "gadgets", "Gadget")
}

/// A fake cluster, clock and infrastructure with one widget package.
pub struct World {
    pub cluster: FakeCluster,
    pub clock: FakeClock,
    pub infra: FakeInfra,
    pub package: Package,
    pub controller: Controller,
}

impl World {
    pub fn new() -> Self {
        Self::with(|_| {})
    }

    pub fn with(tweak: impl FnOnce(&mut Config)) -> Self {
        Self::of(|infra| infra.package(widgets()), tweak)
    }

    /// The world with the package `make` builds over its infrastructure:
    /// its resources are the package's kind.
    pub fn of(make: impl FnOnce(&FakeInfra) -> Package, tweak: impl FnOnce(&mut Config)) -> Self {
        Self::on(FakeCluster::new(), make, tweak)
    }

    /// The same, over `cluster`.
    pub fn on(
        cluster: FakeCluster,
        make: impl FnOnce(&FakeInfra) -> Package,
        tweak: impl FnOnce(&mut Config),
    ) -> Self {
        let clock = FakeClock::default();
        let cluster = cluster.with_clock(clock.clone());
        let infra = FakeInfra::new();
        let package = make(&infra);
        let controller = build(&cluster, clock.as_fn(), vec![package.clone()], tweak);
        Self {
            cluster,
            clock,
            infra,
            package,
            controller,
        }
    }

    pub fn create(&self, name: &str, spec: Value) -> Value {
        self.cluster.create(self.kind(), NS, name, spec)
    }

    pub fn edit(&self, name: &str, f: impl FnOnce(&mut Value)) -> Value {
        self.cluster.edit_spec(self.kind(), NS, name, f)
    }

    pub fn get(&self, name: &str) -> Value {
        self.cluster
            .get(self.kind(), NS, name)
            .expect("object exists")
    }

    pub fn exists(&self, name: &str) -> bool {
        self.cluster.get(self.kind(), NS, name).is_some()
    }

    fn kind(&self) -> &ResourceDescriptor {
        self.package.descriptor()
    }

    pub fn status(&self, name: &str) -> Value {
        self.get(name)["status"].clone()
    }

    pub async fn reconcile(&self, name: &str) -> Report {
        reconcile(&self.controller, &self.package, NS, name)
            .await
            .expect("no transport failure")
    }

    /// Milliseconds from the clock to the stored `nextReconcileTime`.
    pub fn until_next_check(&self, name: &str) -> u64 {
        ms_of(&self.status(name)["nextReconcileTime"]) - self.clock.now_ms()
    }

    pub fn profile(name: &str) -> String {
        format!("{NS}--{name}")
    }

    /// Whether the identity of widget `name` is locked in the
    /// controller's lock domain right now.
    pub fn is_locked(&self, name: &str) -> bool {
        let identity = self.infra.identity(&Self::profile(name));
        self.controller.config().lock_domain.is_locked(&identity)
    }
}

pub fn build(
    cluster: &FakeCluster,
    now: Clock,
    packages: Vec<Package>,
    tweak: impl FnOnce(&mut Config),
) -> Controller {
    let client: Arc<dyn Client> = Arc::new(cluster.clone());
    let mut config = Config::new(client, packages);
    config.namespace = NS.into();
    config.now = now;
    // Tests run in parallel in one process: each controller takes an
    // identity lock of its own, so equal identities in two tests never
    // meet (a test that wants two controllers to contend shares one).
    config.lock_domain = LockDomain::new();
    tweak(&mut config);
    controller(config).expect("valid config")
}

/// A new operator process for `packages` over `cluster`, writing Events
/// as `component`.
pub fn operator(cluster: &FakeCluster, packages: Vec<Package>, component: &str) -> Controller {
    let clock = FakeClock::default().as_fn();
    build(cluster, clock, packages, |c| {
        c.event_component = Some(component.into())
    })
}

/// The Warning Events `cluster` holds with `reason`: their messages.
pub fn warnings(cluster: &FakeCluster, reason: &str) -> Vec<String> {
    let events = cluster.events();
    let warnings = events
        .iter()
        .filter(|e| e["type"] == "Warning" && e["reason"] == reason);
    warnings
        .map(|e| e["message"].as_str().unwrap().to_string())
        .collect()
}

/// The API path of Secret `name` in the tests' namespace.
pub fn secret_path(name: &str) -> String {
    format!("/api/v1/namespaces/{NS}/secrets/{name}")
}

/// The value of `key` in a stored Secret, decoded.
pub fn decoded(secret: &Value, key: &str) -> Option<String> {
    use base64::Engine;
    let text = secret["data"][key].as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// A clock that follows tokio's (paused) time, for runtime tests.
pub fn tokio_clock() -> Clock {
    let start = tokio::time::Instant::now();
    Arc::new(move || blue_testkit::DEFAULT_START_MS + start.elapsed().as_millis() as u64)
}

pub fn spec(value: Value) -> Value {
    json!({"config": {"value": value}})
}

pub fn condition<'a>(status: &'a Value, kind: &str) -> &'a Value {
    status["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == kind))
        .unwrap_or(&Value::Null)
}

pub fn finalizers(object: &Value) -> Vec<String> {
    object["metadata"]["finalizers"]
        .as_array()
        .map(|a| a.iter().map(|f| f.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// Milliseconds since the epoch of an RFC 3339 time in status.
pub fn ms_of(time: &Value) -> u64 {
    let t = humantime::parse_rfc3339_weak(time.as_str().expect("a time")).expect("RFC 3339");
    t.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}

/// The longest an interval of `ms` is stretched to (by under a tenth,
/// from the uid), so a clock advanced by it finds any
/// resource's periodic check due.
pub fn stretched(ms: u64) -> u64 {
    ms + ms / 10
}
