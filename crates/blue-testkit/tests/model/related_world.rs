//! The world of `related.rs`: a server and two databases that refer to
//! it, each database with a ConfigMap naming it (a related kind), over one
//! [`FakeCluster`]; the database package checks, as each callback starts,
//! that the server is Ready.

use crate::common::NS;
use crate::related::Pending;
use blue_kubernetes::package::WorkflowOutcome;
use blue_kubernetes::related::Related;
use blue_kubernetes::{Observation, Package};
use blue_kubernetes_client::ResourceDescriptor;
use blue_testkit::{FakeClock, FakeCluster, FakeInfra};
use serde_json::{json, Value};
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
    let guard = {
        let (cluster, violations) = (world.cluster.clone(), world.violations.clone());
        move |callback: &str, opts: &blue_kubernetes::package::CallbackInput| {
            if !server_ready(&cluster) {
                let name = opts.resource()["metadata"]["name"].clone();
                violations.lock().unwrap().push(format!(
                    "{callback} of {name} ran while the server was not Ready"
                ));
            }
        }
    };
    let desired = |opts: &blue_kubernetes::package::CallbackInput| {
        opts.get("value").cloned().unwrap_or(Value::Null)
    };
    let (g1, g2, g3, g4) = (guard.clone(), guard.clone(), guard.clone(), guard);
    let (d1, d2, d3) = (world.dbs.clone(), world.dbs.clone(), world.dbs.clone());
    Package::builder(databases())
        .reference("serverRef", servers())
        .related(Related::annotated(config_maps(), OWNER))
        .identity_async(move |opts| {
            g1("identity", &opts);
            async move {
                Ok(vec![
                    Some("related-model".into()),
                    Some(opts.profile().into()),
                ])
            }
        })
        .observe_async(move |opts| {
            g2("observe", &opts);
            let have = d1.lock().unwrap().get(opts.profile()).cloned();
            let matches = have.as_ref() == Some(&desired(&opts));
            async move { Ok(Observation::new(have.is_some(), matches, have.is_some())) }
        })
        .converge_async(move |opts| {
            g3("converge", &opts);
            d2.lock()
                .unwrap()
                .insert(opts.profile().into(), desired(&opts));
            async move { Ok(WorkflowOutcome::new()) }
        })
        .delete_async(move |opts| {
            g4("delete", &opts);
            d3.lock().unwrap().remove(opts.profile());
            async move { Ok(WorkflowOutcome::new()) }
        })
        .build()
        .expect("all callbacks")
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
