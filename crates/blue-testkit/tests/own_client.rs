//! A `Client` of the operator author's own, written the way one was before
//! the trait grew (an in-memory store with the four resource methods and
//! nothing else), still compiles and still drives the controller: every
//! later capability (paging, watches, discovery, Events, Leases) has a
//! default.

mod common;

use async_trait::async_trait;
use blue_kubernetes::resource::{Phase, Reason};
use blue_kubernetes::{controller, reconcile, Config, Report};
use blue_kubernetes_client::{Client, Error, ErrorKind, ResourceDescriptor};
use blue_testkit::{Callback, FakeClock, FakeInfra};
use common::{spec, widgets, NS};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Objects by name, each write guarded by its resourceVersion.
#[derive(Default)]
struct Store {
    objects: Mutex<HashMap<String, Value>>,
}

impl Store {
    fn put(&self, object: Value) {
        let name = object["metadata"]["name"].as_str().unwrap().to_string();
        self.objects.lock().unwrap().insert(name, object);
    }

    fn write(&self, resource: &Value, change: impl FnOnce(&mut Value)) -> Result<Value, Error> {
        let name = resource["metadata"]["name"].as_str().unwrap_or_default();
        let mut objects = self.objects.lock().unwrap();
        let stored = objects
            .get_mut(name)
            .ok_or(Error::kubectl("replace", ErrorKind::NotFound))?;
        if stored["metadata"]["resourceVersion"] != resource["metadata"]["resourceVersion"] {
            return Err(Error::kubectl("replace", ErrorKind::Conflict));
        }
        change(stored);
        let version = stored["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        stored["metadata"]["resourceVersion"] = json!((version + 1).to_string());
        Ok(stored.clone())
    }
}

#[async_trait]
impl Client for Store {
    async fn list_resources(&self, _: &ResourceDescriptor, _: &str) -> Result<Vec<Value>, Error> {
        Ok(self.objects.lock().unwrap().values().cloned().collect())
    }

    async fn get_resource(
        &self,
        _: &ResourceDescriptor,
        _: &str,
        name: &str,
    ) -> Result<Option<Value>, Error> {
        Ok(self.objects.lock().unwrap().get(name).cloned())
    }

    async fn update_status(
        &self,
        _: &ResourceDescriptor,
        resource: &Value,
        status: &Value,
    ) -> Result<Value, Error> {
        self.write(resource, |stored| stored["status"] = status.clone())
    }

    async fn update_finalizers(
        &self,
        _: &ResourceDescriptor,
        resource: &Value,
        finalizers: &[String],
    ) -> Result<Value, Error> {
        self.write(resource, |stored| {
            stored["metadata"]["finalizers"] = json!(finalizers)
        })
    }
}

#[tokio::test]
async fn a_client_with_only_the_four_resource_methods_converges_a_resource() {
    let store = Arc::new(Store::default());
    let mut object = json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": NS, "uid": "u-1", "generation": 1, "resourceVersion": "1"},
    });
    object["spec"] = spec(json!(7));
    store.put(object);
    let infra = FakeInfra::new();
    let package = infra.package(widgets());
    let mut config = Config::new(store.clone(), vec![package.clone()]);
    config.namespace = NS.into();
    config.now = FakeClock::default().as_fn();
    config.event_component = Some("widgets-operator".into());
    let controller = controller(config).expect("valid config");

    let report = reconcile(&controller, &package, NS, "w").await.unwrap();

    assert_eq!(report, Report::Reconciled(Phase::Ready, Reason::Converged));
    assert_eq!(infra.count(Callback::Converge), 1);
    let stored = store
        .get_resource(&widgets(), NS, "w")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored["status"]["phase"], "Ready");
    // The Events the store cannot take are dropped, never a failed pass.
    let metrics = controller.metrics().encode();
    assert!(
        metrics.contains("operation=\"create_event\",result=\"other\""),
        "{metrics}"
    );
}
