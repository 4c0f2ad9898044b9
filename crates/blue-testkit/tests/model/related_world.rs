//! The world of `related.rs`: a server and two databases that refer to
//! it, each database with a ConfigMap naming it (a related kind), over one
//! [`FakeCluster`]; the database package checks, as each callback starts,
//! that the server is Ready.

use crate::common::NS;
use crate::related::Pending;
use blue_kubernetes::package::NoOutputs;
use blue_kubernetes::related::Related;
use blue_kubernetes::{
    async_trait, CallbackResult, Context, IdentityContext, Infrastructure, Observation, Outcome,
    Package, ResourceSchema,
};
use blue_kubernetes_client::ResourceDescriptor;
use blue_testkit::{FakeClock, FakeCluster, FakeInfra};
use serde_json::{json, Map, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub const DATABASES: [&str; 2] = ["d1", "d2"];
pub const SERVER: &str = "s1";
const OWNER: &str = "example.com/owner";

pub fn servers() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "servers", "Server")
}

pub fn databases() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "databases", "Database")
}

pub fn config_maps() -> ResourceDescriptor {
    ResourceDescriptor::new("", "v1", "configmaps", "ConfigMap")
}

pub fn profile(name: &str) -> String {
    format!("{NS}--{name}")
}

pub fn cm_path(db: usize) -> String {
    format!("/api/v1/namespaces/{NS}/configmaps/{}-cm", DATABASES[db])
}

pub struct RelatedWorld {
    pub clock: FakeClock,
    pub cluster: FakeCluster,
    /// The server's infrastructure.
    pub infra: FakeInfra,
    /// The databases' infrastructure: profile -> value.
    pub dbs: Arc<Mutex<HashMap<String, Value>>>,
    /// Database callbacks that ran while the server was not Ready.
    pub violations: Arc<Mutex<Vec<String>>>,
    pub pending: RefCell<Vec<Pending>>,
}

/// Ready for its generation and not being deleted, as the user sees it.
pub fn server_ready(cluster: &FakeCluster) -> bool {
    cluster.get(&servers(), NS, SERVER).is_some_and(|o| {
        o["status"]["phase"] == "Ready"
            && o["status"]["observedGeneration"] == o["metadata"]["generation"]
            && o["metadata"]["deletionTimestamp"].is_null()
    })
}

pub fn database_package(world: &RelatedWorld) -> Package {
    let databases = Databases {
        cluster: world.cluster.clone(),
        dbs: world.dbs.clone(),
        violations: world.violations.clone(),
    };
    Package::new(databases).expect("a structural package")
}

/// The databases' package: each callback checks the server is Ready.
struct Databases {
    cluster: FakeCluster,
    dbs: Arc<Mutex<HashMap<String, Value>>>,
    violations: Arc<Mutex<Vec<String>>>,
}

type Fields = Map<String, Value>;
type Cx = Context<Fields>;

impl Databases {
    fn guard(&self, callback: &str, name: &str) {
        if !server_ready(&self.cluster) {
            self.violations.lock().unwrap().push(format!(
                "{callback} of {name:?} ran while the server was not Ready"
            ));
        }
    }
}

fn desired(cx: &Cx) -> Value {
    cx.config().get("value").cloned().unwrap_or(Value::Null)
}

#[async_trait]
impl Infrastructure for Databases {
    type Config = Fields;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(databases())
            .reference("serverRef", servers())
            .related(Related::annotated(config_maps(), OWNER))
    }

    async fn identity(&self, cx: &IdentityContext<Fields>) -> CallbackResult<Vec<Option<String>>> {
        self.guard("identity", &cx.metadata().name);
        Ok(vec![
            Some("related-model".into()),
            Some(cx.profile().into()),
        ])
    }

    async fn observe(&self, cx: &Cx) -> CallbackResult<Observation<NoOutputs>> {
        self.guard("observe", &cx.metadata().name);
        let have = self.dbs.lock().unwrap().get(cx.profile()).cloned();
        let matches = have.as_ref() == Some(&desired(cx));
        Ok(Observation::new(have.is_some(), matches, have.is_some()))
    }

    async fn converge(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        self.guard("converge", &cx.metadata().name);
        let mut dbs = self.dbs.lock().unwrap();
        dbs.insert(cx.profile().into(), desired(cx));
        Ok(Outcome::done())
    }

    async fn delete(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        self.guard("delete", &cx.metadata().name);
        self.dbs.lock().unwrap().remove(cx.profile());
        Ok(Outcome::done())
    }
}

pub fn spec(value: u8, server: bool) -> Value {
    let mut config = json!({"value": value});
    if server {
        config["serverRef"] = json!({"name": SERVER});
    }
    json!({"reconcileInterval": "1h", "config": config})
}

impl RelatedWorld {
    pub fn create_cm(&self, db: usize, v: u8) {
        let name = DATABASES[db];
        let cm = json!({"metadata": {"name": format!("{name}-cm"), "annotations": {OWNER: name}},
                        "data": {"v": v.to_string()}});
        self.cluster
            .create_object(&format!("/api/v1/namespaces/{NS}/configmaps"), cm);
    }
}
