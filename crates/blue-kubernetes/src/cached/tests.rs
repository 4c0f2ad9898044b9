//! The store as cached reads see it: paused time, a client that counts
//! the reads that reach it.

use super::*;
use crate::package::schema::ResourceSchema;
use crate::related::Related;
use crate::runtime::related::kinds;
use crate::{package::erased::Package, package::observation::Observation};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn config_maps() -> ResourceDescriptor {
    ResourceDescriptor::new("", "v1", "configmaps", "ConfigMap")
}

/// Answers every read with the object at version "live".
#[derive(Default)]
struct Live(AtomicUsize);

#[async_trait::async_trait]
impl Client for Live {
    async fn list_resources(&self, _: &ResourceDescriptor, _: &str) -> Result<Vec<Value>, Error> {
        Ok(Vec::new())
    }
    async fn get_resource(
        &self,
        _: &ResourceDescriptor,
        _: &str,
        name: &str,
    ) -> Result<Option<Value>, Error> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(Some(cm(name, "live")))
    }
    async fn update_status(
        &self,
        _: &ResourceDescriptor,
        r: &Value,
        _: &Value,
    ) -> Result<Value, Error> {
        Ok(r.clone())
    }
    async fn update_finalizers(
        &self,
        _: &ResourceDescriptor,
        r: &Value,
        _: &[String],
    ) -> Result<Value, Error> {
        Ok(r.clone())
    }
}

fn cm(name: &str, version: &str) -> Value {
    json!({"metadata": {"namespace": "ns", "name": name, "resourceVersion": version,
        "labels": {"example.com/owner": "w"}, "managedFields": [{"manager": "kubectl"}]}})
}

/// A store whose one related kind, ConfigMaps, is cached (and watched in
/// every namespace), reads waiting at most a second.
fn store() -> (Arc<ObjectStore>, Metrics) {
    let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    let related = Related::labelled(config_maps(), "example.com/owner").cached();
    let package = Package::builder(ResourceSchema::new(widgets).related(related))
        .identity(|_| Ok(vec![]))
        .observe(|_| Ok(Observation::READY))
        .converge(|_| Ok(crate::package::result::WorkflowOutcome::new()))
        .delete(|_| Ok(crate::package::result::WorkflowOutcome::new()))
        .build()
        .unwrap();
    let metrics = Metrics::new();
    let kinds = kinds(&[package]).unwrap();
    let store = ObjectStore::new(
        kinds.iter().map(|k| (&k.descriptor, k.cached.as_ref())),
        1_000,
        &metrics,
    );
    store.watching(0, "", true);
    (Arc::new(store), metrics)
}

async fn read(store: &ObjectStore, live: &Live, name: &str) -> Option<String> {
    let object = store.read(live, &config_maps(), "ns", name).await.unwrap();
    object.map(|o| {
        o["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string()
    })
}

#[tokio::test(start_paused = true)]
async fn a_read_is_served_from_the_watch_without_managed_fields() {
    let (store, _) = store();
    let live = Live::default();
    store.arrived(0, &cm("a", "1"), Vec::new());
    let object = store
        .read(&live, &config_maps(), "ns", "a")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(object["metadata"]["resourceVersion"], "1");
    assert!(object["metadata"].get("managedFields").is_none());
    assert_eq!(read(&store, &live, "missing").await, None);
    assert_eq!(live.0.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_read_after_our_write_waits_for_the_watch_to_deliver_it() {
    let (store, _) = store();
    let live = Arc::new(Live::default());
    store.arrived(0, &cm("a", "1"), Vec::new());
    store.written("", "configmaps", "ns", "a", Mark::Version("2".into()));
    let reader = tokio::spawn({
        let (store, live) = (store.clone(), live.clone());
        async move { read(&store, &live, "a").await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!reader.is_finished(), "version 1 is behind our write");
    store.arrived(0, &cm("a", "2"), Vec::new());
    assert_eq!(reader.await.unwrap().as_deref(), Some("2"));
    assert_eq!(live.0.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_read_after_our_delete_waits_for_the_deletion() {
    let (store, _) = store();
    let live = Arc::new(Live::default());
    store.arrived(0, &cm("a", "1"), Vec::new());
    store.written("", "configmaps", "ns", "a", Mark::Deleted);
    let reader = tokio::spawn({
        let (store, live) = (store.clone(), live.clone());
        async move { read(&store, &live, "a").await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!reader.is_finished());
    store.gone(&Key::new(0, "ns", "a"), &[]);
    assert_eq!(reader.await.unwrap(), None);
}

#[tokio::test(start_paused = true)]
async fn past_the_wait_a_read_goes_to_the_api_server_and_is_counted() {
    let (store, metrics) = store();
    let live = Live::default();
    store.arrived(0, &cm("a", "1"), Vec::new());
    store.written("", "configmaps", "ns", "a", Mark::Version("2".into()));
    assert_eq!(read(&store, &live, "a").await.as_deref(), Some("live"));
    assert_eq!(live.0.load(Ordering::SeqCst), 1);
    let text = metrics.encode();
    assert!(
        text.contains(r#"blue_cached_read_fallbacks_total{reason="wait"} 1"#),
        "{text}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_later_version_or_an_earlier_arrival_settles_a_write() {
    let (store, _) = store();
    let live = Live::default();
    // The watch was faster than the write's answer.
    store.arrived(0, &cm("a", "5"), Vec::new());
    store.written("", "configmaps", "ns", "a", Mark::Version("5".into()));
    assert_eq!(read(&store, &live, "a").await.as_deref(), Some("5"));
    store.written("", "configmaps", "ns", "a", Mark::Version("6".into()));
    store.arrived(0, &cm("a", "7"), Vec::new());
    assert_eq!(read(&store, &live, "a").await.as_deref(), Some("7"));
    assert_eq!(live.0.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn without_a_watch_or_for_a_kind_not_cached_a_read_goes_to_the_api_server() {
    let (store, metrics) = store();
    let live = Live::default();
    store.arrived(0, &cm("a", "1"), Vec::new());
    store.watching(0, "", false);
    assert_eq!(read(&store, &live, "a").await.as_deref(), Some("live"));
    let secrets = ResourceDescriptor::new("", "v1", "secrets", "Secret");
    store.read(&live, &secrets, "ns", "s").await.unwrap();
    assert_eq!(live.0.load(Ordering::SeqCst), 2);
    assert!(metrics.encode().contains(r#"reason="not_watching"} 1"#));
}

#[tokio::test(start_paused = true)]
async fn an_object_the_cached_selector_does_not_match_is_not_kept() {
    let (store, _) = store();
    let live = Live::default();
    store.arrived(0, &cm("a", "1"), Vec::new());
    let mut unlabelled = cm("a", "2");
    unlabelled["metadata"]["labels"] = json!({});
    store.arrived(0, &unlabelled, Vec::new());
    assert_eq!(
        read(&store, &live, "a").await,
        None,
        "it left the selection"
    );
    assert_eq!(live.0.load(Ordering::SeqCst), 0);
}

fn owner(name: &str) -> Key {
    Key::new(0, "ns", name)
}

#[test]
fn a_new_version_asks_for_its_old_and_new_targets_and_the_same_version_for_none() {
    let (c, _) = store();
    let (_, check) = c.arrived(0, &cm("x", "1"), vec![owner("a")]);
    assert_eq!(check, vec![owner("a")]);
    let (_, again) = c.arrived(0, &cm("x", "1"), vec![owner("a")]);
    assert!(again.is_empty(), "a relist or duplicate asks for nothing");
    let (_, moved) = c.arrived(0, &cm("x", "2"), vec![owner("b")]);
    assert_eq!(moved, vec![owner("a"), owner("b")]);
    let x = Key::new(0, "ns", "x");
    assert_eq!(c.gone(&x, &[]), vec![owner("b")]);
    assert!(c.gone(&x, &[]).is_empty(), "already gone");
}

#[test]
fn objects_missing_from_a_list_are_found_within_their_kind_and_namespace() {
    let (c, _) = store();
    let object = |ns: &str, name: &str| json!({"metadata": {"namespace": ns, "name": name}});
    c.arrived(0, &object("a", "x"), vec![owner("x")]);
    c.arrived(0, &object("b", "y"), vec![owner("y")]);
    c.arrived(1, &object("a", "z"), vec![owner("z")]);
    let listed: HashSet<Key> = HashSet::new();
    assert_eq!(c.listed(0, "a", &listed), vec![owner("x")]);
    assert_eq!(c.listed(0, "", &listed), vec![owner("y")]);
    assert_eq!(c.listed(1, "", &listed), vec![owner("z")]);
    assert_eq!(c.len(), 0);
}

#[test]
fn selectors_parse_cached_kinds_have_one_and_differing_ones_watch_everything() {
    let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    let package = |related: Related| {
        Package::builder(ResourceSchema::new(widgets.clone()).related(related))
            .identity(|_| Ok(vec![]))
            .observe(|_| Ok(Observation::READY))
            .converge(|_| Ok(crate::package::result::WorkflowOutcome::new()))
            .delete(|_| Ok(crate::package::result::WorkflowOutcome::new()))
            .build()
            .unwrap()
    };
    let invalid = |packages: &[Package]| {
        matches!(
            kinds(packages),
            Err(crate::Error::InvalidConfig {
                field: "packages",
                ..
            })
        )
    };
    assert!(invalid(&[package(Related::owned(config_maps()).cached())]));
    assert!(invalid(&[package(
        Related::owned(config_maps()).selector("a in (b")
    )]));
    let cached = |label: &str| package(Related::labelled(config_maps(), label).cached());
    assert!(invalid(&[cached("a"), cached("b")]));

    let a = package(Related::labelled(config_maps(), "a"));
    let plain = package(Related::owned(config_maps()));
    let kinds = kinds(&[a, plain, cached("a")]).unwrap();
    assert_eq!(kinds[0].selector, None, "one declaration selects nothing");
    assert_eq!(kinds[0].cached, Some(LabelSelector::parse("a").unwrap()));
}
