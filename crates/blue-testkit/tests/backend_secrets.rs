//! Secrets the backend makes (a key a server generates, a token an API
//! returns): stored in the connection Secret before the callback goes on,
//! read back on the next pass instead of made again, and as secret as the
//! values a package generates.

mod common;

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

/// The secret the fake server makes: tests search for it.
const SERVER_KEY: &str = "tsig-9b1e0c55-marker";

/// What converge does with the secret once it has it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Then {
    /// Nothing more: the pass succeeds.
    Succeed,
    /// The server refuses to make it: `create` fails.
    CreationFails,
    /// Fails with the author's own text around the secret.
    FailWithIt,
    /// Reports it in the outputs.
    ReportIt,
    /// Keeps it with `store` (it came with another answer), then fails with
    /// it in the error text.
    StoreThenFailWithIt,
}

/// The fake DNS server: how many keys it made, and the Secret as it was
/// when `get_or_create_with` returned.
#[derive(Clone, Default)]
struct Server {
    made: Arc<AtomicUsize>,
    handed: Arc<Mutex<Vec<String>>>,
    stored_when_returned: Arc<Mutex<Vec<Option<Value>>>>,
    applied: Arc<Mutex<Option<Value>>>,
}

/// The zone's connection Secret.
fn zone_secret() -> String {
    secret_path("zone-connection")
}

fn package(cluster: &FakeCluster, server: &Server, then: Then) -> Package {
    let zones = Zones {
        cluster: cluster.clone(),
        server: server.clone(),
        then,
    };
    Package::new(zones).unwrap()
}

/// The zone package over the fake DNS server.
struct Zones {
    cluster: FakeCluster,
    server: Server,
    then: Then,
}

type Fields = Map<String, Value>;
type Cx = Context<Fields>;

#[async_trait]
impl Infrastructure for Zones {
    type Config = Fields;
    type Outputs = Fields;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(widgets()).connection_secret()
    }

    async fn identity(&self, cx: &IdentityContext<Fields>) -> CallbackResult<Vec<Option<String>>> {
        Ok(vec![Some(cx.profile().into())])
    }

    async fn observe(&self, cx: &Cx) -> CallbackResult<Observation<Fields>> {
        let applied = self.server.applied.lock().unwrap().clone();
        let exists = applied.is_some();
        Ok(Observation::exists(exists)
            .matching(applied.as_ref() == cx.config().get("value"))
            .ready(exists))
    }

    async fn converge(&self, cx: &Cx) -> CallbackResult<Outcome<Fields>> {
        let (server, then) = (&self.server, self.then);
        let connection = cx.connection().expect("declared");
        let secret = match then {
            Then::StoreThenFailWithIt => connection.store("tsig-secret", SERVER_KEY).await?,
            _ => {
                let made = server.made.clone();
                let create = || async move {
                    made.fetch_add(1, Ordering::Relaxed);
                    match then {
                        Then::CreationFails => Err("the server refused the key".into()),
                        _ => Ok(SERVER_KEY.to_string()),
                    }
                };
                connection.get_or_create_with("tsig-secret", create).await?
            }
        };
        let stored = self.cluster.get_object(&zone_secret());
        server.stored_when_returned.lock().unwrap().push(stored);
        server
            .handed
            .lock()
            .unwrap()
            .push(secret.expose().to_string());
        match then {
            Then::FailWithIt | Then::StoreThenFailWithIt => {
                Err(format!("zone update signed with {} refused", secret.expose()).into())
            }
            Then::ReportIt => {
                let outputs = json!({"key": secret.expose()});
                Ok(Outcome::done().with(outputs.as_object().unwrap().clone()))
            }
            Then::Succeed | Then::CreationFails => {
                *server.applied.lock().unwrap() = cx.config().get("value").cloned();
                Ok(Outcome::done())
            }
        }
    }

    async fn delete(&self, _: &Cx) -> CallbackResult<Outcome<Fields>> {
        Ok(Outcome::done())
    }
}

#[tokio::test]
async fn a_secret_the_backend_made_is_stored_before_it_is_returned_and_read_back_next_pass() {
    let (cluster, server) = (FakeCluster::new(), Server::default());
    let package = package(&cluster, &server, Then::Succeed);
    cluster.create(&widgets(), NS, "zone", spec(json!(1)));
    let first = operator(&cluster, vec![package.clone()], "zones-operator");
    let ready = Report::Reconciled(Phase::Ready, Reason::Converged);
    assert_eq!(
        reconcile(&first, &package, NS, "zone").await.unwrap(),
        ready
    );
    let stored = server.stored_when_returned.lock().unwrap()[0].clone();
    let stored = stored.expect("the Secret existed when the value was returned");
    assert_eq!(decoded(&stored, "tsig-secret").as_deref(), Some(SERVER_KEY));
    // A new process and a new desired state: converge runs again and
    // gets the stored key; the server makes no second one.
    cluster.edit_spec(&widgets(), NS, "zone", |s| s["config"]["value"] = json!(2));
    let second = operator(&cluster, vec![package.clone()], "zones-operator");
    assert_eq!(
        reconcile(&second, &package, NS, "zone").await.unwrap(),
        ready
    );
    assert_eq!(server.made.load(Ordering::Relaxed), 1);
    assert_eq!(*server.handed.lock().unwrap(), [SERVER_KEY, SERVER_KEY]);
}

#[tokio::test]
async fn a_failed_creation_stores_nothing_and_fails_the_pass() {
    let (cluster, server) = (FakeCluster::new(), Server::default());
    let package = package(&cluster, &server, Then::CreationFails);
    cluster.create(&widgets(), NS, "zone", spec(json!(1)));
    let controller = operator(&cluster, vec![package.clone()], "zones-operator");
    let report = reconcile(&controller, &package, NS, "zone");
    assert_eq!(
        report.await.unwrap(),
        Report::Reconciled(Phase::Failed, Reason::ExecutionFailed)
    );
    let secret = cluster.get_object(&zone_secret());
    assert_eq!(secret.and_then(|s| decoded(&s, "tsig-secret")), None);
    assert!(server.handed.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_backend_made_secret_in_the_outputs_fails_the_pass_and_is_never_recorded() {
    let (cluster, server) = (FakeCluster::new(), Server::default());
    let package = package(&cluster, &server, Then::ReportIt);
    cluster.create(&widgets(), NS, "zone", spec(json!(1)));
    let controller = operator(&cluster, vec![package.clone()], "zones-operator");
    let report = reconcile(&controller, &package, NS, "zone");
    assert_eq!(
        report.await.unwrap(),
        Report::Reconciled(Phase::Failed, Reason::InvalidOutputs)
    );
    let object = cluster.get(&widgets(), NS, "zone").unwrap();
    assert!(!object.to_string().contains(SERVER_KEY), "{object}");
}

#[test]
fn a_backend_made_secret_reaches_no_log_event_status_or_debug_output() {
    for then in [Then::FailWithIt, Then::StoreThenFailWithIt] {
        // A current-thread runtime: every event of the pass is logged on
        // this thread, where the capture listens.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (cluster, server) = (FakeCluster::new(), Server::default());
        let package = package(&cluster, &server, then);
        let controller = operator(&cluster, vec![package.clone()], "zones-operator");
        cluster.create(&widgets(), NS, "zone", spec(json!(1)));
        let (report, lines) =
            common::log::capture(|| runtime.block_on(reconcile(&controller, &package, NS, "zone")));
        let report = report.unwrap();
        assert_eq!(
            report,
            Report::Reconciled(Phase::Failed, Reason::ExecutionFailed),
            "{then:?}"
        );
        let secret = cluster.get_object(&zone_secret()).expect("stored");
        assert_eq!(decoded(&secret, "tsig-secret").as_deref(), Some(SERVER_KEY));
        let logged = format!("{lines:?}");
        // The failure is logged, with the author's text around the value.
        assert!(logged.contains("refused"), "{then:?}: {logged}");
        assert!(logged.contains("<redacted>"), "{then:?}: {logged}");
        assert!(!logged.contains(SERVER_KEY), "{then:?}: {logged}");
        let object = cluster.get(&widgets(), NS, "zone").unwrap();
        assert!(
            !object.to_string().contains(SERVER_KEY),
            "{then:?}: {object}"
        );
        let events = format!("{:?}", cluster.events());
        assert!(!events.contains(SERVER_KEY), "{then:?}: {events}");
        assert!(!controller.metrics().encode().contains(SERVER_KEY));
        let debug = format!("{report:?} {controller:?} {package:?}");
        assert!(!debug.contains(SERVER_KEY), "{then:?}");
    }
}
