//! The client's typed helpers (`typed::TypedApi`) against the fake
//! cluster: the API server's answers reach them as typed errors, and
//! what they write is what a user of the cluster reads.

use blue_kubernetes_client::typed::{preconditions_of, ListParams, TypedApi};
use blue_kubernetes_client::{Error, ErrorKind};
use blue_testkit::{FakeCluster, Fault, Operation};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Preconditions};
use k8s_openapi::ByteString;
use serde_json::json;
use std::collections::BTreeMap;

const APP: &str = "/api/v1/namespaces/dev/configmaps/app";

fn config_map(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some([("team".to_string(), "a".to_string())].into()),
            ..ObjectMeta::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        ..ConfigMap::default()
    }
}

fn status(e: &Error) -> (u16, ErrorKind) {
    (e.http_status().unwrap_or(0), e.kind())
}

#[tokio::test]
async fn a_create_is_stored_and_a_second_one_is_already_exists() {
    let cluster = FakeCluster::new();
    let config_maps = TypedApi::<ConfigMap>::namespaced(&cluster, "dev");
    let created = config_maps
        .create(&config_map("app", &[("k", "v")]))
        .await
        .unwrap();
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.resource_version.is_some());
    assert_eq!(cluster.get_object(APP).unwrap()["data"], json!({"k": "v"}));
    let again = config_maps
        .create(&config_map("app", &[]))
        .await
        .unwrap_err();
    assert_eq!(status(&again), (409, ErrorKind::Other), "AlreadyExists");
    assert_eq!(
        cluster.get_object(APP).unwrap()["data"],
        json!({"k": "v"}),
        "a create never overwrites"
    );
    assert_eq!(config_maps.get("app").await.unwrap(), created);
}

#[tokio::test]
async fn a_replace_from_a_stale_read_is_a_conflict_and_changes_nothing() {
    let cluster = FakeCluster::new();
    let config_maps = TypedApi::<ConfigMap>::namespaced(&cluster, "dev");
    let mut read = config_maps
        .create(&config_map("app", &[("k", "v")]))
        .await
        .unwrap();
    cluster.edit_object(APP, |cm| cm["data"]["k"] = json!("user's"));
    read.data = Some([("k".to_string(), "ours".to_string())].into());
    let stale = config_maps.replace(&read).await.unwrap_err();
    assert_eq!(status(&stale), (409, ErrorKind::Conflict));
    assert_eq!(cluster.get_object(APP).unwrap()["data"]["k"], "user's");

    let mut fresh = config_maps.get("app").await.unwrap();
    fresh.data = read.data.clone();
    let written = config_maps.replace(&fresh).await.unwrap();
    assert_ne!(
        written.metadata.resource_version,
        fresh.metadata.resource_version
    );
    assert_eq!(cluster.get_object(APP).unwrap()["data"]["k"], "ours");
    let missing = config_maps
        .replace(&ConfigMap {
            metadata: ObjectMeta {
                name: Some("gone".into()),
                resource_version: Some("1".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status(&missing), (404, ErrorKind::NotFound));
}

#[tokio::test]
async fn a_delete_holds_only_for_exactly_what_was_read() {
    let cluster = FakeCluster::new();
    let config_maps = TypedApi::<ConfigMap>::namespaced(&cluster, "dev");
    let first = config_maps.create(&config_map("app", &[])).await.unwrap();
    // A namesake replaced it: same name, another uid.
    cluster.delete_object(APP);
    let namesake = config_maps.create(&config_map("app", &[])).await.unwrap();
    let refused = config_maps
        .delete("app", &preconditions_of(&first))
        .await
        .unwrap_err();
    assert_eq!(status(&refused), (409, ErrorKind::Conflict));
    assert!(cluster.get_object(APP).is_some());

    cluster.edit_object(APP, |cm| cm["data"] = json!({"changed": "1"}));
    let outdated = config_maps
        .delete("app", &preconditions_of(&namesake))
        .await
        .unwrap_err();
    assert_eq!(status(&outdated), (409, ErrorKind::Conflict));

    let current = config_maps.get("app").await.unwrap();
    config_maps
        .delete("app", &preconditions_of(&current))
        .await
        .unwrap();
    assert!(config_maps.get_opt("app").await.unwrap().is_none());
    let gone = config_maps
        .delete("app", &Preconditions::default())
        .await
        .unwrap_err();
    assert_eq!(status(&gone), (404, ErrorKind::NotFound));
}

#[tokio::test]
async fn lists_select_by_label_and_patches_merge_or_apply() {
    let cluster = FakeCluster::new();
    let config_maps = TypedApi::<ConfigMap>::namespaced(&cluster, "dev");
    config_maps
        .create(&config_map("app", &[("k", "v")]))
        .await
        .unwrap();
    let mut other = config_map("other", &[]);
    other.metadata.labels = Some([("team".to_string(), "b".to_string())].into());
    config_maps.create(&other).await.unwrap();
    TypedApi::<ConfigMap>::namespaced(&cluster, "prod")
        .create(&config_map("app", &[]))
        .await
        .unwrap();

    let team_a = config_maps
        .list(&ListParams::default().with_labels("team=a"))
        .await
        .unwrap();
    let names: Vec<_> = team_a.iter().map(|c| c.metadata.name.clone()).collect();
    assert_eq!(names, [Some("app".to_string())]);
    assert_eq!(
        config_maps
            .list(&ListParams::default())
            .await
            .unwrap()
            .len(),
        2
    );

    let patched = config_maps
        .merge_patch("app", &json!({"data": {"k": null, "n": "1"}}))
        .await
        .unwrap();
    assert_eq!(
        patched.data,
        Some([("n".to_string(), "1".to_string())].into())
    );

    let applied = config_maps
        .apply(&config_map("fresh", &[("a", "1")]), "my-operator", true)
        .await
        .unwrap();
    assert!(applied.metadata.uid.is_some(), "an apply creates");
    let applied = config_maps
        .apply(&config_map("fresh", &[("b", "2")]), "my-operator", true)
        .await
        .unwrap();
    assert_eq!(applied.data.unwrap().len(), 2, "the fake merges an apply");
}

#[tokio::test]
async fn secrets_round_trip_their_bytes_and_faults_reach_the_caller() {
    let cluster = FakeCluster::new();
    let secrets = TypedApi::<Secret>::namespaced(&cluster, "dev");
    let password = ByteString(b"hunter2".to_vec());
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("db".into()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("password".to_string(), password.clone())])),
        ..Secret::default()
    };
    secrets.create(&secret).await.unwrap();
    let stored = cluster
        .get_object("/api/v1/namespaces/dev/secrets/db")
        .unwrap();
    assert_eq!(stored["data"]["password"], "aHVudGVyMg==");
    let read = secrets.get("db").await.unwrap();
    assert_eq!(read.data.unwrap()["password"], password);

    cluster.inject(Operation::RawGet, Fault::Unavailable);
    let failed = secrets.get("db").await.unwrap_err();
    assert_eq!(failed.kind(), ErrorKind::Unavailable);
    for shown in [failed.to_string(), format!("{failed:?}")] {
        assert!(
            !shown.contains("hunter2") && !shown.contains("aHVudGVy"),
            "{shown}"
        );
    }
}
