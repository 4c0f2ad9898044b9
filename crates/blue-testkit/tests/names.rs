//! Configurable finalizer, request annotation and destroy-protection key.

mod common;

use blue_kubernetes::{controller, Error, Report};

use blue_kubernetes::config::Names;

use blue_kubernetes::resource::{Phase, Reason};
use blue_kubernetes_client::Client;
use blue_testkit::FakeCluster;
use common::*;
use serde_json::json;
use std::sync::Arc;

fn custom() -> Names {
    Names::default()
        .with_finalizer("widgets.example.com/infrastructure".into())
        .with_request_annotation("widgets.example.com/reconcile".into())
        .with_destroy_protection_key("keep".into())
}

#[tokio::test]
async fn custom_names_replace_the_reference_ones() {
    let w = World::with(|c| c.names = custom());
    w.create(
        "web",
        json!({"deletionPolicy": "Destroy", "config": {"value": 1}}),
    );
    w.reconcile("web").await;
    assert_eq!(
        finalizers(&w.get("web")),
        ["widgets.example.com/infrastructure"]
    );

    // Only our request annotation asks for an early check.
    w.cluster.set_annotation(
        &widgets(),
        NS,
        "web",
        blue_kubernetes::config::REQUEST_ANNOTATION,
        "t1",
    );
    assert_eq!(w.reconcile("web").await, Report::NotDue);
    w.cluster
        .set_annotation(&widgets(), NS, "web", "widgets.example.com/reconcile", "t1");
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert_eq!(w.status("web")["lastHandledRequest"], "t1");

    // Only our protection key blocks destruction.
    w.edit("web", |s| {
        s["config"]["compute-prevent-destroy"] = json!(true);
        s["config"]["keep"] = json!(true);
    });
    w.reconcile("web").await;
    w.cluster.delete(&widgets(), NS, "web");
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Blocked, Reason::DestructionProtected)
    );
    w.edit("web", |s| s["config"]["keep"] = json!(false));
    assert_eq!(w.reconcile("web").await, Report::Released);
    assert!(!w.exists("web"));
}

#[test]
fn unusable_names_are_refused_by_name() {
    let cluster = FakeCluster::new();
    let client: Arc<dyn Client> = Arc::new(cluster);
    let package = blue_testkit::FakeInfra::new().package(widgets());
    let mut config = blue_kubernetes::Config::new(client, vec![package]);
    config.names.finalizer = "no-domain".into();
    let err = controller(config).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidConfig {
                field: "names.finalizer",
                ..
            }
        ),
        "{err}"
    );
}

/// The WARN lines `start` logs about names for a controller with `names`.
fn start_warnings(names: Option<Names>) -> Vec<String> {
    let w = World::with(|c| {
        if let Some(names) = names {
            c.names = names;
        }
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (_, lines) = common::log::capture(|| {
        runtime.block_on(async {
            let started = blue_kubernetes::start(w.controller.clone()).unwrap();
            started.stop().await;
        })
    });
    lines
        .into_iter()
        .filter(|(level, line)| *level == tracing::Level::WARN && line.contains("names"))
        .map(|(_, line)| line)
        .collect()
}

#[test]
fn starting_with_the_reference_names_warns_once_how_to_change_them_and_what_a_rename_costs() {
    let warnings = start_warnings(None);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let line = &warnings[0];
    for needle in [
        "packages=widgets.example.com",
        "names=finalizer,request_annotation",
        "Config::names",
        "Names::for_domain",
        "orphans the finalizers",
        "Names::reference()",
    ] {
        assert!(line.contains(needle), "{needle:?} missing from {line}");
    }
}

#[test]
fn names_of_ones_own_or_kept_on_purpose_start_without_a_warning() {
    assert_eq!(
        start_warnings(Some(Names::for_domain("widgets.example.com"))),
        Vec::<String>::new()
    );
    assert_eq!(
        start_warnings(Some(Names::reference())),
        Vec::<String>::new()
    );
    assert_eq!(start_warnings(Some(custom())), Vec::<String>::new());
}

#[tokio::test]
async fn names_for_a_domain_are_the_ones_written_and_read() {
    let w = World::with(|c| c.names = Names::for_domain("widgets.example.com"));
    w.create(
        "web",
        json!({"deletionPolicy": "Destroy", "config": {"value": 1, "prevent-destroy": true}}),
    );
    w.reconcile("web").await;
    assert_eq!(
        finalizers(&w.get("web")),
        ["widgets.example.com/infrastructure"]
    );
    w.cluster.delete(&widgets(), NS, "web");
    assert_eq!(
        w.reconcile("web").await,
        Report::Reconciled(Phase::Blocked, Reason::DestructionProtected)
    );
}
