//! The strategies generate what they promise.

use blue_kubernetes_client::ResourceDescriptor;
use blue_testkit::strategies::{
    arb_common_spec, arb_config, arb_invalid_reconcile_interval, arb_name, arb_object,
    arb_reconcile_interval, arb_valid_reconcile_interval,
};
use blue_testkit::FakeCluster;
use proptest::prelude::*;

/// DNS-1123 label: 1-63 of `[a-z0-9-]`, alphanumeric at both ends.
fn is_dns_label(name: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    (1..=63).contains(&name.len())
        && name.chars().all(|c| alnum(c) || c == '-')
        && name.starts_with(alnum)
        && name.ends_with(alnum)
}

/// The rule for `reconcileInterval`: a positive integer followed by `ms`,
/// `s`, `m` or `h`.
fn is_valid_interval(text: &str) -> bool {
    let unit_at = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(unit_at);
    matches!(unit, "ms" | "s" | "m" | "h") && digits.parse::<u64>().is_ok_and(|n| n > 0)
}

proptest! {
    #[test]
    fn generated_names_are_valid_dns_labels(name in arb_name()) {
        prop_assert!(is_dns_label(&name), "{name:?}");
    }

    #[test]
    fn generated_specs_are_objects_with_valid_enums(spec in arb_common_spec()) {
        let spec = spec.as_object().expect("spec is an object");
        for key in spec.keys() {
            prop_assert!(
                ["state", "suspend", "reconcileInterval", "deletionPolicy", "config"].contains(&key.as_str()),
                "unexpected key {key}"
            );
        }
        if let Some(state) = spec.get("state") {
            prop_assert!(state == "running" || state == "stopped");
        }
        if let Some(policy) = spec.get("deletionPolicy") {
            prop_assert!(policy == "Retain" || policy == "Destroy");
        }
        if let Some(suspend) = spec.get("suspend") {
            prop_assert!(suspend.is_boolean());
        }
        if let Some(config) = spec.get("config") {
            prop_assert!(config.is_object());
        }
    }

    #[test]
    fn configs_are_flat_objects_whose_profile_is_a_name(config in arb_config()) {
        let config = config.as_object().expect("config is an object");
        prop_assert!(config.len() <= 7);
        for (key, value) in config {
            prop_assert!(value.is_string() || value.is_number() || value.is_boolean(), "{key}");
        }
        if let Some(profile) = config.get("profile") {
            prop_assert!(is_dns_label(profile.as_str().expect("profile is a string")));
        }
    }

    #[test]
    fn interval_strategies_agree_with_the_spec_rule(
        valid in arb_valid_reconcile_interval(),
        invalid in arb_invalid_reconcile_interval(),
        any in arb_reconcile_interval(),
    ) {
        prop_assert!(is_valid_interval(&valid), "{valid:?}");
        prop_assert!(!is_valid_interval(&invalid), "{invalid:?}");
        prop_assert!(any.len() < 16);
    }

    #[test]
    fn generated_objects_can_be_created(object in arb_object()) {
        let cluster = FakeCluster::new();
        let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
        let created = cluster.create_with(&d, object.clone());
        prop_assert_eq!(&created["spec"], &object["spec"]);
    }
}

#[test]
fn both_kinds_of_interval_and_the_profile_key_show_up() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut valid, mut invalid, mut profile) = (0, 0, 0);
    for _ in 0..500 {
        let interval = arb_reconcile_interval()
            .new_tree(&mut runner)
            .unwrap()
            .current();
        if is_valid_interval(&interval) {
            valid += 1;
        } else {
            invalid += 1;
        }
        let config = arb_config().new_tree(&mut runner).unwrap().current();
        if config.get("profile").is_some() {
            profile += 1;
        }
    }
    assert!(
        valid > 100 && invalid > 50,
        "{valid} valid, {invalid} invalid"
    );
    assert!(profile > 100 && profile < 400, "{profile} with a profile");
}
