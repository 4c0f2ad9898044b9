//! The generated CRD of a kind serving several versions.

use super::Widgets;
use crate::crd::{self, CrdConfig, WebhookService};
use crate::{Error, ResourceSchema};
use blue_kubernetes_client::ResourceDescriptor;
use serde_json::json;

fn config_of(version: &serde_json::Value) -> &serde_json::Value {
    &version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["config"]
}

#[test]
fn every_version_is_listed_with_its_own_config_schema_and_one_is_stored() {
    let crd = crd::generate(&ResourceSchema::of::<Widgets>(), &CrdConfig::default()).unwrap();
    let versions = crd["spec"]["versions"].as_array().unwrap();
    let names: Vec<&str> = versions
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["v1", "v1beta1", "v1alpha1"]);
    let stored: Vec<bool> = versions.iter().map(|v| v["storage"] == true).collect();
    assert_eq!(stored, [true, false, false]);
    assert!(versions.iter().all(|v| v["served"] == true));
    assert!(versions[0].get("deprecated").is_none());
    for old in &versions[1..] {
        assert_eq!(old["deprecated"], true);
        let warning = old["deprecationWarning"].as_str().unwrap();
        assert!(warning.contains("use example.com/v1"), "{warning}");
        // The common spec fields and the status are the same everywhere.
        let (a, b) = (
            &old["schema"]["openAPIV3Schema"],
            &versions[0]["schema"]["openAPIV3Schema"],
        );
        assert_eq!(a["properties"]["status"], b["properties"]["status"]);
        assert_eq!(
            a["properties"]["spec"]["properties"]["state"],
            b["properties"]["spec"]["properties"]["state"]
        );
        assert_eq!(old["subresources"], versions[0]["subresources"]);
    }
    assert!(config_of(&versions[0])["properties"]["tags"].is_object());
    assert!(config_of(&versions[1])["properties"]["tags"].is_null());
    assert!(config_of(&versions[2])["properties"]["size"].is_object());
    assert!(config_of(&versions[2])["properties"]["profile"].is_object());
}

#[test]
fn immutable_fields_are_declared_on_the_stored_version_and_kept_where_an_old_one_has_them() {
    let crd = crd::generate(&ResourceSchema::of::<Widgets>(), &CrdConfig::default()).unwrap();
    let messages = |i: usize| -> Vec<String> {
        config_of(&crd["spec"]["versions"][i])["x-kubernetes-validations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["message"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        messages(0),
        [
            "profile is immutable",
            "zone is immutable",
            "tags is immutable"
        ]
    );
    assert_eq!(messages(1), ["profile is immutable", "zone is immutable"]);
    assert_eq!(messages(2), ["profile is immutable"]);
}

#[test]
fn conversion_goes_to_the_webhook_with_v1_reviews_and_unknown_fields_are_pruned() {
    let service = WebhookService {
        namespace: "ops".into(),
        name: "widgets".into(),
        path: "/convert".into(),
    };
    let options = CrdConfig::default().with_conversion_service(service);
    let crd = crd::generate(&ResourceSchema::of::<Widgets>(), &options).unwrap();
    assert_eq!(crd["spec"]["preserveUnknownFields"], false);
    assert_eq!(
        crd["spec"]["conversion"],
        json!({"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"service": {"namespace": "ops", "name": "widgets", "path": "/convert"}},
        }})
    );
    let placeholder =
        crd::generate(&ResourceSchema::of::<Widgets>(), &CrdConfig::default()).unwrap();
    assert!(
        placeholder["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["name"].is_string()
    );
}

#[test]
fn a_kind_with_one_version_keeps_todays_crd() {
    let schema = ResourceSchema::new(ResourceDescriptor::new(
        "example.com",
        "v1",
        "widgets",
        "Widget",
    ));
    let crd = crd::generate(&schema, &CrdConfig::default()).unwrap();
    let spec = crd["spec"].as_object().unwrap();
    let keys: Vec<&String> = spec.keys().collect();
    assert_eq!(keys, ["group", "names", "scope", "versions"]);
    assert_eq!(crd["spec"]["versions"].as_array().unwrap().len(), 1);
}

#[test]
fn an_installed_crd_keeping_unknown_fields_is_refused_when_versions_are_declared() {
    let keeps = json!({"spec": {"preserveUnknownFields": true}});
    let prunes = json!({"spec": {"preserveUnknownFields": false}});
    let many = ResourceSchema::of::<Widgets>();
    assert!(
        matches!(crd::check_installed(&many, &keeps), Err(Error::PreservesUnknownFields(name)) if name == "widgets.example.com")
    );
    assert!(crd::check_installed(&many, &prunes).is_ok());
    assert!(crd::check_installed(&many, &json!({})).is_ok());
}

#[test]
fn an_older_version_named_like_the_stored_one_or_not_a_version_is_refused() {
    use super::{WidgetV1, WidgetV1alpha1};
    use crate::package::infrastructure::NoOutputs;
    use crate::versions::Versions;
    use crate::{
        async_trait, CallbackResult, Context, Infrastructure, Observation, Outcome, Package,
    };
    struct Twice;
    #[async_trait]
    impl Infrastructure for Twice {
        type Config = WidgetV1;
        type Outputs = NoOutputs;
        fn schema() -> ResourceSchema {
            ResourceSchema::new(ResourceDescriptor::new(
                "example.com",
                "v1",
                "widgets",
                "Widget",
            ))
        }
        fn versions() -> Versions<WidgetV1> {
            Versions::stored().served::<WidgetV1alpha1>("v1")
        }
        async fn observe(&self, _: &Context<WidgetV1>) -> CallbackResult<Observation<NoOutputs>> {
            Ok(Observation::ABSENT)
        }
        async fn converge(&self, _: &Context<WidgetV1>) -> CallbackResult<Outcome<NoOutputs>> {
            Ok(Outcome::done())
        }
        async fn delete(&self, _: &Context<WidgetV1>) -> CallbackResult<Outcome<NoOutputs>> {
            Ok(Outcome::done())
        }
    }
    assert!(matches!(
        Package::new(Twice),
        Err(Error::InvalidConfig {
            field: "versions",
            ..
        })
    ));
    assert!(!crate::versions::old::is_version_name("V1"));
    assert!(!crate::versions::old::is_version_name("1v"));
    assert!(crate::versions::old::is_version_name("v1beta2"));
}

#[test]
fn a_reference_is_described_only_in_the_versions_that_have_the_field() {
    let servers = ResourceDescriptor::new("example.com", "v1", "servers", "Server");
    let schema = ResourceSchema::of::<Widgets>().reference("zone", servers);
    let crd = crd::generate(&schema, &CrdConfig::default()).unwrap();
    let zone = |i: usize| config_of(&crd["spec"]["versions"][i])["properties"]["zone"].clone();
    assert!(zone(0)["properties"]["name"].is_object());
    assert!(zone(1)["properties"]["name"].is_object());
    assert!(zone(2).is_null());
}
