//! A backend that refuses the input (a DNS API answering 422 to a bad
//! address): the package returns `Rejected`, the resource is `Rejected` /
//! `InputRejected` with the message in one Warning Event (redacted, never
//! in status), no backoff retries, and the fixing edit converges.

mod common;

use blue_kubernetes::package::{CallbackError, NoOutputs, Rejected, UserFacingMessage};
use blue_kubernetes::resource::{Phase, Reason};
use blue_kubernetes::{
    async_trait, CallbackResult, Context, IdentityContext, Infrastructure, Observation, Outcome,
    Package, Report, ResourceSchema,
};
use blue_kubernetes_client::ResourceDescriptor;
use blue_testkit::FakeCluster;
use common::{condition, stretched, World, NS};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

fn records() -> ResourceDescriptor {
    ResourceDescriptor::new("dns.example.com", "v1", "records", "Record")
}

/// The value the connection Secret's generated key takes: it must never
/// show, not even inside the package's own message.
const MARKER: &str = "api-key-7d1f0c-marker";

/// A DNS API holding one record's address; it refuses an address that is
/// not IPv4, as PowerDNS answers 422.
#[derive(Clone, Default)]
struct Dns {
    address: Arc<Mutex<Option<String>>>,
    attempts: Arc<Mutex<usize>>,
}

impl Dns {
    fn attempts(&self) -> usize {
        *self.attempts.lock().unwrap()
    }

    /// Puts `content`, or refuses it (the message may quote `api_key`, as a
    /// careless package's would).
    fn put(&self, content: &str, api_key: &str) -> Result<(), CallbackError> {
        *self.attempts.lock().unwrap() += 1;
        if content.parse::<std::net::Ipv4Addr>().is_err() {
            let message = UserFacingMessage::new(format!(
                "config.content {content:?} is not an IPv4 address (refused by the DNS API, key {api_key})"
            ));
            let rejected = Rejected::new(message).with_source("HTTP 422 Unprocessable Entity");
            return Err(rejected.into());
        }
        *self.address.lock().unwrap() = Some(content.to_string());
        Ok(())
    }

    fn observe(&self, content: Option<&str>) -> Observation<NoOutputs> {
        let address = self.address.lock().unwrap().clone();
        let matches = address.as_deref() == content;
        Observation::new(address.is_some(), matches, true)
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
struct RecordConfig {
    content: Option<String>,
}

/// The record package over a DNS API: with `secret`, converge keeps the
/// API key in the connection Secret; with `steps`, it puts the record
/// inside a durable step and passes its error on with `?`.
#[derive(Clone)]
struct Records {
    dns: Dns,
    secret: bool,
    steps: bool,
}

impl Records {
    fn package(dns: &Dns, secret: bool, steps: bool) -> Package {
        let schema = ResourceSchema::new(records());
        let schema = if secret {
            schema.connection_secret()
        } else {
            schema
        };
        let schema = if steps { schema.steps() } else { schema };
        let records = Records {
            dns: dns.clone(),
            secret,
            steps,
        };
        Package::with_schema(records, schema).unwrap()
    }
}

type Cx = Context<RecordConfig>;

#[async_trait]
impl Infrastructure for Records {
    type Config = RecordConfig;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(records())
    }

    async fn identity(
        &self,
        cx: &IdentityContext<RecordConfig>,
    ) -> CallbackResult<Vec<Option<String>>> {
        Ok(vec![Some(cx.profile().into())])
    }

    async fn observe(&self, cx: &Cx) -> CallbackResult<Observation<NoOutputs>> {
        Ok(self.dns.observe(cx.config().content.as_deref()))
    }

    async fn converge(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        let key = match self.secret {
            true => {
                let connection = cx.connection().expect("declared");
                let key = connection.get_or_create("api-key", || MARKER.into());
                key.await?.expose().to_string()
            }
            false => "none".to_string(),
        };
        let content = cx.config().content.clone().unwrap_or_default();
        let dns = self.dns.clone();
        match self.steps {
            false => dns.put(&content, &key)?,
            true => {
                let put = |_| async move { dns.put(&content, &key) };
                cx.steps().run("put-record", put).await?
            }
        }
        Ok(Outcome::done())
    }

    async fn delete(&self, _: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        Ok(Outcome::done())
    }
}

struct Rig {
    world: World,
    dns: Dns,
}

impl Rig {
    fn new(steps: bool) -> Self {
        let dns = Dns::default();
        let package = |_: &_| Records::package(&dns, true, steps);
        let world = World::of(package, |c| {
            c.event_component = Some("dns-operator".into());
        });
        Self { world, dns }
    }

    async fn reconcile(&self) -> Report {
        self.world.reconcile("www").await
    }

    fn create(&self, content: &str) {
        let spec = json!({"config": {"content": content}});
        self.cluster.create(&records(), NS, "www", spec);
    }

    fn set_content(&self, content: &str) {
        self.cluster.edit_spec(&records(), NS, "www", |s| {
            s["config"]["content"] = json!(content);
        });
    }

    fn status(&self) -> Value {
        self.world.status("www")
    }

    fn rejections(&self) -> Vec<(String, u64)> {
        let events = self.cluster.events();
        let rejections = events
            .iter()
            .filter(|e| e["type"] == "Warning" && e["reason"] == "InputRejected");
        rejections
            .map(|e| {
                let message = e["message"].as_str().unwrap().to_string();
                (message, e["count"].as_u64().unwrap())
            })
            .collect()
    }
}

impl std::ops::Deref for Rig {
    type Target = World;

    fn deref(&self) -> &World {
        &self.world
    }
}

const REJECTED: Report = Report::Reconciled(Phase::Rejected, Reason::InputRejected);
const READY: Report = Report::Reconciled(Phase::Ready, Reason::Converged);

#[tokio::test]
async fn a_refused_input_is_rejected_with_the_packages_message_and_no_backoff() {
    let rig = Rig::new(false);
    rig.create("192.0.2.999");

    assert_eq!(rig.reconcile().await, REJECTED);

    let status = rig.status();
    assert_eq!(status["phase"], "Rejected");
    assert_eq!(status["retryCount"], 0);
    assert_eq!(condition(&status, "Stalled")["status"], "True");
    assert_eq!(condition(&status, "Reconciling")["status"], "False");
    assert_eq!(condition(&status, "Ready")["status"], "False");
    assert_eq!(condition(&status, "Ready")["reason"], "InputRejected");
    assert!(!status.to_string().contains("192.0.2.999"), "{status}");
    assert!(!status.to_string().contains("IPv4"), "{status}");
    let rejections = rig.rejections();
    assert_eq!(rejections.len(), 1, "{rejections:?}");
    assert!(
        rejections[0]
            .0
            .starts_with("config.content \"192.0.2.999\" is not an IPv4 address"),
        "{rejections:?}"
    );
    assert_eq!(rejections[0].1, 1);

    // No backoff retries: nothing before the periodic check.
    for _ in 0..5 {
        rig.clock.advance(10_000);
        assert_eq!(rig.reconcile().await, Report::NotDue);
    }
    assert_eq!(rig.dns.attempts(), 1);
    rig.clock.advance(stretched(60_000));
    assert_eq!(
        rig.reconcile().await,
        REJECTED,
        "the periodic check tries again"
    );
    assert_eq!(rig.dns.attempts(), 2);
    assert_eq!(rig.status()["retryCount"], 0, "the count does not grow");

    let metrics = rig.controller.metrics().encode();
    let counted = r#"blue_callback_errors_total{controller="records.dns.example.com",callback="converge",reason="rejected"} 2"#;
    assert!(metrics.contains(counted), "{metrics}");
    let stalled =
        r#"blue_stalled_total{controller="records.dns.example.com",reason="InputRejected"} 2"#;
    assert!(metrics.contains(stalled), "{metrics}");

    rig.set_content("192.0.2.10");
    assert_eq!(rig.reconcile().await, READY, "the fixing edit converges");
    assert_eq!(
        rig.dns.address.lock().unwrap().as_deref(),
        Some("192.0.2.10")
    );
}

#[tokio::test]
async fn a_new_request_token_asks_again_at_once() {
    let rig = Rig::new(false);
    rig.create("not-an-address");
    assert_eq!(rig.reconcile().await, REJECTED);
    assert_eq!(rig.reconcile().await, Report::NotDue);

    let annotation = blue_kubernetes::config::REQUEST_ANNOTATION;
    rig.cluster
        .set_annotation(&records(), NS, "www", annotation, "again");
    assert_eq!(rig.reconcile().await, REJECTED);
    assert_eq!(rig.dns.attempts(), 2);
}

#[tokio::test]
async fn a_secret_in_the_rejection_message_is_redacted() {
    let rig = Rig::new(false);
    rig.create("bogus");
    assert_eq!(rig.reconcile().await, REJECTED);

    let rejections = rig.rejections();
    assert_eq!(rejections.len(), 1, "{rejections:?}");
    assert!(rejections[0].0.contains("<redacted>"), "{rejections:?}");
    let events = format!("{:?}", rig.cluster.events());
    assert!(!events.contains(MARKER), "{events}");
    let object = rig.cluster.get(&records(), NS, "www").unwrap();
    assert!(!object.to_string().contains(MARKER));
    assert!(!rig.controller.metrics().encode().contains(MARKER));
}

#[tokio::test]
async fn a_durable_steps_run_cut_short_by_a_rejection_ends_and_the_fix_starts_a_new_run() {
    let rig = Rig::new(true);
    rig.create("bogus");
    assert_eq!(rig.reconcile().await, REJECTED);
    let rejected_run = rig.status()["workflow"].clone();
    assert_eq!(rejected_run["state"], "Done", "{rejected_run}");
    assert_eq!(rejected_run["steps"][0]["name"], "put-record");
    assert_eq!(rejected_run["steps"][0]["state"], "Failed");
    assert_eq!(rig.rejections().len(), 1);

    rig.set_content("192.0.2.10");
    assert_eq!(rig.reconcile().await, READY);
    let fixed_run = rig.status()["workflow"].clone();
    assert_ne!(fixed_run["run"], rejected_run["run"], "a new run");
    assert_ne!(
        fixed_run["steps"][0]["key"], rejected_run["steps"][0]["key"],
        "with new keys"
    );
    assert_eq!(fixed_run["steps"][0]["state"], "Done");
    assert_eq!(fixed_run["steps"][0]["attempts"], 1);
}

/// The package without a connection Secret: the Secret a first pass
/// creates is a change of a related object, which asks for an early check
/// (as it would of any resource, rejected or not). Its callbacks are
/// asynchronous: a synchronous one runs on a blocking thread, and the
/// paused clock would run on while that thread works, so the attempts
/// counted by a virtual deadline would depend on the machine's load.
fn without_secret(dns: &Dns) -> Package {
    Records::package(dns, false, false)
}

#[tokio::test(start_paused = true)]
async fn a_running_controller_tries_a_rejected_resource_again_only_at_its_interval() {
    let cluster = FakeCluster::new();
    let dns = Dns::default();
    let client: Arc<dyn blue_kubernetes_client::Client> = Arc::new(cluster.clone());
    let mut config = blue_kubernetes::Config::new(client, vec![without_secret(&dns)]);
    config.namespace = NS.into();
    config.now = common::tokio_clock();
    config.lock_domain = blue_kubernetes::config::LockDomain::new();
    let runtime = blue_kubernetes::start(blue_kubernetes::controller(config).unwrap()).unwrap();
    let phase = || cluster.get(&records(), NS, "www").unwrap()["status"]["phase"].clone();
    let after = |ms| tokio::time::sleep(std::time::Duration::from_millis(ms));

    cluster.create(
        &records(),
        NS,
        "www",
        json!({"config": {"content": "bogus"}}),
    );
    after(5_000).await;
    assert_eq!(phase(), "Rejected");
    // Backoff would have tried again at 1 s, 2 s, 4 s, 8 s, 16 s...
    after(50_000).await;
    assert_eq!(dns.attempts(), 1, "no backoff retries");
    // The periodic check comes within the stretched interval of the first
    // attempt (at 0 s), the one after it not before twice the interval:
    // look at 5 s past the first bound (55 s have passed).
    after(stretched(60_000) + 5_000 - 55_000).await;
    assert_eq!(dns.attempts(), 2, "the periodic check");

    cluster.edit_spec(&records(), NS, "www", |s| {
        s["config"]["content"] = json!("192.0.2.10");
    });
    after(5_000).await;
    assert_eq!(phase(), "Ready");
    runtime.stop().await;
}
