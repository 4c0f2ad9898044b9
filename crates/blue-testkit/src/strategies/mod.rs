//! proptest strategies for the inputs of an operator: object names, package
//! configs, common spec fields, faults; and, for your own package, values
//! drawn from a CRD's schema ([`arb_from_schema`], [`arb_config_from_crd`])
//! or your own config strategy ([`arb_spec_with`]).
//!
//! ```
//! use blue_testkit::strategies::{arb_common_spec, arb_name};
//! use proptest::prelude::*;
//!
//! proptest!(|(name in arb_name(), spec in arb_common_spec())| {
//!     prop_assert!(!name.is_empty() && name.len() <= 63);
//!     prop_assert!(spec.is_object());
//! });
//! ```

mod schema;

pub use schema::{arb_config_from_crd, arb_from_schema, arb_spec_with};

use crate::{Fault, Operation};
use blue_kubernetes::resource::MAX_RECONCILE_INTERVAL_MS;
use blue_kubernetes_client::ErrorKind;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{json, Map, Value};

/// A DNS-1123 label (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`), 1 to 20 characters:
/// a valid object name.
///
/// ```
/// use blue_testkit::strategies::arb_name;
/// use proptest::prelude::*;
/// proptest!(|(name in arb_name())| {
///     prop_assert!(name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
///     prop_assert!(!name.starts_with('-') && !name.ends_with('-'));
/// });
/// ```
pub fn arb_name() -> impl Strategy<Value = String> {
    "[a-z0-9]([-a-z0-9]{0,18}[a-z0-9])?"
}

/// Keys a generated config uses besides `profile`.
const CONFIG_KEYS: [&str; 6] = ["region", "size", "replicas", "enabled", "tier", "image"];

fn arb_scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[a-z0-9]{0,8}".prop_map(Value::from),
        (0i64..1000).prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
    ]
}

/// A config for [`FakeInfra`](crate::FakeInfra)'s packages: a JSON object of
/// up to 6 small string, number or bool values under keys from a small
/// alphabet, sometimes with a string `profile` (an [`arb_name`]). For your
/// own package's config use [`arb_config_from_crd`] or your own strategy.
///
/// ```
/// use blue_testkit::strategies::arb_config;
/// use proptest::prelude::*;
/// proptest!(|(config in arb_config())| {
///     let config = config.as_object().unwrap();
///     prop_assert!(config.values().all(|v| !v.is_object() && !v.is_array()));
///     prop_assert!(config.get("profile").is_none_or(|p| p.is_string()));
/// });
/// ```
pub fn arb_config() -> impl Strategy<Value = Value> {
    (
        proptest::collection::btree_map(select(&CONFIG_KEYS[..]), arb_scalar(), 0..6),
        proptest::option::of(arb_name()),
    )
        .prop_map(|(values, profile)| {
            let mut config: Map<String, Value> =
                values.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            if let Some(profile) = profile {
                config.insert("profile".into(), Value::from(profile));
            }
            Value::Object(config)
        })
}

/// A valid `spec.reconcileInterval`: a positive integer and `ms`, `s`, `m` or `h`,
/// at most [`MAX_RECONCILE_INTERVAL_MS`].
///
/// ```
/// use blue_testkit::strategies::arb_valid_reconcile_interval;
/// use proptest::prelude::*;
/// use blue_kubernetes::resource::MAX_RECONCILE_INTERVAL_MS;
/// proptest!(|(interval in arb_valid_reconcile_interval())| {
///     let digits = interval.trim_end_matches(|c: char| c.is_ascii_alphabetic());
///     let n = digits.parse::<u64>().unwrap();
///     let factor = match &interval[digits.len()..] {
///         "ms" => 1, "s" => 1_000, "m" => 60_000, "h" => 3_600_000, unit => panic!("{unit}"),
///     };
///     prop_assert!(n > 0 && n * factor <= MAX_RECONCILE_INTERVAL_MS);
/// });
/// ```
pub fn arb_valid_reconcile_interval() -> impl Strategy<Value = String> {
    prop_oneof![
        select(&["60s", "2m", "1h", "5ms", "500ms", "30s"][..]).prop_map(str::to_owned),
        // Up to four digits, but never past the longest interval the
        // controller (and the generated CRD's pattern) accepts: `9999h` is
        // Invalid.
        select(&[("ms", 1u64), ("s", 1_000), ("m", 60_000), ("h", 3_600_000)][..]).prop_flat_map(
            |(unit, factor)| {
                let max = (MAX_RECONCILE_INTERVAL_MS / factor).min(9_999);
                (1..=max).prop_map(move |n| format!("{n}{unit}"))
            }
        ),
    ]
}

/// An invalid `spec.reconcileInterval`: zero, fractions, unknown units,
/// empty, signs, spaces, units alone.
///
/// ```
/// use blue_testkit::strategies::arb_invalid_reconcile_interval;
/// use proptest::prelude::*;
/// proptest!(|(interval in arb_invalid_reconcile_interval())| {
///     prop_assert!(interval != "60s");
/// });
/// ```
pub fn arb_invalid_reconcile_interval() -> impl Strategy<Value = String> {
    select(
        &[
            "0s",
            "0ms",
            "00m",
            "1.5s",
            "10d",
            "",
            "s",
            "-5s",
            "+5s",
            "5 s",
            " 5s",
            "5S",
            "5",
            "1h30m",
            "60sec",
            "0x10s",
            "\u{0665}s",
        ][..],
    )
    .prop_map(str::to_owned)
}

/// A `spec.reconcileInterval`, valid (`5ms`, `60s`, `2m`, `1h`...) or not
/// (`0s`, `1.5s`, `10d`, `""`...).
///
/// ```
/// use blue_testkit::strategies::arb_reconcile_interval;
/// use proptest::prelude::*;
/// proptest!(|(interval in arb_reconcile_interval())| {
///     prop_assert!(interval.len() < 16);
/// });
/// ```
pub fn arb_reconcile_interval() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => arb_valid_reconcile_interval(),
        1 => arb_invalid_reconcile_interval(),
    ]
}

/// A `spec` object with any of the common fields: `state`
/// (`running`|`stopped`), `suspend`, `reconcileInterval` (valid or not),
/// `deletionPolicy` (`Retain`|`Destroy`) and `config` ([`arb_config`]).
///
/// ```
/// use blue_testkit::strategies::arb_common_spec;
/// use proptest::prelude::*;
/// proptest!(|(spec in arb_common_spec())| {
///     let state = spec.get("state").and_then(|s| s.as_str()).unwrap_or("running");
///     prop_assert!(state == "running" || state == "stopped");
/// });
/// ```
pub fn arb_common_spec() -> impl Strategy<Value = Value> {
    (
        proptest::option::of(select(&["running", "stopped"][..])),
        proptest::option::of(any::<bool>()),
        proptest::option::of(arb_reconcile_interval()),
        proptest::option::of(select(&["Retain", "Destroy"][..])),
        proptest::option::of(arb_config()),
    )
        .prop_map(|(state, suspend, interval, policy, config)| {
            let mut spec = Map::new();
            let fields = [
                ("state", state.map(Value::from)),
                ("suspend", suspend.map(Value::from)),
                ("reconcileInterval", interval.map(Value::from)),
                ("deletionPolicy", policy.map(Value::from)),
                ("config", config),
            ];
            for (key, value) in fields {
                if let Some(value) = value {
                    spec.insert(key.into(), value);
                }
            }
            Value::Object(spec)
        })
}

/// Any [`ErrorKind`].
///
/// ```
/// use blue_testkit::strategies::arb_error_kind;
/// use proptest::prelude::*;
/// proptest!(|(kind in arb_error_kind())| { prop_assert!(!kind.to_string().is_empty()); });
/// ```
pub fn arb_error_kind() -> impl Strategy<Value = ErrorKind> {
    select(
        &[
            ErrorKind::Conflict,
            ErrorKind::NotFound,
            ErrorKind::Unauthorized,
            ErrorKind::Forbidden,
            ErrorKind::Timeout,
            ErrorKind::Unavailable,
            ErrorKind::Invalid,
            ErrorKind::Other,
        ][..],
    )
}

/// Any [`Fault`]: mostly conflicts and unavailability, sometimes another kind.
///
/// ```
/// use blue_testkit::strategies::arb_fault;
/// use proptest::prelude::*;
/// proptest!(|(fault in arb_fault())| { let _ = fault.kind(); });
/// ```
pub fn arb_fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        2 => Just(Fault::Conflict),
        2 => Just(Fault::Unavailable),
        1 => arb_error_kind().prop_map(Fault::Kind),
    ]
}

/// Any [`Operation`].
///
/// ```
/// use blue_testkit::strategies::arb_operation;
/// use proptest::prelude::*;
/// proptest!(|(op in arb_operation())| { prop_assert!(!op.kubectl_verb().is_empty()); });
/// ```
pub fn arb_operation() -> impl Strategy<Value = Operation> {
    select(&Operation::ALL[..])
}

/// A whole object for [`FakeCluster::create_with`](crate::FakeCluster::create_with):
/// a generated name and a [`arb_common_spec`] spec.
///
/// ```
/// use blue_testkit::strategies::arb_object;
/// use proptest::prelude::*;
/// proptest!(|(object in arb_object())| {
///     prop_assert!(object["metadata"]["name"].is_string());
///     prop_assert!(object["spec"].is_object());
/// });
/// ```
pub fn arb_object() -> impl Strategy<Value = Value> {
    (arb_name(), arb_common_spec())
        .prop_map(|(name, spec)| json!({"metadata": {"name": name}, "spec": spec}))
}
