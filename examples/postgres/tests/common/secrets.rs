//! Until `FakeCluster` answers raw requests itself: a client that sends
//! the controller's calls to a `FakeCluster` and answers raw requests for
//! core/v1 Secrets from an in-memory store, like an API server would
//! (create refuses an existing name, replace checks resourceVersion).

use async_trait::async_trait;
use blue_kubernetes_client::{
    ApiRequest, ApiResponse, Client, Error, ErrorKind, Method, RawApi, ResourceDescriptor,
};
use blue_testkit::FakeCluster;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
pub struct Secrets {
    objects: Arc<Mutex<BTreeMap<String, Value>>>,
    version: Arc<Mutex<u64>>,
}

fn status_error(status: u16) -> Error {
    // Classified like the transports classify an HTTP status.
    let kind = match status {
        404 => ErrorKind::NotFound,
        409 => ErrorKind::Conflict,
        _ => ErrorKind::Other,
    };
    Error::Http {
        method: "raw",
        status,
        kind,
    }
}

impl Secrets {
    /// The Secret at `/api/v1/namespaces/NS/secrets/NAME`.
    pub fn get(&self, path: &str) -> Option<Value> {
        self.objects.lock().unwrap().get(path).cloned()
    }

    /// Stores `object` at its path (a test's own write).
    pub fn put(&self, object: Value) {
        let path = item_path(&object);
        let mut object = object;
        object["metadata"]["resourceVersion"] = json!(self.next_version());
        self.objects.lock().unwrap().insert(path, object);
    }

    pub fn delete(&self, path: &str) -> Option<Value> {
        self.objects.lock().unwrap().remove(path)
    }

    fn next_version(&self) -> String {
        let mut v = self.version.lock().unwrap();
        *v += 1;
        v.to_string()
    }

    fn answer(&self, request: ApiRequest) -> Result<ApiResponse, Error> {
        let path = request.path.as_str().split('?').next().unwrap().to_string();
        assert!(
            path.starts_with("/api/v1/namespaces/"),
            "unexpected raw path {path}"
        );
        assert!(
            path.contains("/secrets"),
            "only Secrets are answered: {path}"
        );
        let mut objects = self.objects.lock().unwrap();
        let ok = |body: Value| {
            Ok(ApiResponse {
                status: 200,
                body: Some(body),
            })
        };
        match request.method {
            Method::Get => objects
                .get(&path)
                .cloned()
                .map_or(Err(status_error(404)), ok),
            Method::Post => {
                let mut body = request.body.expect("a body");
                let item = item_path(&body);
                if objects.contains_key(&item) {
                    return Err(status_error(409));
                }
                body["metadata"]["resourceVersion"] = json!(self.next_version());
                objects.insert(item, body.clone());
                ok(body)
            }
            Method::Put => {
                let mut body = request.body.expect("a body");
                let Some(old) = objects.get(&path) else {
                    return Err(status_error(404));
                };
                if body["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"] {
                    return Err(status_error(409));
                }
                body["metadata"]["resourceVersion"] = json!(self.next_version());
                objects.insert(path, body.clone());
                ok(body)
            }
            Method::Delete => objects.remove(&path).map_or(Err(status_error(404)), ok),
            other => panic!("unexpected raw method {other:?}"),
        }
    }
}

fn item_path(object: &Value) -> String {
    let meta = &object["metadata"];
    format!(
        "/api/v1/namespaces/{}/secrets/{}",
        meta["namespace"].as_str().unwrap(),
        meta["name"].as_str().unwrap()
    )
}

/// The controller's client: resources from the `FakeCluster`, raw
/// requests (the connection Secret) from [`Secrets`].
pub struct WithSecrets {
    pub cluster: FakeCluster,
    pub secrets: Secrets,
}

#[async_trait]
impl Client for WithSecrets {
    async fn list_resources(&self, d: &ResourceDescriptor, ns: &str) -> Result<Vec<Value>, Error> {
        self.cluster.list_resources(d, ns).await
    }

    async fn get_resource(
        &self,
        d: &ResourceDescriptor,
        ns: &str,
        name: &str,
    ) -> Result<Option<Value>, Error> {
        self.cluster.get_resource(d, ns, name).await
    }

    async fn update_status(
        &self,
        d: &ResourceDescriptor,
        resource: &Value,
        status: &Value,
    ) -> Result<Value, Error> {
        self.cluster.update_status(d, resource, status).await
    }

    async fn update_finalizers(
        &self,
        d: &ResourceDescriptor,
        resource: &Value,
        finalizers: &[String],
    ) -> Result<Value, Error> {
        self.cluster
            .update_finalizers(d, resource, finalizers)
            .await
    }

    async fn send_raw(&self, request: ApiRequest) -> Result<ApiResponse, Error> {
        self.secrets.answer(request)
    }
}

/// The package's API (admin Secrets): the same store.
#[async_trait]
impl RawApi for Secrets {
    async fn send(&self, request: ApiRequest) -> Result<ApiResponse, Error> {
        self.answer(request)
    }
}
