//! Property tests: for every declared version pair, stored -> old ->
//! stored and old -> stored -> old are identities on the whole object.

use super::{convert, names, widget, WidgetV1, WidgetV1alpha1, WidgetV1beta1, OLD};
use proptest::prelude::*;
use serde_json::{json, Value};

fn stored_configs() -> impl Strategy<Value = WidgetV1> {
    (
        any::<u32>(),
        proptest::option::of("[a-z0-9-]{0,12}"),
        proptest::collection::btree_map("[a-z]{1,6}", "[ -~]{0,8}", 0..4),
    )
        .prop_map(|(replicas, zone, tags)| WidgetV1 {
            replicas,
            zone,
            tags,
        })
}

/// A stored config as a user may have written it, with the reserved keys.
fn with_reserved(config: &WidgetV1, profile: bool) -> Value {
    let mut value = serde_json::to_value(config).unwrap();
    if profile {
        value["profile"] = json!("infra--w");
        value[names().destroy_protection_key] = json!(true);
    }
    value
}

proptest! {
    #[test]
    fn stored_to_old_to_stored_is_the_identity(config in stored_configs(), profile in any::<bool>()) {
        let stored = widget("v1", with_reserved(&config, profile));
        for old in OLD {
            let read = convert(stored.clone(), old);
            prop_assert_eq!(&read["apiVersion"], &json!(format!("example.com/{old}")));
            prop_assert_eq!(convert(read, "v1"), stored.clone());
        }
    }

    #[test]
    fn old_to_stored_to_old_is_the_identity(
        replicas in any::<u32>(),
        zone in proptest::option::of("[a-z0-9-]{0,12}"),
        profile in any::<bool>(),
    ) {
        let beta = serde_json::to_value(WidgetV1beta1 { replicas, zone }).unwrap();
        let alpha = serde_json::to_value(WidgetV1alpha1 { size: replicas }).unwrap();
        for (old, config) in [("v1beta1", beta), ("v1alpha1", alpha)] {
            let mut config = config;
            if profile {
                config["profile"] = json!("infra--w");
            }
            let written = widget(old, config);
            let stored = convert(written.clone(), "v1");
            prop_assert_eq!(convert(stored, old), written);
        }
    }

    #[test]
    fn old_to_older_and_back_keeps_the_stored_config(config in stored_configs()) {
        let stored = widget("v1", with_reserved(&config, false));
        let beta = convert(stored.clone(), "v1beta1");
        let alpha = convert(beta, "v1alpha1");
        let beta = convert(alpha, "v1beta1");
        prop_assert_eq!(convert(beta, "v1"), stored);
    }
}

#[test]
fn an_old_clients_read_modify_write_loses_no_field_of_the_stored_version() {
    let config = json!({"replicas": 3, "zone": "eu-1", "tags": {"team": "db"}});
    let mut read = convert(widget("v1", config), "v1alpha1");
    assert_eq!(read["spec"]["config"], json!({"size": 3}));
    let key = names().stored_config_annotation();
    assert!(read["metadata"]["annotations"][&key].is_string());
    read["spec"]["config"]["size"] = json!(5);
    let written = convert(read, "v1");
    assert_eq!(
        written["spec"]["config"],
        json!({"replicas": 5, "zone": "eu-1", "tags": {"team": "db"}})
    );
    assert_eq!(written["metadata"]["annotations"], json!({"note": "kept"}));
}

#[test]
fn nothing_is_kept_when_the_old_version_expresses_everything() {
    let read = convert(
        widget("v1", json!({"replicas": 3, "zone": null, "tags": {}})),
        "v1beta1",
    );
    assert_eq!(read["metadata"]["annotations"], json!({"note": "kept"}));
}

#[test]
fn a_kept_config_of_another_version_or_by_hand_is_ignored() {
    let key = names().stored_config_annotation();
    let mut read = widget("v1alpha1", json!({"size": 2}));
    read["metadata"]["annotations"][&key] =
        json!(json!({"storedVersion": "v1", "servedVersion": "v1beta1", "config": {"replicas": 9, "zone": "x"}}).to_string());
    let written = convert(read.clone(), "v1");
    assert_eq!(
        written["spec"]["config"],
        json!({"replicas": 2, "zone": null, "tags": {}})
    );
    read["metadata"]["annotations"][&key] = json!("not json");
    assert_eq!(convert(read, "v1")["spec"]["config"]["replicas"], 2);
}

#[test]
fn a_config_its_version_does_not_decode_passes_through_unchanged() {
    // The controller reports it Invalid at the stored version; failing the
    // conversion would fail every list of the kind instead.
    let config = json!({"size": "three", "profile": "p"});
    let stored = convert(widget("v1alpha1", config.clone()), "v1");
    assert_eq!(stored["spec"]["config"], config);
    assert_eq!(convert(stored, "v1alpha1")["spec"]["config"], config);
}
