use super::*;
use crate::{ApiPath, ErrorKind, WatchEvent};
use serde_json::json;
use std::sync::Mutex;

/// A store of one object that also pages, watches and holds a Lease, so
/// the tests can tell a forwarded call from a trait default.
struct Store;

#[async_trait::async_trait]
impl Client for Store {
    async fn list_resources(&self, _: &ResourceDescriptor, _: &str) -> Result<Vec<Value>, Error> {
        Ok(vec![json!({"metadata": {"name": "a"}})])
    }
    async fn list_page(
        &self,
        _: &ResourceDescriptor,
        _: &str,
        _: &PageRequest,
    ) -> Result<ListPage, Error> {
        Ok(ListPage {
            items: Vec::new(),
            resource_version: Some("7".into()),
            continue_token: None,
        })
    }
    async fn watch(
        &self,
        _: &ResourceDescriptor,
        _: &str,
        _: &WatchRequest,
    ) -> Result<WatchStream, Error> {
        let events = vec![Ok(WatchEvent::Bookmark {
            resource_version: "8".into(),
        })];
        Ok(Box::pin(futures::stream::iter(events)))
    }
    async fn get_resource(
        &self,
        _: &ResourceDescriptor,
        _: &str,
        name: &str,
    ) -> Result<Option<Value>, Error> {
        match name {
            "a" => Ok(Some(json!({"metadata": {"name": "a"}}))),
            _ => Err(Error::kubectl("get", ErrorKind::Unavailable)),
        }
    }
    async fn update_status(
        &self,
        _: &ResourceDescriptor,
        resource: &Value,
        status: &Value,
    ) -> Result<Value, Error> {
        let mut stored = resource.clone();
        stored["status"] = status.clone();
        Ok(stored)
    }
    async fn update_finalizers(
        &self,
        _: &ResourceDescriptor,
        resource: &Value,
        _: &[String],
    ) -> Result<Value, Error> {
        Ok(resource.clone())
    }
    async fn release_lease(&self, lease: &Lease) -> Result<Lease, Error> {
        let mut released = lease.clone();
        released.spec.holder_identity = Some("released by the store".into());
        Ok(released)
    }
}

#[async_trait::async_trait]
impl RawApi for Store {
    async fn send(&self, _: ApiRequest) -> Result<ApiResponse, Error> {
        Ok(ApiResponse {
            status: 201,
            body: None,
        })
    }
}

/// Records what it saw as `before:<op>` / `after:<op>:<answer>`, refuses
/// status writes, and tags its lines so nested layers can be told apart.
struct Recorder {
    tag: &'static str,
    seen: Arc<Mutex<Vec<String>>>,
}

#[async_trait::async_trait]
impl Hook for Recorder {
    async fn before(&self, call: &Call<'_>) -> Result<(), Error> {
        let line = format!("{} before:{}", self.tag, call.operation());
        self.seen.lock().unwrap().push(line);
        match call {
            Call::UpdateStatus { .. } => Err(Error::Fenced {
                operation: "replace".into(),
            }),
            _ => Ok(()),
        }
    }

    fn after(&self, call: &Call<'_>, result: Result<Answer<'_>, &Error>, _: Duration) {
        let answer = match result {
            Ok(answer) => format!("{answer:?}"),
            Err(e) => e.kind().to_string(),
        };
        let line = format!("{} after:{}:{answer}", self.tag, call.operation());
        self.seen.lock().unwrap().push(line);
    }
}

fn widgets() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
}

fn layered(
    tag: &'static str,
    inner: Arc<dyn Client>,
) -> (Layered<Recorder>, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let hook = Recorder {
        tag,
        seen: seen.clone(),
    };
    (Layered::new(inner, hook), seen)
}

fn lines(seen: &Mutex<Vec<String>>) -> Vec<String> {
    std::mem::take(&mut *seen.lock().unwrap())
}

#[tokio::test]
async fn hooks_see_each_call_and_its_answer() {
    let (client, seen) = layered("a", Arc::new(Store));
    assert!(client
        .get_resource(&widgets(), "ns", "a")
        .await
        .unwrap()
        .is_some());
    let err = client
        .get_resource(&widgets(), "ns", "b")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(
        lines(&seen),
        [
            "a before:get",
            "a after:get:Object",
            "a before:get",
            "a after:get:unavailable"
        ]
    );
}

#[tokio::test]
async fn a_refusing_hook_stops_the_call_before_the_inner_client() {
    let (client, seen) = layered("a", Arc::new(Store));
    let object = json!({"metadata": {"name": "a"}});
    let err = client
        .update_status(&widgets(), &object, &json!({}))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Fenced { .. }));
    assert_eq!(
        lines(&seen),
        ["a before:update_status"],
        "no after: nothing was sent"
    );
}

#[tokio::test]
async fn paging_watching_and_releasing_reach_the_inner_client_not_the_defaults() {
    let (client, seen) = layered("a", Arc::new(Store));
    let page = client
        .list_page(&widgets(), "", &PageRequest::first(10))
        .await
        .unwrap();
    assert_eq!(page.resource_version.as_deref(), Some("7"));
    let request = WatchRequest {
        resource_version: "7".into(),
        timeout_seconds: 1,
        bookmarks: true,
        label_selector: None,
    };
    assert!(client.watch(&widgets(), "", &request).await.is_ok());
    let lease = Lease::new("ns", "lock", crate::LeaseSpec::default());
    let released = client.release_lease(&lease).await.unwrap();
    assert_eq!(
        released.spec.holder_identity.as_deref(),
        Some("released by the store")
    );
    assert_eq!(
        lines(&seen),
        [
            "a before:list",
            "a after:list:Page",
            "a before:watch",
            "a after:watch:Stream",
            "a before:release_lease",
            "a after:release_lease:Lease",
        ]
    );
}

#[tokio::test]
async fn capabilities_the_inner_client_lacks_stay_unsupported_through_the_layer() {
    let (client, seen) = layered("a", Arc::new(Store));
    let err = client.get_lease("ns", "lock").await.unwrap_err();
    assert!(matches!(
        err,
        Error::Unsupported {
            operation: "get_lease"
        }
    ));
    assert_eq!(
        lines(&seen),
        ["a before:get_lease", "a after:get_lease:other"]
    );
    let err = client.list_leases("ns").await.unwrap_err();
    assert!(matches!(
        err,
        Error::Unsupported {
            operation: "list_leases"
        }
    ));
    assert_eq!(
        lines(&seen),
        ["a before:list_leases", "a after:list_leases:other"]
    );
}

#[tokio::test]
async fn the_outer_layer_runs_first_and_sees_the_inner_refusal() {
    let (inner, inner_seen) = layered("inner", Arc::new(Store));
    let (outer, outer_seen) = layered("outer", Arc::new(inner));
    // The outer hook refuses status writes itself: the inner never sees one.
    let object = json!({"metadata": {"name": "a"}});
    assert!(outer
        .update_status(&widgets(), &object, &json!({}))
        .await
        .is_err());
    assert!(lines(&inner_seen).is_empty());
    assert_eq!(lines(&outer_seen), ["outer before:update_status"]);
    // A call both let through: outer before, inner before and after, outer after.
    outer.list_resources(&widgets(), "ns").await.unwrap();
    assert_eq!(
        lines(&inner_seen),
        ["inner before:list", "inner after:list:Objects"]
    );
    assert_eq!(
        lines(&outer_seen),
        ["outer before:list", "outer after:list:Objects"]
    );
}

#[tokio::test]
async fn raw_requests_go_through_the_hook_only_when_a_raw_api_is_named() {
    let path = ApiPath::parse("/api/v1/namespaces/ns/configmaps").unwrap();
    let (without, _) = layered("a", Arc::new(Store));
    let err = without
        .send(ApiRequest::get(path.clone()))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unsupported { operation: "raw" }));

    let (with, seen) = layered("a", Arc::new(Store));
    let with = with.with_raw_api(Arc::new(Store));
    let answer = with.send(ApiRequest::get(path)).await.unwrap();
    assert_eq!(answer.status, 201);
    assert_eq!(lines(&seen), ["a before:raw", "a after:raw:Raw"]);
}

#[test]
fn debug_of_a_call_shows_neither_the_object_nor_the_status() {
    let object = json!({"metadata": {"name": "a"}, "spec": {"password": "hunter2"}});
    let status = json!({"phase": "hunter2"});
    let descriptor = widgets();
    let call = Call::UpdateStatus {
        descriptor: &descriptor,
        resource: &object,
        status: &status,
    };
    let shown = format!("{call:?} {:?}", Answer::Written(&object));
    assert!(shown.contains("update_status"), "{shown}");
    assert!(!shown.contains("hunter2"), "{shown}");
}
