//! Connection Secrets: one Secret per resource, owned and
//! labelled, generated values stored before they are used, restored when
//! deleted or altered, never taken from someone else, and never leaking a
//! value anywhere else.

mod common;

use blue_kubernetes::package::NoOutputs;
use blue_kubernetes::resource::{Phase, Reason};
use blue_kubernetes::{
    async_trait, reconcile, CallbackResult, Context, IdentityContext, Infrastructure, Observation,
    Outcome, Package, Report, ResourceSchema,
};
use blue_testkit::FakeCluster;
use common::{decoded, operator, secret_path, spec, widgets, NS};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The value every generated password takes: tests search for it.
const MARKER: &str = "pw-3f9c2e-marker";

/// What the package's converge saw and did, for one resource's world.
#[derive(Clone, Default)]
struct Seen {
    /// The password converge was handed, each time.
    passwords: Arc<Mutex<Vec<String>>>,
    /// How often a password was generated.
    generated: Arc<AtomicUsize>,
    /// The stored Secret at the moment `get_or_create` returned.
    stored_when_returned: Arc<Mutex<Vec<Option<Value>>>>,
    /// The `value` the infrastructure holds: converge applies the config's.
    applied: Arc<Mutex<Option<Value>>>,
}

struct Rig {
    cluster: FakeCluster,
    seen: Seen,
    package: Package,
    controller: blue_kubernetes::Controller,
}

fn package(cluster: &FakeCluster, seen: &Seen) -> Package {
    let databases = Databases {
        cluster: cluster.clone(),
        seen: seen.clone(),
    };
    Package::new(databases).unwrap()
}

type Fields = Map<String, Value>;
type Cx = Context<Fields>;

/// A database package: converge sets `host` and generates a password in
/// the connection Secret, and records what it saw in [`Seen`].
struct Databases {
    cluster: FakeCluster,
    seen: Seen,
}

#[async_trait]
impl Infrastructure for Databases {
    type Config = Fields;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(widgets()).connection_secret()
    }

    async fn identity(&self, cx: &IdentityContext<Fields>) -> CallbackResult<Vec<Option<String>>> {
        Ok(vec![Some(cx.profile().into())])
    }

    // A new config value is drift: converge runs on every such edit.
    async fn observe(&self, cx: &Cx) -> CallbackResult<Observation<NoOutputs>> {
        let matches = self.seen.applied.lock().unwrap().as_ref() == cx.config().get("value");
        Ok(Observation::new(true, matches, true))
    }

    async fn converge(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        let seen = &self.seen;
        let connection = cx.connection().expect("declared");
        connection.set("host", "db.internal").await?;
        let generated = seen.generated.clone();
        let password = connection
            .get_or_create("password", move || {
                generated.fetch_add(1, Ordering::Relaxed);
                MARKER.to_string()
            })
            .await?;
        let stored = self
            .cluster
            .get_object(&secret_path(connection.secret_name()));
        seen.stored_when_returned.lock().unwrap().push(stored);
        seen.passwords
            .lock()
            .unwrap()
            .push(password.expose().to_string());
        *seen.applied.lock().unwrap() = cx.config().get("value").cloned();
        Ok(Outcome::done())
    }

    async fn delete(&self, _: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        Ok(Outcome::done())
    }
}

fn rig_on(cluster: &FakeCluster, seen: &Seen) -> Rig {
    let package = package(cluster, seen);
    Rig {
        cluster: cluster.clone(),
        seen: seen.clone(),
        controller: operator(cluster, vec![package.clone()], "widgets-operator"),
        package,
    }
}

fn rig() -> Rig {
    rig_on(&FakeCluster::new(), &Seen::default())
}

impl Rig {
    async fn reconcile(&self, name: &str) -> Report {
        reconcile(&self.controller, &self.package, NS, name)
            .await
            .unwrap()
    }

    /// A new desired state, so converge runs again.
    fn edit(&self, name: &str, value: Value) {
        self.cluster
            .edit_spec(&widgets(), NS, name, |s| s["config"]["value"] = value);
    }
}

#[tokio::test]
async fn a_generated_password_is_stored_before_converge_gets_it() {
    let r = rig();
    r.cluster.create(&widgets(), NS, "db", spec(json!(1)));
    assert_eq!(
        r.reconcile("db").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    let stored = r.seen.stored_when_returned.lock().unwrap()[0].clone();
    let stored = stored.expect("the Secret existed when the value was returned");
    assert_eq!(decoded(&stored, "password").as_deref(), Some(MARKER));
    assert_eq!(decoded(&stored, "host").as_deref(), Some("db.internal"));
}

#[tokio::test]
async fn the_secret_is_named_owned_and_labelled() {
    let r = rig();
    let mut s = spec(json!(1));
    s["writeConnectionSecretToRef"] = json!({"name": "app-db"});
    let created = r.cluster.create(&widgets(), NS, "db", s);
    r.reconcile("db").await;
    assert!(r
        .cluster
        .get_object(&secret_path("db-connection"))
        .is_none());
    let secret = r
        .cluster
        .get_object(&secret_path("app-db"))
        .expect("named by the ref");
    let owner = &secret["metadata"]["ownerReferences"][0];
    assert_eq!(owner["uid"], created["metadata"]["uid"]);
    assert_eq!(owner["kind"], "Widget");
    assert_eq!(owner["controller"], true);
    assert_eq!(
        secret["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "blue-kubernetes"
    );
}

#[tokio::test]
async fn after_a_restart_the_stored_password_comes_back_and_nothing_is_generated() {
    let cluster = FakeCluster::new();
    let seen = Seen::default();
    let first = rig_on(&cluster, &seen);
    cluster.create(&widgets(), NS, "db", spec(json!(1)));
    first.reconcile("db").await;
    drop(first);

    // A new process: nothing in memory, the Secret is the record.
    let second = rig_on(&cluster, &seen);
    second.edit("db", json!(2));
    let report = second.reconcile("db").await;
    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
    assert_eq!(*seen.passwords.lock().unwrap(), [MARKER, MARKER]);
    assert_eq!(seen.generated.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn a_deleted_secret_comes_back_with_the_same_password() {
    let r = rig();
    r.cluster.create(&widgets(), NS, "db", spec(json!(1)));
    r.reconcile("db").await;
    r.cluster.delete_object(&secret_path("db-connection"));

    // A check asked for by the request annotation: nothing to converge,
    // only the restore.
    r.cluster.set_annotation(
        &widgets(),
        NS,
        "db",
        blue_kubernetes::config::REQUEST_ANNOTATION,
        "check-1",
    );
    r.reconcile("db").await;
    assert_eq!(
        r.seen.passwords.lock().unwrap().len(),
        1,
        "converge ran once"
    );
    let secret = r
        .cluster
        .get_object(&secret_path("db-connection"))
        .expect("restored");
    assert_eq!(decoded(&secret, "password").as_deref(), Some(MARKER));
    assert_eq!(
        r.seen.generated.load(Ordering::Relaxed),
        1,
        "never regenerated"
    );
}

#[tokio::test]
async fn an_altered_secret_is_repaired() {
    let r = rig();
    r.cluster.create(&widgets(), NS, "db", spec(json!(1)));
    r.reconcile("db").await;
    r.cluster.edit_object(&secret_path("db-connection"), |s| {
        s["data"]["password"] = json!("d3Jvbmc="); // "wrong"
        s["data"]["extra"] = json!("eA==");
    });
    r.edit("db", json!(2));
    r.reconcile("db").await;
    let secret = r.cluster.get_object(&secret_path("db-connection")).unwrap();
    assert_eq!(decoded(&secret, "password").as_deref(), Some(MARKER));
    assert!(secret["data"].get("extra").is_none(), "{secret}");
    assert_eq!(*r.seen.passwords.lock().unwrap(), [MARKER, MARKER]);
}

#[tokio::test]
async fn a_secret_of_that_name_that_is_not_ours_is_left_alone_and_the_pass_fails() {
    let r = rig();
    let theirs = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "db-connection", "namespace": NS},
        "data": {"password": "dGhlaXJz"},
    });
    r.cluster
        .create_object(&format!("/api/v1/namespaces/{NS}/secrets"), theirs);
    r.cluster.create(&widgets(), NS, "db", spec(json!(1)));
    assert_eq!(
        r.reconcile("db").await,
        Report::Reconciled(Phase::Failed, Reason::ExecutionFailed)
    );
    let secret = r.cluster.get_object(&secret_path("db-connection")).unwrap();
    assert_eq!(decoded(&secret, "password").as_deref(), Some("theirs"));
    assert!(secret["metadata"].get("ownerReferences").is_none());
    assert!(
        r.seen.passwords.lock().unwrap().is_empty(),
        "converge never ran"
    );
}

#[tokio::test]
async fn an_invalid_secret_name_is_invalid() {
    let r = rig();
    let mut s = spec(json!(1));
    s["writeConnectionSecretToRef"] = json!({"name": "Not_A_Name"});
    r.cluster.create(&widgets(), NS, "db", s);
    assert_eq!(
        r.reconcile("db").await,
        Report::Reconciled(Phase::Invalid, Reason::InvalidConfiguration)
    );
}

#[test]
fn the_password_reaches_no_status_event_log_or_metric() {
    // A current-thread runtime, so every event of the passes is logged on
    // this thread, where the capture listens.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let r = runtime.block_on(async { rig() });
    r.cluster.create(&widgets(), NS, "db", spec(json!(1)));
    let (_, lines) = common::log::capture(|| {
        runtime.block_on(async {
            r.reconcile("db").await;
            r.cluster.delete_object(&secret_path("db-connection"));
            r.edit("db", json!(2));
            r.reconcile("db").await;
        })
    });
    assert_eq!(*r.seen.passwords.lock().unwrap(), [MARKER, MARKER]);
    let object = r.cluster.get(&widgets(), NS, "db").unwrap();
    assert!(!object.to_string().contains(MARKER), "status: {object}");
    let events = format!("{:?}", r.cluster.events());
    assert!(!events.contains(MARKER), "{events}");
    let logged = format!("{lines:?}");
    assert!(!logged.is_empty() && !logged.contains(MARKER), "{logged}");
    let metrics = r.controller.metrics().encode();
    assert!(!metrics.contains(MARKER));
    assert!(!format!("{:?}", r.controller).contains(MARKER));
}

/// Where a careless package puts the generated password.
#[derive(Clone, Copy, Debug)]
enum Leak {
    StepResult,
    Outputs,
    /// The author's own error text, as an `ALTER ROLE` that failed.
    ErrorText,
    /// A panic message.
    Panic,
    /// The error a step's closure returned (the log shows its source).
    StepError,
    /// A step name made of it (refused as a name, and logged).
    StepName,
}

fn leaking_package(leak: Leak) -> Package {
    Package::new(Leaking(leak)).unwrap()
}

/// A package whose converge leaks the generated password into `.0`.
struct Leaking(Leak);

#[async_trait]
impl Infrastructure for Leaking {
    type Config = Fields;
    type Outputs = Fields;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(widgets()).connection_secret().steps()
    }

    async fn identity(&self, cx: &IdentityContext<Fields>) -> CallbackResult<Vec<Option<String>>> {
        Ok(vec![Some(cx.profile().into())])
    }

    async fn observe(&self, _: &Cx) -> CallbackResult<Observation<Fields>> {
        Ok(Observation::new(false, false, false))
    }

    async fn converge(&self, cx: &Cx) -> CallbackResult<Outcome<Fields>> {
        let connection = cx.connection().expect("declared");
        let password = connection
            .get_or_create("password", || MARKER.into())
            .await?;
        let dsn = format!("postgres://app:{}@db.internal/app", password.expose());
        match self.0 {
            Leak::StepResult => {
                let step = cx.steps().run("create-role", |_| async { Ok(dsn) });
                step.await?;
                Ok(Outcome::done())
            }
            Leak::Outputs => {
                let outputs = json!({ "dsn": dsn }).as_object().unwrap().clone();
                Ok(Outcome::done().with(outputs))
            }
            Leak::ErrorText => {
                Err(format!("ALTER ROLE app PASSWORD '{}' failed", password.expose()).into())
            }
            Leak::Panic => panic!("could not set {}", password.expose()),
            Leak::StepName => {
                let name = format!("Set {}", password.expose());
                cx.steps().run(&name, |_| async { Ok(()) }).await?;
                Ok(Outcome::done())
            }
            Leak::StepError => {
                let step = cx.steps().run("set-password", |_| async move {
                    Err::<(), _>(
                        format!("ALTER ROLE app PASSWORD '{}' failed", password.expose()).into(),
                    )
                });
                step.await?;
                Ok(Outcome::done())
            }
        }
    }

    async fn delete(&self, _: &Cx) -> CallbackResult<Outcome<Fields>> {
        Ok(Outcome::done())
    }
}

/// A cluster, the package leaking into `leak` and a controller for it
/// (with Events).
fn leaking_rig(leak: Leak) -> (FakeCluster, Package, blue_kubernetes::Controller) {
    let cluster = FakeCluster::new();
    let package = leaking_package(leak);
    let controller = operator(&cluster, vec![package.clone()], "widgets-operator");
    (cluster, package, controller)
}

#[tokio::test]
async fn a_generated_password_in_a_step_result_or_outputs_fails_the_pass_and_is_never_recorded() {
    for (leak, reason) in [
        (Leak::StepResult, Reason::InvalidStep),
        (Leak::Outputs, Reason::InvalidOutputs),
    ] {
        let (cluster, package, controller) = leaking_rig(leak);
        cluster.create(&widgets(), NS, "db", spec(json!(1)));
        let report = reconcile(&controller, &package, NS, "db").await.unwrap();
        assert_eq!(
            report,
            Report::Reconciled(Phase::Failed, reason),
            "{leak:?}"
        );
        let object = cluster.get(&widgets(), NS, "db").unwrap();
        assert!(!object.to_string().contains(MARKER), "{leak:?}: {object}");
        let secret = cluster.get_object(&secret_path("db-connection")).unwrap();
        assert_eq!(decoded(&secret, "password").as_deref(), Some(MARKER));
    }
}

#[test]
fn a_password_in_error_text_a_panic_or_a_step_error_reaches_no_log_event_metric_or_status() {
    for (leak, reason) in [
        (Leak::ErrorText, Reason::ExecutionFailed),
        (Leak::Panic, Reason::ExecutionFailed),
        (Leak::StepError, Reason::ExecutionFailed),
        (Leak::StepName, Reason::InvalidStep),
    ] {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (cluster, package, controller) = leaking_rig(leak);
        cluster.create(&widgets(), NS, "db", spec(json!(1)));
        let (report, lines) =
            common::log::capture(|| runtime.block_on(reconcile(&controller, &package, NS, "db")));
        let report = report.unwrap();
        assert_eq!(
            report,
            Report::Reconciled(Phase::Failed, reason),
            "{leak:?}"
        );
        let logged = format!("{lines:?}");
        // The failure is logged, with the author's text around the value.
        assert!(logged.contains("failed"), "{leak:?}: {logged}");
        assert!(logged.contains("<redacted>"), "{leak:?}: {logged}");
        assert!(!logged.contains(MARKER), "{leak:?}: {logged}");
        let object = cluster.get(&widgets(), NS, "db").unwrap();
        assert!(!object.to_string().contains(MARKER), "{leak:?}: {object}");
        let events = format!("{:?}", cluster.events());
        assert!(!events.contains(MARKER), "{leak:?}: {events}");
        assert!(!controller.metrics().encode().contains(MARKER), "{leak:?}");
        assert!(
            !format!("{report:?} {controller:?}").contains(MARKER),
            "{leak:?}"
        );
    }
}
