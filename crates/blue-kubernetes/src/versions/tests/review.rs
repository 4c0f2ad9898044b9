//! The conversion judgement: what a response may change, and hostile
//! bodies answered with a failure, never a panic.

use super::{conversion, convert, review_body, widget};
use crate::versions::MAX_REVIEW_OBJECTS;
use proptest::prelude::*;
use serde_json::{json, Value};

fn failure(body: &[u8]) -> Value {
    let answer = conversion().review(body);
    assert_eq!(answer["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(answer["kind"], "ConversionReview");
    assert_eq!(
        answer["response"]["result"]["status"], "Failure",
        "{answer}"
    );
    assert!(answer["response"].get("convertedObjects").is_none());
    answer["response"].clone()
}

#[test]
fn a_conversion_changes_only_the_api_version_the_config_and_its_annotation() {
    let stored = widget(
        "v1",
        json!({"replicas": 3, "zone": "eu-1", "tags": {"a": "b"}}),
    );
    let mut read = convert(stored.clone(), "v1alpha1");
    assert_eq!(read["apiVersion"], "example.com/v1alpha1");
    assert_eq!(read["spec"]["config"], json!({"size": 3}));
    let key = super::names().stored_config_annotation();
    read["metadata"]["annotations"]
        .as_object_mut()
        .unwrap()
        .remove(&key);
    let mut expected = stored;
    expected["apiVersion"] = json!("example.com/v1alpha1");
    expected["spec"]["config"] = json!({"size": 3});
    assert_eq!(read, expected);
}

#[test]
fn every_object_of_a_review_is_converted_in_order_from_any_served_version() {
    let objects = vec![
        widget("v1alpha1", json!({"size": 1})),
        widget("v1", json!({"replicas": 2, "zone": null, "tags": {}})),
        widget("v1beta1", json!({"replicas": 3, "zone": "z"})),
    ];
    let answer = conversion().review(&review_body("example.com/v1", objects));
    let converted = answer["response"]["convertedObjects"].as_array().unwrap();
    let replicas: Vec<&Value> = converted
        .iter()
        .map(|o| &o["spec"]["config"]["replicas"])
        .collect();
    assert_eq!(replicas, [&json!(1), &json!(2), &json!(3)]);
    assert!(converted
        .iter()
        .all(|o| o["apiVersion"] == "example.com/v1"));
}

#[test]
fn a_desired_version_the_kind_does_not_serve_is_a_failure() {
    let response = failure(&review_body(
        "example.com/v2",
        vec![widget("v1", json!({"replicas": 1}))],
    ));
    assert_eq!(response["uid"], "705ab4f5");
}

#[test]
fn an_object_at_a_version_the_kind_does_not_serve_is_a_failure() {
    failure(&review_body(
        "example.com/v1",
        vec![widget("v0", json!({"size": 1}))],
    ));
}

#[test]
fn objects_of_another_kind_or_group_are_a_failure() {
    let mut gadget = widget("v1", json!({}));
    gadget["kind"] = json!("Gadget");
    failure(&review_body("example.com/v1", vec![gadget]));
    let mut elsewhere = widget("v1", json!({}));
    elsewhere["apiVersion"] = json!("other.example.com/v1");
    failure(&review_body("example.com/v1", vec![elsewhere]));
    failure(&review_body(
        "other.example.com/v1",
        vec![widget("v1", json!({}))],
    ));
}

#[test]
fn a_missing_or_mistyped_uid_is_a_failure_without_a_uid() {
    for uid in [Value::Null, json!(""), json!(42), json!("x".repeat(200))] {
        let body = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": "example.com/v1", "objects": []},
        });
        assert_eq!(failure(body.to_string().as_bytes())["uid"], "");
    }
}

#[test]
fn a_list_larger_than_the_bound_is_a_failure() {
    let objects = vec![json!({}); MAX_REVIEW_OBJECTS + 1];
    let response = failure(&review_body("example.com/v1", objects));
    assert_eq!(response["uid"], "705ab4f5");
}

#[test]
fn a_body_larger_than_the_bound_is_refused_unread() {
    failure(&vec![b' '; crate::versions::MAX_REVIEW_BYTES + 1]);
}

#[test]
fn malformed_json_and_other_reviews_are_a_failure() {
    failure(b"{\"apiVersion\": ");
    failure(b"[]");
    failure(br#"{"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview", "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": []}}"#);
    failure(br#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": {}}}"#);
    failure(br#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": {"uid": "u", "objects": []}}"#);
}

#[test]
fn objects_that_are_not_objects_are_a_failure_naming_no_value() {
    for object in [
        json!("secret-ish"),
        json!({"apiVersion": 1}),
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": "m"}),
    ] {
        let response = failure(&review_body("example.com/v1", vec![object]));
        let message = response["result"]["message"].as_str().unwrap();
        assert!(message.starts_with("object 0: "), "{message}");
        assert!(!message.contains("secret-ish"));
    }
}

proptest! {
    #[test]
    fn any_body_gets_an_answer(body in proptest::collection::vec(any::<u8>(), 0..256)) {
        let answer = conversion().review(&body);
        prop_assert_eq!(&answer["kind"], &json!("ConversionReview"));
    }

    #[test]
    fn any_config_and_metadata_shape_gets_an_answer(
        config in prop_oneof![Just(json!(null)), Just(json!(7)), Just(json!([1])), Just(json!({"size": []})), Just(json!({"replicas": -1}))],
        annotations in prop_oneof![Just(json!(null)), Just(json!("a")), Just(json!({"example.com/stored-config": 3})), Just(json!({"example.com/stored-config": "[]"}))],
        from in prop_oneof![Just("v1"), Just("v1beta1"), Just("v1alpha1")],
        to in prop_oneof![Just("v1"), Just("v1beta1"), Just("v1alpha1")],
    ) {
        let mut object = widget(from, config);
        object["metadata"]["annotations"] = annotations;
        let answer = conversion().review(&review_body(&format!("example.com/{to}"), vec![object]));
        prop_assert_eq!(&answer["response"]["result"]["status"], &json!("Success"));
    }
}

#[test]
fn an_empty_review_for_a_served_version_succeeds_and_for_another_fails() {
    let answer = conversion().review(&review_body("example.com/v1beta1", vec![]));
    assert_eq!(answer["response"]["result"]["status"], "Success");
    assert_eq!(answer["response"]["convertedObjects"], json!([]));
    failure(&review_body("example.com/v9", vec![]));
    failure(&review_body("v1", vec![]));
}
