//! # 9. Durable steps and crash tests
//!
//! A package that declares durable steps
//! ([`ResourceSchema::steps`](blue_kubernetes::ResourceSchema::steps)) runs
//! its `converge` as named steps, recorded in `status.workflow`; after a
//! crash, the next process skips the done ones and re-runs the one that
//! was cut short with `step.interrupted() == true` and the same
//! `step.key()`. What your package must get right is the step that was cut
//! short: its effect may have happened. Test exactly that with
//! [`TestOperator::crash_at`](crate::TestOperator::crash_at): it kills a
//! pass at a step boundary (a [`Crash`](crate::Crash) in front of the
//! controller's client) and starts a new process, a controller with
//! nothing of the old one's memory; then reconcile again.
//!
//! The backend below is not idempotent on purpose: creating a role that
//! exists fails, as PostgreSQL's `CREATE ROLE` does.
//!
//! ```
//! use blue_kubernetes::*;
//! use blue_kubernetes::{package::NoOutputs, resource::{Phase, Reason}, steps::Steps};
//! use blue_kubernetes_client::ResourceDescriptor;
//! use blue_testkit::{CrashAt, TestOperator};
//! use serde_json::json;
//! use std::collections::BTreeMap;
//! use std::sync::{Arc, Mutex};
//!
//! /// The fake backend: roles by name (with the key that made them), grants,
//! /// and how many CREATE ROLE statements ran.
//! #[derive(Clone, Default)]
//! struct Db {
//!     roles: Arc<Mutex<BTreeMap<String, String>>>,
//!     grants: Arc<Mutex<Vec<String>>>,
//!     creates: Arc<Mutex<usize>>,
//! }
//!
//! impl Db {
//!     fn create_role(&self, name: &str, key: &str) -> CallbackResult<()> {
//!         *self.creates.lock().unwrap() += 1;
//!         let mut roles = self.roles.lock().unwrap();
//!         if roles.contains_key(name) {
//!             return Err(format!("role {name:?} already exists").into());
//!         }
//!         roles.insert(name.into(), key.into());
//!         Ok(())
//!     }
//! }
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct DbConfig {}
//!
//! #[async_trait]
//! impl Infrastructure for Db {
//!     type Config = DbConfig;
//!     type Outputs = NoOutputs;
//!
//!     fn schema() -> ResourceSchema {
//!         ResourceSchema::new(ResourceDescriptor::new("example.com", "v1", "databases", "Database"))
//!             .steps()
//!     }
//!
//!     async fn observe(&self, _: &Context<DbConfig>) -> CallbackResult<Observation<NoOutputs>> {
//!         let done = !self.grants.lock().unwrap().is_empty();
//!         Ok(Observation::new(done, done, done))
//!     }
//!
//!     async fn converge(&self, cx: &Context<DbConfig>) -> CallbackResult<Outcome<NoOutputs>> {
//!         // Steps may borrow: each takes a reference, not the backend.
//!         let (db, steps) = (self, cx.steps());
//!         let role: String = steps
//!             .run("role", |step| async move {
//!                 let name = "app".to_string();
//!                 // Cut short before: it may exist. Look first.
//!                 if step.interrupted() && db.roles.lock().unwrap().contains_key(&name) {
//!                     return Ok(name);
//!                 }
//!                 db.create_role(&name, step.key())?;
//!                 Ok(name)
//!             })
//!             .await?;
//!         steps
//!             .run("grants", |_step| async move {
//!                 db.grants.lock().unwrap().push(format!("ALL ON app TO {role}"));
//!                 Ok(())
//!             })
//!             .await?;
//!         Ok(Outcome::done())
//!     }
//!
//!     async fn delete(&self, _: &Context<DbConfig>) -> CallbackResult<Outcome<NoOutputs>> {
//!         Ok(Outcome::done())
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let db = Db::default();
//! let mut op = TestOperator::new(Package::new(db.clone()).unwrap());
//! op.create("orders", json!({"config": {}}));
//!
//! // The role is made; the process dies before its Done is recorded, and
//! // a new one starts.
//! op.crash_at(CrashAt::StepEnded("role".into()), "orders").await;
//! let status = op.status("orders");
//! assert_eq!(status["workflow"]["steps"][0]["state"], "Running");
//!
//! // The new process runs the role step again, interrupted, with the same
//! // key; it finds the role instead of failing on "already exists".
//! let report = op.reconcile("orders").await;
//! assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
//! assert_eq!(*db.creates.lock().unwrap(), 1, "CREATE ROLE ran once");
//! let key = status["workflow"]["steps"][0]["key"].as_str().unwrap();
//! assert_eq!(db.roles.lock().unwrap()["app"], key);
//! assert_eq!(db.grants.lock().unwrap().len(), 1);
//! # }
//! ```
//!
//! Without the `interrupted()` check the second pass fails (`Failed` /
//! `ExecutionFailed`) on every retry: the test catches it. Crash at each
//! boundary of your run in turn (`CrashAt::StepStarted(name)`: the step's
//! `Running` record landed and it never started; `CrashAt::StepEnded(name)`:
//! it ran and its `Done` record never landed; `AfterStatusWrite(n)` and
//! `BeforeStatusWrite(n)` for any write), or call
//! [`Crash::here`](crate::Crash::here) on
//! [`op.crash()`](crate::TestOperator::crash) inside your fake backend to
//! die in the middle of an effect
//! ([`expect_crash`](crate::TestOperator::expect_crash) drives that pass).
//! Drive async callbacks: a sync one runs on a
//! blocking thread, which a dropped pass cannot stop (a crash at a status
//! write still works for it: the callback's next step finds its pass gone).
//! [`FakeInfra::stepped_package`](crate::FakeInfra::stepped_package) is a
//! ready-made stepped package for controller tests.
