//! Startup preflight against the fake cluster's discovery and authorizer:
//! one clear, text-free problem per mistake.

mod common;

use blue_kubernetes::Config;

use blue_kubernetes::config::{preflight, Problem};
use blue_kubernetes_client::{AccessCheck, ResourceDescriptor};
use blue_testkit::{FakeCluster, FakeInfra};
use common::*;

async fn problems(cluster: &FakeCluster, d: ResourceDescriptor, events: bool) -> Vec<String> {
    let infra = FakeInfra::new();
    let controller = build(
        cluster,
        blue_kubernetes::config::system_clock(),
        vec![infra.package(d)],
        |c| {
            if events {
                c.event_component = Some("op".into());
            }
        },
    );
    preflight(&controller)
        .await
        .iter()
        .map(Problem::to_string)
        .collect()
}

fn served() -> FakeCluster {
    let cluster = FakeCluster::new();
    cluster.serve(&widgets());
    cluster
}

#[tokio::test]
async fn a_served_type_with_every_permission_passes() {
    assert_eq!(
        problems(&served(), widgets(), true).await,
        Vec::<String>::new()
    );
}

#[tokio::test]
async fn a_missing_crd_is_named() {
    let got = problems(&FakeCluster::new(), widgets(), false).await;
    assert_eq!(
        got,
        ["example.com/v1 is not served: is the CRD for widgets.example.com installed, and does it serve version v1?"]
    );
}

#[tokio::test]
async fn a_wrong_version_fails_at_startup() {
    let d = ResourceDescriptor::new("example.com", "v1alpha1", "widgets", "Widget");
    let got = problems(&served(), d, false).await;
    assert_eq!(got.len(), 1);
    assert!(
        got[0].starts_with("example.com/v1alpha1 is not served"),
        "{got:?}"
    );
}

#[tokio::test]
async fn a_wrong_kind_or_plural_is_named() {
    let kind = ResourceDescriptor::new("example.com", "v1", "widgets", "Gizmo");
    assert_eq!(
        problems(&served(), kind, false).await,
        ["widgets.example.com serves kind Widget, but the package says Gizmo"]
    );
    let plural = ResourceDescriptor::new("example.com", "v1", "widget", "Widget");
    assert_eq!(
        problems(&served(), plural, false).await,
        ["example.com/v1 serves no resource named widget"]
    );
}

#[tokio::test]
async fn each_missing_permission_names_its_verb_and_resource() {
    let cluster = served();
    cluster
        .deny(AccessCheck::new(NS, "update", "example.com", "widgets").with_subresource("status"));
    cluster.deny(AccessCheck::new(NS, "create", "", "events"));
    assert_eq!(
        problems(&cluster, widgets(), true).await,
        [
            "RBAC does not allow update widgets/status.example.com in namespace dev",
            "RBAC does not allow create events in namespace dev",
        ]
    );
    // Without Events, their permission is not needed.
    assert_eq!(
        problems(&cluster, widgets(), false).await,
        ["RBAC does not allow update widgets/status.example.com in namespace dev"]
    );
}

/// The problems preflight finds when RBAC denies `verb` on Leases in
/// `leases-ns`, with the Lease user `tweak` configures.
async fn problems_without_lease_verb(verb: &str, tweak: impl FnOnce(&mut Config)) -> Vec<String> {
    let cluster = served();
    cluster.deny(AccessCheck::new(
        "leases-ns",
        verb,
        "coordination.k8s.io",
        "leases",
    ));
    let infra = FakeInfra::new();
    let controller = build(
        &cluster,
        blue_kubernetes::config::system_clock(),
        vec![infra.package(widgets())],
        tweak,
    );
    preflight(&controller)
        .await
        .iter()
        .map(Problem::to_string)
        .collect()
}

#[tokio::test]
async fn leader_election_needs_lease_permissions_in_the_lease_namespace() {
    let got = problems_without_lease_verb("update", |c| {
        c.leader_election = Some(blue_kubernetes::replicas::LeaderElectionConfig::new(
            "op",
            "leases-ns",
        ));
    })
    .await;
    assert_eq!(
        got,
        ["RBAC does not allow update leases.coordination.k8s.io in namespace leases-ns"]
    );
}

#[tokio::test]
async fn sharding_also_needs_to_list_leases() {
    let got = problems_without_lease_verb("list", |c| {
        c.sharding = Some(blue_kubernetes::replicas::ShardingConfig::new(
            "op",
            "leases-ns",
        ));
    })
    .await;
    assert_eq!(
        got,
        ["RBAC does not allow list leases.coordination.k8s.io in namespace leases-ns"]
    );
}

mod versions {
    //! A package serving an older version: that version must be served
    //! too, and the installed CRD must prune unknown fields.

    use super::*;
    use blue_kubernetes::{
        async_trait, package::NoOutputs, versions::Versions, CallbackResult, Context,
        Infrastructure, Observation, Outcome, Package, ResourceSchema,
    };
    use serde_json::json;

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct V1 {
        replicas: u32,
    }

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct V1alpha1 {
        size: u32,
    }

    impl From<&V1> for V1alpha1 {
        fn from(v1: &V1) -> Self {
            Self { size: v1.replicas }
        }
    }

    impl From<V1alpha1> for V1 {
        fn from(old: V1alpha1) -> Self {
            Self { replicas: old.size }
        }
    }

    struct Evolving;

    #[async_trait]
    impl Infrastructure for Evolving {
        type Config = V1;
        type Outputs = NoOutputs;
        fn schema() -> ResourceSchema {
            ResourceSchema::new(widgets())
        }
        fn versions() -> Versions<V1> {
            Versions::stored().served::<V1alpha1>("v1alpha1")
        }
        async fn observe(&self, _: &Context<V1>) -> CallbackResult<Observation<NoOutputs>> {
            Ok(Observation::ABSENT)
        }
        async fn converge(&self, _: &Context<V1>) -> CallbackResult<Outcome<NoOutputs>> {
            Ok(Outcome::done())
        }
        async fn delete(&self, _: &Context<V1>) -> CallbackResult<Outcome<NoOutputs>> {
            Ok(Outcome::done())
        }
    }

    fn crds() -> ResourceDescriptor {
        ResourceDescriptor::new(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
        )
        .cluster_scoped()
    }

    async fn problems(cluster: &FakeCluster) -> Vec<String> {
        let package = Package::new(Evolving).unwrap();
        let controller = build(
            cluster,
            blue_kubernetes::config::system_clock(),
            vec![package],
            |_| {},
        );
        preflight(&controller)
            .await
            .iter()
            .map(Problem::to_string)
            .collect()
    }

    fn installed(preserve_unknown_fields: bool) -> FakeCluster {
        let cluster = served();
        let old = ResourceDescriptor::new("example.com", "v1alpha1", "widgets", "Widget");
        cluster.serve(&old);
        cluster.create_with(
            &crds(),
            json!({
                "metadata": {"name": "widgets.example.com"},
                "spec": {"preserveUnknownFields": preserve_unknown_fields},
            }),
        );
        cluster
    }

    #[tokio::test]
    async fn a_crd_serving_every_version_and_pruning_passes() {
        assert_eq!(problems(&installed(false)).await, Vec::<String>::new());
    }

    #[tokio::test]
    async fn an_installed_crd_keeping_unknown_fields_is_named() {
        assert_eq!(
            problems(&installed(true)).await,
            ["widgets.example.com keeps unknown fields (preserveUnknownFields: true): apply the generated CRD, which serves the package's older versions"]
        );
    }

    #[tokio::test]
    async fn reading_the_crd_needs_get_on_crds() {
        let cluster = installed(false);
        let check = AccessCheck::new(
            "",
            "get",
            "apiextensions.k8s.io",
            "customresourcedefinitions",
        );
        cluster.deny(check);
        let got = problems(&cluster).await;
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].starts_with("RBAC does not allow"), "{got:?}");
        assert!(got[0].contains("customresourcedefinitions"), "{got:?}");
    }

    #[tokio::test]
    async fn an_older_version_not_served_is_named() {
        let got = problems(&served()).await;
        assert_eq!(
            got,
            ["example.com/v1alpha1 is not served: is the CRD for widgets.example.com installed, and does it serve version v1alpha1?"]
        );
    }
}
