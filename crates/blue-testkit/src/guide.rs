//! # Testing your own package
//!
//! Your package's callbacks are the part of an operator only you can test.
//! This guide drives a package through the controller's real rules, in
//! process and deterministically: [`FakeCluster`](crate::FakeCluster) plays
//! the API server (with your generated CRD's schema), [`FakeClock`](crate::FakeClock)
//! plays time, and *your own* fake infrastructure records what the callbacks
//! did. No cluster, no sleeps. [`TestOperator`](crate::TestOperator) puts
//! the three together (section 11); section 12 tests the binary around it.
//!
//! Add to your crate's `Cargo.toml`:
//!
//! ```toml
//! [dev-dependencies]
//! blue-testkit = "0.2"
//! proptest = "1"
//! tokio = { version = "1", features = ["macros", "rt"] }
//! ```
//!
//! ## 1. A package with a typed config and a fake backend
//!
//! A package is one type implementing
//! [`Infrastructure`](blue_kubernetes::Infrastructure). Write its methods
//! against a small trait or handle you can fake; here the "backend" is a
//! map from profile to bucket size, held by the package itself. The
//! config is a typed struct (`serde` + `schemars`), so the generated CRD
//! describes it, and every method reads it from its
//! [`Context`](blue_kubernetes::Context).
//!
//! ## 2. Reconcile it and assert on status and on your infrastructure
//!
//! A [`TestOperator`](crate::TestOperator) is your package's operator
//! over a fake API server whose clock it reads. Give it the CRD the
//! operator ships ([`with_crds`](crate::TestOperator::with_crds), the
//! package's [`blue_kubernetes::crd::generate`] with the operator's
//! [`Names`](blue_kubernetes::config::Names), so its destroy-protection
//! key is declared; [`with_crd_config`](crate::TestOperator::with_crd_config)
//! for the CRD options it ships): from then on the fake
//! server prunes, defaults and validates every write like a real one, so a status
//! field your CRD does not declare disappears here as it would on a
//! cluster, and a config the CRD refuses panics at `create`.
//!
//! ```
//! use blue_kubernetes::{
//!     async_trait, package::NoOutputs, resource::{Phase, Reason}, CallbackResult, Context,
//!     Infrastructure, Observation, Outcome, Package, Report, ResourceSchema,
//! };
//! use blue_kubernetes_client::ResourceDescriptor;
//! use blue_testkit::{Fault, Operation, TestOperator};
//! use serde_json::json;
//! use std::collections::HashMap;
//! use std::sync::{Arc, Mutex};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct BucketConfig {
//!     /// Gigabytes.
//!     #[schemars(range(min = 1, max = 100))]
//!     size: u32,
//! }
//!
//! /// The package over its fake backend: bucket size by profile, and
//! /// whether writes fail.
//! #[derive(Clone, Default)]
//! struct Buckets {
//!     sizes: Arc<Mutex<HashMap<String, u32>>>,
//!     down: Arc<Mutex<bool>>,
//! }
//!
//! type Cx = Context<BucketConfig>;
//!
//! #[async_trait]
//! impl Infrastructure for Buckets {
//!     type Config = BucketConfig;
//!     type Outputs = NoOutputs;
//!
//!     fn schema() -> ResourceSchema {
//!         ResourceSchema::new(ResourceDescriptor::new("example.com", "v1", "buckets", "Bucket"))
//!     }
//!
//!     async fn observe(&self, cx: &Cx) -> CallbackResult<Observation<NoOutputs>> {
//!         let have = self.sizes.lock().unwrap().get(cx.profile()).copied();
//!         let exists = have.is_some();
//!         Ok(Observation::exists(exists).matching(have == Some(cx.config().size)).ready(exists))
//!     }
//!
//!     async fn converge(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
//!         if *self.down.lock().unwrap() {
//!             return Err("backend unavailable".into());
//!         }
//!         self.sizes.lock().unwrap().insert(cx.profile().into(), cx.config().size);
//!         Ok(Outcome::done())
//!     }
//!
//!     async fn delete(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
//!         self.sizes.lock().unwrap().remove(cx.profile());
//!         Ok(Outcome::done())
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let buckets = Buckets::default();
//! // The operator, the API server with the CRD the operator ships, and time.
//! let op = TestOperator::new(Package::new(buckets.clone()).unwrap()).with_crds();
//!
//! // A new resource converges; the CRD filled in the common defaults.
//! let created = op.create("logs", json!({"config": {"size": 10}}));
//! assert_eq!(created["spec"]["deletionPolicy"], "Retain");
//! let report = op.reconcile("logs").await;
//! assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
//! let status = op.status("logs");
//! assert_eq!(status["phase"], "Ready");
//! assert_eq!(status["profile"], "default--logs");
//! assert_eq!(buckets.sizes.lock().unwrap()["default--logs"], 10);
//!
//! // Nothing is due until the reconcile interval (60s by default) passes.
//! assert_eq!(op.reconcile("logs").await, Report::NotDue);
//!
//! // Drift is repaired at the next periodic check (the interval, stretched
//! // by under a tenth from the uid so that resources spread out).
//! buckets.sizes.lock().unwrap().insert("default--logs".into(), 1);
//! op.clock().advance(66_000);
//! op.reconcile("logs").await;
//! assert_eq!(buckets.sizes.lock().unwrap()["default--logs"], 10);
//!
//! // Script faults: your backend fails, then the API server loses a race.
//! *buckets.down.lock().unwrap() = true;
//! op.edit_spec("logs", |spec| spec["config"]["size"] = json!(20));
//! let report = op.reconcile("logs").await;
//! assert_eq!(report, Report::Reconciled(Phase::Failed, Reason::ExecutionFailed));
//! let status = op.status("logs");
//! assert_eq!(status["retryCount"], 1);
//! assert!(!status.to_string().contains("backend unavailable"), "error text stays out");
//!
//! *buckets.down.lock().unwrap() = false;
//! op.clock().advance(1_000); // the first retry backoff
//! op.cluster().inject(Operation::UpdateStatus, Fault::Conflict);
//! let report = op.reconcile("logs").await;
//! assert_eq!(report, Report::Conflict, "the publish lost the race: no effect ran");
//! assert_eq!(buckets.sizes.lock().unwrap()["default--logs"], 10);
//! // `settle` runs passes (moving the clock to each retry) until Ready.
//! let report = op.settle("logs").await;
//! assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
//! assert_eq!(buckets.sizes.lock().unwrap()["default--logs"], 20);
//!
//! // The CRD refuses what your type's schema forbids, before the controller sees it.
//! let too_big = json!({"metadata": {"name": "x"}, "spec": {"config": {"size": 1000}}});
//! assert!(op.cluster().admit(op.package().descriptor(), too_big).is_err());
//! # }
//! ```
//!
//! A config that passes the CRD but does not deserialize into your type
//! (possible with open or hand-edited schemas, or without the CRD) makes
//! the resource `Invalid` with reason `InvalidConfiguration` before any
//! callback runs; the serde message goes to the operator's log at INFO.
//!
//! ## 3. One property test over your own config type
//!
//! [`arb_config_from_crd`](crate::strategies::arb_config_from_crd) draws
//! configs from the CRD's `spec.config` schema (which came from your type),
//! and [`arb_spec_with`](crate::strategies::arb_spec_with) wraps any config
//! strategy, yours included, in valid common fields. The property below
//! checks that every config the CRD admits deserializes into the type and
//! converges: the CRD and the type cannot drift apart unnoticed.
//!
//! ```
//! use blue_kubernetes::*;
//! use blue_kubernetes::{crd::CrdConfig, package::{NoOutputs, ValidationErrors}, resource::Phase};
//! use blue_kubernetes_client::ResourceDescriptor;
//! use blue_testkit::strategies::{arb_config_from_crd, arb_spec_with};
//! use blue_testkit::TestOperator;
//! use proptest::prelude::*;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct BucketConfig {
//!     #[schemars(range(min = 1, max = 100))]
//!     size: u32,
//!     #[schemars(regex(pattern = r"^[a-z]{2}-[a-z]+-[0-9]$"))]
//!     region: Option<String>,
//! }
//!
//! struct Buckets;
//!
//! #[async_trait]
//! impl Infrastructure for Buckets {
//!     type Config = BucketConfig;
//!     type Outputs = NoOutputs;
//!     fn schema() -> ResourceSchema {
//!         ResourceSchema::new(ResourceDescriptor::new("example.com", "v1", "buckets", "Bucket"))
//!     }
//!     async fn validate(&self, cx: &Context<BucketConfig>) -> CallbackResult<ValidationErrors> {
//!         Ok(if cx.config().size > 0 { vec![] } else { vec!["size".to_string()] }.into())
//!     }
//!     async fn observe(&self, _: &Context<BucketConfig>) -> CallbackResult<Observation<NoOutputs>> {
//!         Ok(Observation::READY)
//!     }
//!     async fn converge(&self, _: &Context<BucketConfig>) -> CallbackResult<Outcome<NoOutputs>> {
//!         Ok(Outcome::done())
//!     }
//!     async fn delete(&self, _: &Context<BucketConfig>) -> CallbackResult<Outcome<NoOutputs>> {
//!         Ok(Outcome::done())
//!     }
//! }
//!
//! fn package() -> Package {
//!     Package::new(Buckets).unwrap()
//! }
//!
//! let definition = crd::generate(&package(), &CrdConfig::default()).unwrap();
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
//! proptest!(ProptestConfig::with_cases(32), |(spec in arb_spec_with(arb_config_from_crd(&definition)))| {
//!     let op = TestOperator::new(package()).with_crds();
//!     op.create("b", spec.clone());
//!     let report = runtime.block_on(op.reconcile("b"));
//!     let Report::Reconciled(phase, _) = report else { panic!("{report:?}") };
//!     // Suspended and stopped specs are fine; Invalid would mean the CRD
//!     // admitted a config the type refuses.
//!     prop_assert_ne!(phase, Phase::Invalid, "{}", spec);
//! });
//! ```
//!
//! If your config type holds values a schema cannot constrain (say, two
//! fields that must agree), write the strategy yourself and pass it to
//! [`arb_spec_with`](crate::strategies::arb_spec_with), e.g.
//! `(1u32..=100).prop_map(|size| json!({"size": size}))`.
//!
//! ## 4. The pitfall this catches
//!
//! A hand-written CRD with `status: {type: object}` and no properties makes
//! the API server prune every status write: the controller logs success and
//! the resource shows no phase. With the CRD installed in the fake server,
//! the same test fails at the first status assertion:
//!
//! ```
//! use blue_kubernetes::crd::{self, CrdConfig};
//! use blue_kubernetes_client::ResourceDescriptor;
//! use blue_testkit::{FakeInfra, TestOperator};
//! use serde_json::json;
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
//! let package = FakeInfra::new().package(d);
//! let mut hand_written = crd::generate(&package, &CrdConfig::default()).unwrap();
//! hand_written["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"] =
//!     json!({"type": "object"});
//!
//! let op = TestOperator::new(package);
//! op.cluster().install_crd(&hand_written, "v1");
//! op.create("w", json!({"config": {"value": 1}}));
//! op.reconcile("w").await;
//! assert_eq!(op.status("w"), json!({}), "pruned");
//! # }
//! ```
//!
//! ## 5. The polling runtime
//!
//! [`blue_kubernetes::start`] runs the same rules on a timer. Test it with
//! `#[tokio::test(start_paused = true)]` and a clock that follows tokio's
//! (paused) time, then `tokio::time::advance` instead of sleeping; stop the
//! runtime at the end of the test (`runtime.stop().await`). A
//! [`TestOperator`](crate::TestOperator)'s controller starts the same way
//! (`start(op.controller().clone())`), given that clock with
//! [`configure`](crate::TestOperator::configure).
//!
//! ## 6. Expectation-style tests with `MockClient`
//!
//! The `FakeCluster` above stays the recommended path: it behaves like an
//! API server, so a test says what should *be* true afterwards. When a test
//! should instead say exactly which requests are made (a cost budget, a
//! write that must never happen), [`MockClient`](crate::MockClient)
//! (`mockall`, from the client crate's `mock` feature) states expectations
//! per method; unmet ones fail the test when the mock is dropped.
//!
//! ```
//! use blue_kubernetes::{controller, reconcile, resource::{Phase, Reason}, Config, Report};
//! use blue_kubernetes_client::ResourceDescriptor;
//! use blue_testkit::{Callback, FakeInfra, MockClient};
//! use serde_json::{json, Value};
//! use std::sync::{Arc, Mutex};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
//! let infra = FakeInfra::new();
//! let package = infra.package(d.clone());
//! let widget = json!({
//!     "apiVersion": "example.com/v1", "kind": "Widget",
//!     "metadata": {"name": "w", "namespace": "default", "uid": "u1",
//!                  "generation": 1, "resourceVersion": "1"},
//!     "spec": {"config": {"value": 3}},
//! });
//! let written = |object: &Value, change: &dyn Fn(&mut Value)| {
//!     let mut next = object.clone();
//!     change(&mut next);
//!     Ok(next)
//! };
//!
//! let mut client = MockClient::new();
//! client.expect_get_resource().returning(move |_, _, _| Ok(Some(widget.clone())));
//! // The finalizer is added exactly once, before any effect.
//! client.expect_update_finalizers().times(1).returning(move |_, object, f| {
//!     written(object, &|o| o["metadata"]["finalizers"] = json!(f))
//! });
//! let phases = Arc::new(Mutex::new(Vec::new()));
//! let seen = phases.clone();
//! client.expect_update_status().returning(move |_, object, status| {
//!     seen.lock().unwrap().push(status["phase"].as_str().unwrap().to_string());
//!     written(object, &|o| o["status"] = status.clone())
//! });
//! // Never listed, never deleted: no other expectation, so any other call panics.
//!
//! let c = controller(Config::new(Arc::new(client), vec![package.clone()])).unwrap();
//! let report = reconcile(&c, &package, "default", "w").await.unwrap();
//! assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
//! assert_eq!(*phases.lock().unwrap(), ["Reconciling", "Ready"]);
//! assert_eq!(infra.count(Callback::Converge), 1);
//! drop(c); // checks `times(1)`
//! # }
//! ```
//!
//! ## 7. A package that writes a Secret
//!
//! Packages manage their own objects (Secrets, ConfigMaps, custom resources
//! of other kinds) through their context's API handle
//! ([`Context::api`](blue_kubernetes::Context::api), a
//! [`RawApi`](blue_kubernetes_client::RawApi)): the controller's own
//! client, behind the pass's fence. Under a
//! [`TestOperator`](crate::TestOperator) that is the
//! [`FakeCluster`](crate::FakeCluster), which answers any object
//! path as the API server does (resourceVersions, `AlreadyExists`,
//! `Conflict`, `NotFound` as [`Error::Http`](blue_kubernetes_client::Error::Http),
//! a Secret's `stringData` stored base64-encoded in `data`), and
//! `Operation::Raw*` faults fail its requests. No hand-written fake for
//! Secrets: assert on the stored object, and play the user who deletes it.
//!
//! ```
//! use blue_kubernetes::*;
//! use blue_kubernetes::{package::{Api, NoOutputs}, resource::{Phase, Reason}};
//! use blue_kubernetes_client::{ApiPath, ApiRequest, ErrorKind, Method, ResourceDescriptor};
//! use blue_testkit::{FakeCluster, Fault, Operation, TestOperator};
//! use serde_json::json;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct DatabaseConfig {
//!     user: String,
//! }
//!
//! type Cx = Context<DatabaseConfig>;
//!
//! /// `NAMESPACE/secrets[/NAME-credentials]` of the resource.
//! fn secrets(cx: &Cx, item: bool) -> Result<ApiPath, blue_kubernetes_client::Error> {
//!     let meta = cx.metadata();
//!     let name = format!("{}-credentials", meta.name);
//!     ApiPath::namespaced("", "v1", &meta.namespace, "secrets", item.then_some(name.as_str()), None)
//! }
//!
//! /// The API handle: every method but `identity` has one.
//! fn api(cx: &Cx) -> CallbackResult<&Api> {
//!     Ok(cx.api().ok_or("no API handle")?)
//! }
//!
//! struct Databases;
//!
//! #[async_trait]
//! impl Infrastructure for Databases {
//!     type Config = DatabaseConfig;
//!     type Outputs = NoOutputs;
//!
//!     fn schema() -> ResourceSchema {
//!         ResourceSchema::new(ResourceDescriptor::new("example.com", "v1", "databases", "Database"))
//!     }
//!
//!     async fn observe(&self, cx: &Cx) -> CallbackResult<Observation<NoOutputs>> {
//!         let exists = match api(cx)?.send(ApiRequest::get(secrets(cx, true)?)).await {
//!             Ok(found) => found.body.is_some(),
//!             Err(e) if e.kind() == ErrorKind::NotFound => false,
//!             Err(e) => return Err(e.into()),
//!         };
//!         Ok(Observation::new(exists, exists, exists))
//!     }
//!
//!     async fn converge(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
//!         let secret = json!({
//!             "apiVersion": "v1", "kind": "Secret",
//!             "metadata": {
//!                 "name": format!("{}-credentials", cx.metadata().name),
//!                 "labels": {"app.kubernetes.io/managed-by": "db"},
//!             },
//!             "stringData": {"user": cx.config().user, "password": "generated-once"},
//!         });
//!         let create = ApiRequest::new(Method::Post, secrets(cx, false)?).with_body(secret);
//!         match api(cx)?.send(create).await {
//!             // Someone created it meanwhile: it is there, which is what we wanted.
//!             Err(e) if e.http_status() == Some(409) && !e.is_conflict() => {}
//!             written => drop(written?),
//!         }
//!         Ok(Outcome::done())
//!     }
//!
//!     async fn delete(&self, _: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
//!         Ok(Outcome::done())
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let cluster = FakeCluster::new();
//! let op = TestOperator::on(&cluster, vec![Package::new(Databases).unwrap()]).in_namespace("dev");
//!
//! op.create("orders", json!({"config": {"user": "app"}}));
//! let report = op.reconcile("orders").await;
//! assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
//! let path = "/api/v1/namespaces/dev/secrets/orders-credentials";
//! let stored = cluster.get_object(path).unwrap();
//! assert_eq!(stored["data"]["user"], "YXBw", "stringData is stored base64-encoded");
//! assert!(stored.get("stringData").is_none());
//!
//! // A user deletes the Secret: the next periodic check (after the
//! // interval and its uid stretch of up to 10%) restores it.
//! cluster.delete_object(path);
//! op.clock().advance(66_000);
//! op.reconcile("orders").await;
//! assert!(cluster.get_object(path).is_some());
//!
//! // The API server refuses the create: the resource fails and retries.
//! cluster.delete_object(path);
//! op.clock().advance(66_000);
//! cluster.inject(Operation::RawCreate, Fault::Unavailable);
//! let report = op.reconcile("orders").await;
//! assert_eq!(report, Report::Reconciled(Phase::Failed, Reason::ExecutionFailed));
//! assert!(cluster.objects("/api/v1/namespaces/dev/secrets").is_empty());
//! # }
//! ```
//!
//! With the client's `k8s-openapi` feature, `blue_kubernetes_client::typed::TypedApi`
//! sends the same requests for typed objects (a `Secret` with its `data`
//! as bytes, a replace guarded by resourceVersion, a delete with
//! preconditions), and the fake answers them alike.
//!
//! Every raw request is in [`FakeCluster::call_log`](crate::FakeCluster::call_log)
//! (as `Operation::RawGet`, `RawCreate`...), not in
//! [`CallCounts`](crate::CallCounts), which counts the controller's calls.
//! To seed or alter an object as a user would, use
//! [`FakeCluster::create_object`](crate::FakeCluster::create_object) and
//! [`edit_object`](crate::FakeCluster::edit_object). Watches over raw
//! paths are not served (the [`Client`](blue_kubernetes_client::Client)
//! watch of a Secret descriptor sees the same objects).
//!
//! ## 8. Connection Secrets and outputs
//!
//! A package that declares connection details
//! ([`connection_secret`](blue_kubernetes::ResourceSchema::connection_secret))
//! gets the resource's Secret through `cx.connection()`; the fake answers
//! it like an API server, so a test can read the Secret, delete it as a
//! user would, and see the next pass put it back with the same password.
//!
//! ```
//! use base64::Engine;
//! use blue_kubernetes::*;
//! use blue_kubernetes::{config::REQUEST_ANNOTATION, resource::{Phase, Reason}};
//! use blue_kubernetes_client::ResourceDescriptor;
//! use blue_testkit::{FakeCluster, TestOperator};
//! use serde_json::json;
//! use std::sync::atomic::{AtomicBool, Ordering};
//!
//! fn databases() -> ResourceDescriptor {
//!     ResourceDescriptor::new("example.com", "v1", "databases", "Database")
//! }
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct DbConfig {}
//!
//! #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
//! struct DbOutputs {
//!     port: u16,
//! }
//!
//! /// The fake backend: whether the database was made.
//! #[derive(Default)]
//! struct Databases {
//!     made: AtomicBool,
//! }
//!
//! #[async_trait]
//! impl Infrastructure for Databases {
//!     type Config = DbConfig;
//!     type Outputs = DbOutputs;
//!
//!     fn schema() -> ResourceSchema {
//!         ResourceSchema::new(databases()).connection_secret()
//!     }
//!
//!     async fn observe(&self, _: &Context<DbConfig>) -> CallbackResult<Observation<DbOutputs>> {
//!         let made = self.made.load(Ordering::SeqCst);
//!         Ok(Observation::new(made, made, made))
//!     }
//!
//!     async fn converge(&self, cx: &Context<DbConfig>) -> CallbackResult<Outcome<DbOutputs>> {
//!         let connection = cx.connection().expect("declared");
//!         connection.set("user", "app").await?;
//!         // Stored before it is returned: safe to set on the database now.
//!         let _password = connection.get_or_create("password", || "s3cret".into()).await?;
//!         self.made.store(true, Ordering::SeqCst);
//!         Ok(Outcome::done().with(DbOutputs { port: 5432 }))
//!     }
//!
//!     async fn delete(&self, _: &Context<DbConfig>) -> CallbackResult<Outcome<DbOutputs>> {
//!         Ok(Outcome::done())
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let op = TestOperator::new(Package::new(Databases::default()).unwrap());
//! op.create("app", json!({"config": {}}));
//! let report = op.reconcile("app").await;
//! assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
//! assert_eq!(op.status("app")["outputs"]["port"], 5432);
//!
//! let path = "/api/v1/namespaces/default/secrets/app-connection";
//! let password = |cluster: &FakeCluster| {
//!     let secret = cluster.get_object(path)?;
//!     let b64 = secret["data"]["password"].as_str()?.to_string();
//!     base64::engine::general_purpose::STANDARD.decode(b64).ok()
//! };
//! assert_eq!(password(op.cluster()).as_deref(), Some(&b"s3cret"[..]));
//!
//! // A user deletes the Secret; the next pass (here asked for with the
//! // request annotation) restores it, same password, without converging.
//! op.cluster().delete_object(path);
//! op.cluster().set_annotation(&databases(), "default", "app", REQUEST_ANNOTATION, "1");
//! op.reconcile("app").await;
//! assert_eq!(password(op.cluster()).as_deref(), Some(&b"s3cret"[..]));
//! # }
//! ```
//!
//! ## 9. Durable steps and crash tests
//!
//! A package whose `converge` and `delete` run durable steps is tested by
//! crashing it at a step boundary and starting again: see [`steps`].
//!
//! ## 10. Related objects, references and triggers
//!
//! Without a runtime,
//! [`Controller::reconcile_now`](blue_kubernetes::Controller::reconcile_now)
//! is what a related change (or `Runtime::trigger`) asks for: one pass as
//! if the resource were due, so a test can show that a deleted object is
//! put back without touching the request annotation. With a started
//! runtime (section 5), create or delete the related object through the
//! raw user side
//! ([`FakeCluster::create_object`](crate::FakeCluster::create_object),
//! [`FakeCluster::delete_object`](crate::FakeCluster::delete_object)) and
//! let paused time run a few milliseconds: the watch delivers the change.
//! [`FakeCluster::drop_watch_events`](crate::FakeCluster::drop_watch_events)
//! and [`FakeCluster::stall_watches_of`](crate::FakeCluster::stall_watches_of)
//! show the resync backstop. References are resolved by the controller:
//! a referrer created before what it names is `Waiting` until that is
//! Ready, and [`FakeInfra::package_with`](crate::FakeInfra::package_with)
//! declares references or related kinds on a recording package.
//!
//! ```
//! use blue_kubernetes::{resource::Phase, Report};
//! use blue_kubernetes_client::ResourceDescriptor;
//! use blue_testkit::{FakeCluster, FakeInfra, TestOperator};
//! use serde_json::json;
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let servers = ResourceDescriptor::new("example.com", "v1", "servers", "Server");
//! let databases = ResourceDescriptor::new("example.com", "v1", "databases", "Database");
//! let infra = FakeInfra::new();
//! let server_pkg = infra.package(servers.clone());
//! let db_pkg = infra.package_with(databases, |b| b.reference("serverRef", servers.clone()));
//! // One operator for both kinds; `create` and `reconcile` are the first one's.
//! let op = TestOperator::on(&FakeCluster::new(), vec![db_pkg.clone(), server_pkg.clone()]);
//!
//! op.create("app", json!({"config": {"value": 1, "serverRef": {"name": "main"}}}));
//! let waiting = op.reconcile("app").await;
//! assert!(matches!(waiting, Report::Reconciled(Phase::Waiting, _)));
//!
//! op.cluster().create(&servers, "default", "main", json!({"config": {"value": 7}}));
//! op.reconcile_of(&server_pkg, "main").await;
//! // The runtime would ask for this check itself when the server turned Ready.
//! let ready = op.controller().reconcile_now(&db_pkg, "default", "app").await.unwrap();
//! assert!(matches!(ready, Report::Reconciled(Phase::Ready, _)));
//! # }
//! ```
//!
//! ## 11. `TestOperator`: crashes, settling, and tests in parallel
//!
//! [`TestOperator`](crate::TestOperator) is the operator process of a
//! package test, so that each test says only what it is about:
//!
//! - [`new`](crate::TestOperator::new) (or [`on`](crate::TestOperator::on)
//!   a cluster your packages already write to, with several packages)
//!   builds a controller over a [`FakeCluster`](crate::FakeCluster), with
//!   the cluster's [`FakeClock`](crate::FakeClock) as its clock and a
//!   [`Crash`](crate::Crash) switch in front of its client;
//!   [`in_namespace`](crate::TestOperator::in_namespace),
//!   [`with_crds`](crate::TestOperator::with_crds) and
//!   [`configure`](crate::TestOperator::configure) (say, your
//!   [`Names`](blue_kubernetes::config::Names)) change it, restarts included;
//! - [`restart`](crate::TestOperator::restart) is a new process: a new
//!   controller over the same cluster, nothing of the old one's memory;
//! - [`crash_at`](crate::TestOperator::crash_at) kills a pass at a step
//!   boundary or status write and restarts (section 9);
//! - [`settle`](crate::TestOperator::settle) runs passes, moving the clock
//!   to each retry, until the resource is Ready or released, and fails
//!   naming every report if that takes more than
//!   [`SETTLE_PASSES`](crate::SETTLE_PASSES);
//! - `create`, `edit_spec`, `delete`, `get` and `status` act on its first
//!   package's resources in its namespace; `cluster()`, `clock()` and
//!   `crash()` reach the rest.
//!
//! **The identity lock and parallel tests.** Before it acts on a resource
//! the controller takes the lock of the identity your package computes:
//! two passes with the same identity never run at once, and the second
//! reports [`Busy`](blue_kubernetes::Report::Busy). In an operator that
//! lock is one for the whole process. `cargo test` runs a file's tests on
//! parallel threads of one process, so two tests whose resources compute
//! the same identity (same namespace and name, same backend) would find
//! each other `Busy` now and then. Every controller a `TestOperator`
//! builds, each restart's too, has a
//! [`LockDomain`](blue_kubernetes::config::LockDomain) of its own: your tests need
//! no distinct names or identity prefixes to stay apart. A controller you
//! build yourself with `controller(Config::new(..))` takes the process's
//! lock; in a test, give it `.with_lock_domain(LockDomain::new())`. To make
//! two operators contend on purpose, as two controllers of one operator
//! process would, give one the other's domain:
//! `.with_lock_domain(first.lock_domain())`.
//!
//! ```
//! use blue_kubernetes::{resource::{Phase, Reason}, Report};
//! use blue_kubernetes_client::ResourceDescriptor;
//! use blue_testkit::{FakeInfra, TestOperator};
//! use serde_json::json;
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
//! let infra = FakeInfra::new();
//! let mut a = TestOperator::new(infra.package(d.clone()));
//! a.create("web", json!({"config": {"value": 1}, "deletionPolicy": "Destroy"}));
//! let ready = Report::Reconciled(Phase::Ready, Reason::Converged);
//! assert_eq!(a.settle("web").await, ready);
//! // A new process deletes it: passes run until the resource is released.
//! a.restart();
//! a.delete("web");
//! assert_eq!(a.settle("web").await, Report::Released);
//! assert_eq!(infra.get("default--web"), None);
//!
//! // Two operators whose resources have one identity (same backend,
//! // namespace and name), a pass of each in flight at once: neither is Busy.
//! let b = TestOperator::new(infra.package(d));
//! a.create("db", json!({"config": {"value": 2}}));
//! b.create("db", json!({"config": {"value": 2}}));
//! infra.hold_effects();
//! let (first, second, ()) = tokio::join!(a.reconcile("db"), b.reconcile("db"), async {
//!     infra.effects_started(2).await;
//!     infra.release(2);
//! });
//! assert_eq!((first, second), (ready, ready));
//! # }
//! ```
//!
//! ## 12. The binary: the CRD it ships and its flags
//!
//! An operator's binary is blue-kubernetes' runner (feature `runner`)
//! with your packages: build it in a function of your crate that `main`
//! runs (`fn main() -> ExitCode { cli::runner().run() }`), and test that
//! function. No cluster is needed for the two things worth pinning: the
//! CRD your deployment ships is the one the binary prints
//! (`Runner::crd_yaml` against the committed manifest; with a CRD from
//! last month, the API server prunes the status fields the controller
//! writes today), and your own flags parse, with a mistyped one named
//! (`Runner::command_line`, the whole command line as clap sees it).
//!
//! ```
//! use blue_kubernetes::runner::{clap, Runner};
//! use blue_kubernetes::{config::Names, crd::CrdConfig, Package, ResourceSchema};
//! # use blue_kubernetes::{async_trait, package::NoOutputs, CallbackResult, Context, Infrastructure, Observation, Outcome};
//! # #[derive(serde::Deserialize, schemars::JsonSchema)]
//! # struct BucketConfig { size: u32 }
//! # struct Buckets { region: String }
//! # #[async_trait]
//! # impl Infrastructure for Buckets {
//! #     type Config = BucketConfig;
//! #     type Outputs = NoOutputs;
//! #     fn schema() -> ResourceSchema {
//! #         ResourceSchema::new(blue_kubernetes_client::ResourceDescriptor::new("example.com", "v1", "buckets", "Bucket"))
//! #     }
//! #     async fn observe(&self, _: &Context<BucketConfig>) -> CallbackResult<Observation<NoOutputs>> { Ok(Observation::ABSENT) }
//! #     async fn converge(&self, _: &Context<BucketConfig>) -> CallbackResult<Outcome<NoOutputs>> { Ok(Outcome::done()) }
//! #     async fn delete(&self, _: &Context<BucketConfig>) -> CallbackResult<Outcome<NoOutputs>> { Ok(Outcome::done()) }
//! # }
//!
//! /// The operator's own flags, beside the standard ones.
//! #[derive(clap::Args)]
//! struct Flags {
//!     /// The region buckets are made in
//!     #[arg(long, env = "BUCKETS_REGION")]
//!     region: String,
//! }
//!
//! /// What `main` runs.
//! fn runner() -> Runner<Flags> {
//!     let names = Names::for_domain("buckets.example.com");
//!     let schema = ResourceSchema::of::<Buckets>();
//!     Runner::with_flags::<Flags>("bucket-operator")
//!         .names(names.clone())
//!         .crd(schema, CrdConfig::default().with_names(names))
//!         .packages(|run| Ok(vec![Package::new(Buckets { region: run.args.region.clone() })?]))
//! }
//!
//! // In your tests: `assert_eq!(printed, include_str!("../manifests/crd.yaml"))`.
//! let printed = runner().crd_yaml(true).unwrap();
//! assert!(printed.contains("name: buckets.example.com"), "{printed}");
//!
//! let parse = |args: &[&str]| runner().command_line().try_get_matches_from(args);
//! assert!(parse(&["bucket-operator", "--context", "dev", "--region", "eu-west-1"]).is_ok());
//! let mistyped = parse(&["bucket-operator", "--context", "dev", "--regoin", "eu-west-1"]);
//! let message = mistyped.unwrap_err().to_string();
//! assert!(message.contains("--regoin") && message.contains("--region"), "{message}");
//! ```

pub mod steps;
