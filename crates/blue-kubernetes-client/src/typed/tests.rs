//! The typed requests against a scripted [`RawApi`]: which request each
//! sends, and what comes back of each answer.

use super::*;
use crate::{ApiRequest, ApiResponse, Error, ErrorKind, Method, PatchType, RawApi};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Preconditions};
use k8s_openapi::ByteString;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

/// Answers each request with the next scripted answer, recording requests.
#[derive(Default)]
struct Scripted {
    answers: Mutex<VecDeque<Result<ApiResponse, Error>>>,
    sent: Mutex<Vec<ApiRequest>>,
}

impl Scripted {
    fn answering(answers: impl IntoIterator<Item = Result<Value, Error>>) -> Self {
        let answers = answers
            .into_iter()
            .map(|a| {
                a.map(|body| ApiResponse {
                    status: 200,
                    body: Some(body),
                })
            })
            .collect();
        Self {
            answers: Mutex::new(answers),
            sent: Mutex::default(),
        }
    }

    fn sent(&self) -> Vec<ApiRequest> {
        self.sent.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl RawApi for Scripted {
    async fn send(&self, request: ApiRequest) -> Result<ApiResponse, Error> {
        self.sent.lock().unwrap().push(request);
        let next = self.answers.lock().unwrap().pop_front();
        next.expect("a scripted answer")
    }
}

fn http(status: u16, kind: ErrorKind) -> Error {
    Error::Http {
        method: "GET",
        status,
        kind,
    }
}

fn stored(name: &str, rv: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "dev", "uid": "u-1", "resourceVersion": rv},
        "data": {"k": "v"},
    })
}

fn named(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        data: Some([("k".to_string(), "v".to_string())].into()),
        ..ConfigMap::default()
    }
}

#[tokio::test]
async fn get_reads_the_types_path_and_decodes_the_object() {
    let raw = Scripted::answering([Ok(stored("app", "7"))]);
    let found = TypedApi::<ConfigMap>::namespaced(&raw, "dev")
        .get("app")
        .await
        .unwrap();
    assert_eq!(found.metadata.resource_version.as_deref(), Some("7"));
    assert_eq!(found.data.unwrap()["k"], "v");
    let sent = raw.sent();
    assert_eq!(sent[0].method, Method::Get);
    assert_eq!(
        sent[0].path.as_str(),
        "/api/v1/namespaces/dev/configmaps/app"
    );
    assert!(sent[0].body.is_none());
}

#[tokio::test]
async fn get_opt_makes_not_found_none_and_keeps_every_other_error() {
    let raw = Scripted::answering([
        Err(http(404, ErrorKind::NotFound)),
        Err(http(403, ErrorKind::Forbidden)),
    ]);
    let config_maps = TypedApi::<ConfigMap>::namespaced(&raw, "dev");
    assert!(config_maps.get_opt("app").await.unwrap().is_none());
    let refused = config_maps.get_opt("app").await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Forbidden);
    assert_eq!(refused.http_status(), Some(403));
}

#[tokio::test]
async fn create_posts_the_object_with_its_api_version_and_kind() {
    let raw = Scripted::answering([Ok(stored("app", "1"))]);
    let created = TypedApi::<ConfigMap>::namespaced(&raw, "dev")
        .create(&named("app"))
        .await
        .unwrap();
    assert_eq!(created.metadata.uid.as_deref(), Some("u-1"));
    let sent = raw.sent();
    assert_eq!(sent[0].method, Method::Post);
    assert_eq!(sent[0].path.as_str(), "/api/v1/namespaces/dev/configmaps");
    let body = sent[0].body.clone().unwrap();
    assert_eq!(body["apiVersion"], "v1");
    assert_eq!(body["kind"], "ConfigMap");
    assert_eq!(body["metadata"], json!({"name": "app"}));
}

#[tokio::test]
async fn replace_without_a_resource_version_is_refused_before_sending() {
    let raw = Scripted::default();
    let config_maps = TypedApi::<ConfigMap>::namespaced(&raw, "dev");
    let refused = config_maps.replace(&named("app")).await.unwrap_err();
    assert!(
        matches!(
            refused,
            Error::InvalidOption {
                field: "metadata.resourceVersion",
                ..
            }
        ),
        "{refused}"
    );
    let mut unnamed = named("app");
    unnamed.metadata.name = None;
    unnamed.metadata.resource_version = Some("3".into());
    assert!(config_maps.replace(&unnamed).await.is_err());
    assert!(raw.sent().is_empty());
}

#[tokio::test]
async fn replace_puts_to_the_objects_path_with_its_resource_version() {
    let raw = Scripted::answering([Ok(stored("app", "4")), Err(http(409, ErrorKind::Conflict))]);
    let config_maps = TypedApi::<ConfigMap>::namespaced(&raw, "dev");
    let mut read = named("app");
    read.metadata.resource_version = Some("3".into());
    let written = config_maps.replace(&read).await.unwrap();
    assert_eq!(written.metadata.resource_version.as_deref(), Some("4"));
    let stale = config_maps.replace(&read).await.unwrap_err();
    assert!(stale.is_conflict());
    let sent = raw.sent();
    assert_eq!(sent[0].method, Method::Put);
    assert_eq!(
        sent[0].path.as_str(),
        "/api/v1/namespaces/dev/configmaps/app"
    );
    assert_eq!(
        sent[0].body.as_ref().unwrap()["metadata"]["resourceVersion"],
        "3"
    );
}

#[tokio::test]
async fn delete_sends_the_preconditions_of_what_was_read_or_none() {
    let raw = Scripted::answering([Ok(json!({"kind": "Status"})), Ok(json!({}))]);
    let config_maps = TypedApi::<ConfigMap>::namespaced(&raw, "dev");
    let read: ConfigMap = serde_json::from_value(stored("app", "9")).unwrap();
    config_maps
        .delete("app", &preconditions_of(&read))
        .await
        .unwrap();
    config_maps
        .delete("app", &Preconditions::default())
        .await
        .unwrap();
    let sent = raw.sent();
    assert_eq!(sent[0].method, Method::Delete);
    assert_eq!(
        sent[0].body.as_ref().unwrap(),
        &json!({
            "apiVersion": "v1", "kind": "DeleteOptions",
            "preconditions": {"uid": "u-1", "resourceVersion": "9"},
        })
    );
    assert!(sent[1].body.is_none());
}

#[tokio::test]
async fn merge_and_apply_patches_name_their_format_and_manager() {
    let raw = Scripted::answering([Ok(stored("app", "5")), Ok(stored("app", "6"))]);
    let config_maps = TypedApi::<ConfigMap>::namespaced(&raw, "dev");
    let patch = json!({"data": {"k": null}});
    config_maps.merge_patch("app", &patch).await.unwrap();
    config_maps
        .apply(&named("app"), "my-operator", true)
        .await
        .unwrap();
    let sent = raw.sent();
    assert_eq!(sent[0].method, Method::Patch(PatchType::Merge));
    assert_eq!(sent[0].body.as_ref(), Some(&patch));
    assert_eq!(sent[1].method, Method::Patch(PatchType::Apply));
    assert_eq!(
        sent[1].method.content_type(),
        "application/apply-patch+yaml"
    );
    assert_eq!(
        sent[1].path.as_str(),
        "/api/v1/namespaces/dev/configmaps/app?fieldManager=my-operator&force=true"
    );
    assert_eq!(sent[1].body.as_ref().unwrap()["kind"], "ConfigMap");
}

#[tokio::test]
async fn list_follows_continue_tokens_with_the_selector() {
    let page = |names: &[&str], token: Option<&str>| {
        let items: Vec<Value> = names.iter().map(|n| stored(n, "1")).collect();
        // Items of a list carry no apiVersion and kind.
        let items: Vec<Value> = items
            .into_iter()
            .map(|mut i| {
                i.as_object_mut().unwrap().remove("kind");
                i
            })
            .collect();
        Ok(json!({
            "apiVersion": "v1", "kind": "ConfigMapList",
            "metadata": {"continue": token},
            "items": items,
        }))
    };
    let raw = Scripted::answering([page(&["a", "b"], Some("t1")), page(&["c"], None)]);
    let params = ListParams::default().with_labels("app=web");
    let all = TypedApi::<ConfigMap>::namespaced(&raw, "dev")
        .list(&params)
        .await
        .unwrap();
    let names: Vec<_> = all.iter().filter_map(|c| c.metadata.name.clone()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    let sent = raw.sent();
    assert_eq!(
        sent[0].path.as_str(),
        "/api/v1/namespaces/dev/configmaps?limit=500&labelSelector=app%3Dweb"
    );
    assert!(sent[1].path.as_str().ends_with("&continue=t1"));
}

#[tokio::test]
async fn an_answer_that_is_not_the_type_fails_without_its_text() {
    let secret =
        json!({"apiVersion": "v1", "kind": "Secret", "data": {"password": "aHVudGVyMg=="}});
    let raw = Scripted::answering([Ok(secret), Ok(json!({"hunter2": 1, "metadata": 5}))]);
    let config_maps = TypedApi::<ConfigMap>::namespaced(&raw, "dev");
    for _ in 0..2 {
        let err = config_maps.get("app").await.unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{err}");
        assert_eq!(err.operation(), Some("GET ConfigMap"));
        for shown in [err.to_string(), format!("{err:?}")] {
            assert!(
                !shown.contains("hunter2") && !shown.contains("aHVudGVy"),
                "{shown}"
            );
        }
    }
}

#[tokio::test]
async fn secrets_decode_their_data_from_base64_and_cluster_types_have_no_namespace() {
    let raw = Scripted::answering([
        Ok(json!({"apiVersion": "v1", "kind": "Secret", "data": {"password": "aHVudGVyMg=="}})),
        Ok(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "dev"}})),
    ]);
    let secret = TypedApi::<Secret>::namespaced(&raw, "dev")
        .with_timeout(Duration::from_secs(3))
        .get("admin")
        .await
        .unwrap();
    assert_eq!(
        secret.data.unwrap()["password"],
        ByteString(b"hunter2".to_vec())
    );
    TypedApi::<Namespace>::cluster(&raw)
        .get("dev")
        .await
        .unwrap();
    let sent = raw.sent();
    assert_eq!(sent[0].timeout, Some(Duration::from_secs(3)));
    assert_eq!(sent[1].path.as_str(), "/api/v1/namespaces/dev");
    assert_eq!(sent[1].timeout, None);
}
