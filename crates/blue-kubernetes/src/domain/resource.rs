//! A resource snapshot (a JSON object) as the controller reads it:
//! read-only accessors over its metadata, what it asks for ([`Intent`]),
//! and the common spec fields every managed resource carries.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

pub(crate) fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(v, path).and_then(Value::as_str)
}

pub(crate) fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

pub(crate) fn name(r: &Value) -> &str {
    str_at(r, &["metadata", "name"]).unwrap_or("")
}

pub(crate) fn namespace(r: &Value) -> &str {
    str_at(r, &["metadata", "namespace"]).unwrap_or("")
}

pub(crate) fn uid(r: &Value) -> Option<&str> {
    str_at(r, &["metadata", "uid"])
}

pub(crate) fn generation(r: &Value) -> i64 {
    at(r, &["metadata", "generation"])
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

pub(crate) fn request_token<'a>(r: &'a Value, annotation: &str) -> &'a str {
    at(r, &["metadata", "annotations", annotation])
        .and_then(Value::as_str)
        .unwrap_or("")
}

pub(crate) fn is_deleting(r: &Value) -> bool {
    at(r, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null())
}

pub(crate) fn finalizers(r: &Value) -> Vec<String> {
    at(r, &["metadata", "finalizers"])
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn has_finalizer(r: &Value, finalizer: &str) -> bool {
    finalizers(r).iter().any(|f| f == finalizer)
}

pub(crate) fn status(r: &Value) -> Option<&Value> {
    r.get("status").filter(|s| s.is_object())
}

pub(crate) fn status_str<'a>(r: &'a Value, key: &str) -> Option<&'a str> {
    status(r).and_then(|s| s.get(key)).and_then(Value::as_str)
}

/// `object` as compact JSON text without `metadata.managedFields`: what the
/// controller keeps of a watched object (the field is most of a small
/// object's size and no pass reads it). Written straight from the borrowed
/// object, never cloned.
pub(crate) fn kept_text(object: &Value) -> Option<Box<str>> {
    let text = serde_json::to_string(&Trimmed(object, true)).ok()?;
    Some(text.into_boxed_str())
}

/// A JSON value serialized as it is, except that a top-level `metadata`
/// (`.1`: this is the top level) loses its `managedFields`.
struct Trimmed<'a>(&'a Value, bool);

impl Serialize for Trimmed<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Value::Object(map) = self.0 else {
            return self.0.serialize(s);
        };
        let mut out = s.serialize_map(None)?;
        for (key, value) in map {
            match (self.1, key.as_str()) {
                (true, "metadata") => out.serialize_entry(key, &Trimmed(value, false))?,
                (false, "managedFields") => {}
                _ => out.serialize_entry(key, value)?,
            }
        }
        out.end()
    }
}

/// What happens to the infrastructure when the resource is deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DeletionPolicy {
    Retain,
    Destroy,
}

/// `spec.managementPolicy`: what the controller may do to the
/// infrastructure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ManagementPolicy {
    /// Observe, converge and (with `Destroy`) delete: the default.
    Full,
    /// Observe and record outputs only: import existing infrastructure.
    /// `converge` and `delete` never run, and deletion never waits on the
    /// infrastructure, whatever `deletionPolicy` says.
    Observe,
}

/// The longest `spec.reconcileInterval` accepted: 365 days. Longer ones are
/// Invalid (`InvalidConfiguration`), which keeps every time the controller
/// computes far from the limits of its arithmetic and of RFC 3339.
pub const MAX_RECONCILE_INTERVAL_MS: u64 = 365 * 24 * 3_600_000;

/// Parsed common fields; `None` in [`parse`] means one is malformed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CommonSpec {
    pub(crate) suspend: bool,
    pub(crate) interval_ms: u64,
    pub(crate) deletion_policy: DeletionPolicy,
    pub(crate) management: ManagementPolicy,
}

pub(crate) const DEFAULT_INTERVAL_MS: u64 = 60_000;

/// Parses `spec.state`, `spec.suspend`, `spec.reconcileInterval` and
/// `spec.deletionPolicy`, or `None` when any is present but malformed.
///
/// Structural checks come first, because a CRD without a structural schema
/// lets anything through: `spec` (when present) and `spec.config` (when
/// present) must be objects, `spec.config.profile` a non-empty string when
/// given (the destroy-protection flag is checked by
/// [`protection_well_typed`], which knows the configured key).
/// A null *field* reads as absent, as in Kubernetes; a null `spec` or
/// `spec.config` does not, because nothing writes one by accident.
pub(crate) fn parse(resource: &Value) -> Option<CommonSpec> {
    if !structurally_valid(resource) {
        return None;
    }
    let field = |k| at(resource, &["spec", k]).filter(|v| !v.is_null());
    match field("state") {
        None => {}
        Some(v) if matches!(v.as_str(), Some("running" | "stopped")) => {}
        Some(_) => return None,
    }
    let suspend = match field("suspend") {
        None => false,
        Some(v) => v.as_bool()?,
    };
    let interval_ms = match field("reconcileInterval") {
        None => DEFAULT_INTERVAL_MS,
        Some(v) => parse_interval(v.as_str()?)?,
    };
    let deletion_policy = deletion_policy(resource)?;
    let management = management_policy(resource)?;
    Some(CommonSpec {
        suspend,
        interval_ms,
        deletion_policy,
        management,
    })
}

fn structurally_valid(resource: &Value) -> bool {
    let spec = match resource.get("spec") {
        None => return true,
        Some(Value::Object(spec)) => spec,
        Some(_) => return false,
    };
    let config = match spec.get("config") {
        None => return true,
        Some(Value::Object(config)) => config,
        Some(_) => return false,
    };
    let profile_ok = match config.get("profile") {
        None | Some(Value::Null) => true,
        Some(Value::String(p)) => !p.is_empty(),
        Some(_) => false,
    };
    profile_ok
}

/// `spec.config.<key>` (the destroy-protection key) is absent, a boolean or
/// `"true"`/`"false"`: a mistyped flag must not read as "unprotected".
pub(crate) fn protection_well_typed(resource: &Value, key: &str) -> bool {
    match at(resource, &["spec", "config", key]) {
        None | Some(Value::Null | Value::Bool(_)) => true,
        Some(Value::String(s)) => s == "true" || s == "false",
        Some(_) => false,
    }
}

/// `spec.suspend` is true.
pub(crate) fn suspended(resource: &Value) -> bool {
    at(resource, &["spec", "suspend"]) == Some(&Value::Bool(true))
}

/// `spec.deletionPolicy` (absent: Retain), or `None` when malformed.
pub(crate) fn deletion_policy(resource: &Value) -> Option<DeletionPolicy> {
    use DeletionPolicy::*;
    one_of(
        resource,
        "deletionPolicy",
        &[("Retain", Retain), ("Destroy", Destroy)],
    )
}

/// `spec.<field>`: the first of `values` when absent (or null), the value
/// named, or `None` when it names none of them.
fn one_of<T: Copy>(resource: &Value, field: &str, values: &[(&str, T)]) -> Option<T> {
    match at(resource, &["spec", field]).filter(|v| !v.is_null()) {
        None => values.first().map(|(_, v)| *v),
        Some(v) => {
            let named = v.as_str()?;
            values
                .iter()
                .find(|(name, _)| *name == named)
                .map(|(_, v)| *v)
        }
    }
}

/// `spec.managementPolicy` (absent: Full), or `None` when malformed.
pub(crate) fn management_policy(resource: &Value) -> Option<ManagementPolicy> {
    use ManagementPolicy::*;
    one_of(
        resource,
        "managementPolicy",
        &[("Full", Full), ("Observe", Observe)],
    )
}

/// A positive integer followed by `ms`, `s`, `m` or `h`, in milliseconds, at
/// most [`MAX_RECONCILE_INTERVAL_MS`]. Accepts exactly the strings
/// [`reconcile_interval_pattern`] matches.
pub(crate) fn parse_interval(s: &str) -> Option<u64> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = s.split_at(digits);
    let factor = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    // A leading zero is refused like the pattern refuses it.
    if number.starts_with('0') {
        return None;
    }
    let n: u64 = number.parse().ok()?;
    n.checked_mul(factor)
        .filter(|ms| (1..=MAX_RECONCILE_INTERVAL_MS).contains(ms))
}

const UNITS: [(&str, u64); 4] = [("ms", 1), ("s", 1_000), ("m", 60_000), ("h", 3_600_000)];

/// The regular expression (ECMA/RE2 syntax, anchored) a CRD should put on
/// `spec.reconcileInterval`: exactly the values the controller accepts,
/// `1ms` up to [`MAX_RECONCILE_INTERVAL_MS`] in each unit (`8760h`,
/// `525600m`, `31536000s`, `31536000000ms`). CRD generators and the
/// example's `manifests/crd.yaml` use this one source.
///
/// ```
/// let pattern = blue_kubernetes::resource::reconcile_interval_pattern();
/// assert!(pattern.starts_with("^(") && pattern.ends_with(")$"));
/// assert!(pattern.contains("h"));
/// ```
pub fn reconcile_interval_pattern() -> String {
    let alternatives: Vec<String> = UNITS
        .iter()
        .map(|(unit, factor)| format!("({}){unit}", up_to(MAX_RECONCILE_INTERVAL_MS / factor)))
        .collect();
    format!("^({})$", alternatives.join("|"))
}

/// A regular expression matching the decimal numbers `1..=max` written
/// without leading zeros (`max >= 1`).
fn up_to(max: u64) -> String {
    let digits: Vec<u8> = max.to_string().bytes().map(|b| b - b'0').collect();
    let n = digits.len();
    let mut alternatives = Vec::new();
    // Every shorter number.
    if n > 1 {
        alternatives.push(repeat("[1-9][0-9]", n - 2));
    }
    // Same length: equal to max up to position i, smaller at i, anything after.
    for (i, &d) in digits.iter().enumerate() {
        let low = if i == 0 { 1 } else { 0 };
        if d > low {
            let prefix: String = digits[..i].iter().map(|d| char::from(b'0' + d)).collect();
            let class = if d - 1 == low {
                format!("{low}")
            } else {
                format!("[{low}-{}]", d - 1)
            };
            alternatives.push(format!("{prefix}{class}{}", exactly(n - i - 1)));
        }
    }
    alternatives.push(max.to_string());
    alternatives.join("|")
}

/// `head` followed by up to `rest` more digits.
fn repeat(head: &str, rest: usize) -> String {
    match rest {
        0 => head.trim_end_matches("[0-9]").to_string(),
        _ => format!("{head}{{0,{rest}}}"),
    }
}

/// Exactly `k` digits.
fn exactly(k: usize) -> String {
    match k {
        0 => String::new(),
        1 => "[0-9]".into(),
        _ => format!("[0-9]{{{k}}}"),
    }
}

/// `spec.config.<key>` (the destroy-protection key, by default
/// `compute-prevent-destroy`) is true (boolean or `"true"`).
pub(crate) fn prevents_destroy(resource: &Value, key: &str) -> bool {
    match at(resource, &["spec", "config", key]) {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s == "true",
        _ => false,
    }
}

/// What the resource asks for, as seen by callbacks (the options'
/// `blue/event`; not a Kubernetes Event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intent {
    /// `spec.state` is `running` (or absent).
    Create,
    /// `spec.state` is `stopped`.
    Stop,
    /// `metadata.deletionTimestamp` is set.
    Delete,
}

impl Intent {
    /// The `blue/event` string.
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Create => "create",
            Intent::Stop => "stop",
            Intent::Delete => "delete",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kept_text_drops_only_the_metadata_managed_fields() {
        let object = json!({
            "metadata": {"name": "a", "managedFields": [{"manager": "x"}], "labels": {"k": "v"}},
            "spec": {"managedFields": 1},
        });
        let kept: Value = serde_json::from_str(&kept_text(&object).unwrap()).unwrap();
        assert_eq!(
            kept,
            json!({"metadata": {"name": "a", "labels": {"k": "v"}}, "spec": {"managedFields": 1}})
        );
    }

    #[test]
    fn intervals_accept_positive_integers_with_units() {
        assert_eq!(parse_interval("250ms"), Some(250));
        assert_eq!(parse_interval("60s"), Some(60_000));
        assert_eq!(parse_interval("2m"), Some(120_000));
        assert_eq!(parse_interval("1h"), Some(3_600_000));
    }

    #[test]
    fn intervals_reject_zero_fractions_unknown_units_and_overflow() {
        for bad in [
            "0s",
            "1.5s",
            "10d",
            "",
            "s",
            "-1s",
            " 1s",
            "1 s",
            "99999999999999999999h",
            "999999999999h",
            "8761h",
            "31536000001ms",
            "05s",
        ] {
            assert_eq!(parse_interval(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_maximum_is_accepted_in_every_unit_and_one_more_is_not() {
        for (text, ms) in [
            ("8760h", MAX_RECONCILE_INTERVAL_MS),
            ("525600m", MAX_RECONCILE_INTERVAL_MS),
            ("31536000s", MAX_RECONCILE_INTERVAL_MS),
            ("31536000000ms", MAX_RECONCILE_INTERVAL_MS),
            ("1ms", 1),
        ] {
            assert_eq!(parse_interval(text), Some(ms), "{text}");
        }
        for text in ["8761h", "525601m", "31536001s", "31536000001ms"] {
            assert_eq!(parse_interval(text), None, "{text}");
        }
    }

    fn pattern() -> regex::Regex {
        regex::Regex::new(&reconcile_interval_pattern()).unwrap()
    }

    #[test]
    fn pattern_matches_exactly_the_boundary_values_the_parser_accepts() {
        let re = pattern();
        for (unit, factor) in UNITS {
            let max = MAX_RECONCILE_INTERVAL_MS / factor;
            for n in [1, 9, 10, 99, 100, max / 10, max - 1, max, max + 1, max * 10] {
                let text = format!("{n}{unit}");
                assert_eq!(
                    re.is_match(&text),
                    parse_interval(&text).is_some(),
                    "{text}"
                );
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn pattern_and_parser_agree_on_any_number_and_unit(
            n in proptest::prelude::any::<u64>(),
            digits in 0usize..14,
            unit in proptest::sample::select(vec!["ms", "s", "m", "h", "d", ""]),
            zero in proptest::prelude::any::<bool>(),
        ) {
            // Numbers of every length, not only huge ones.
            let n = n % 10u64.pow(digits as u32).max(1);
            let text = format!("{}{n}{unit}", if zero { "0" } else { "" });
            proptest::prop_assert_eq!(pattern().is_match(&text), parse_interval(&text).is_some(), "{}", text);
        }

        #[test]
        fn any_text_parses_to_a_bounded_interval_or_none(text in ".{0,24}") {
            if let Some(ms) = parse_interval(&text) {
                proptest::prop_assert!((1..=MAX_RECONCILE_INTERVAL_MS).contains(&ms));
            }
        }
    }

    #[test]
    fn defaults_apply_when_fields_are_absent() {
        let spec = parse(&json!({"spec": {}})).unwrap();
        assert!(!spec.suspend);
        assert_eq!(spec.interval_ms, 60_000);
        assert_eq!(spec.deletion_policy, DeletionPolicy::Retain);
    }

    #[test]
    fn malformed_common_fields_are_rejected() {
        for spec in [
            json!({"state": "paused"}),
            json!({"suspend": "yes"}),
            json!({"reconcileInterval": "0s"}),
            json!({"deletionPolicy": "Delete"}),
            json!({"config": "text"}),
            json!({"config": null}),
            json!({"config": []}),
            json!({"config": {"profile": ""}}),
            json!({"config": {"profile": 7}}),
            json!({"config": {"profile": {"a": 1}}}),
            json!({"reconcileInterval": 60}),
            json!({"suspend": 1}),
            json!({"state": true}),
            json!("running"),
            json!(["running"]),
            json!(null),
            json!(3),
        ] {
            assert_eq!(parse(&json!({ "spec": spec })), None, "{spec}");
        }
    }

    #[test]
    fn protection_flag_must_be_a_boolean_under_the_configured_key() {
        let r = |v: Value| json!({"spec": {"config": {"keep": v}}});
        for good in [json!(true), json!("false"), Value::Null] {
            assert!(protection_well_typed(&r(good), "keep"));
        }
        for bad in [json!("yes"), json!(1), json!({})] {
            assert!(!protection_well_typed(&r(bad.clone()), "keep"), "{bad}");
            assert!(protection_well_typed(&r(bad), "other"));
        }
    }

    #[test]
    fn absent_spec_and_null_fields_read_as_defaults() {
        assert!(parse(&json!({"metadata": {"name": "a"}})).is_some());
        let nulls = json!({"spec": {"state": null, "suspend": null, "config": {"profile": null}}});
        assert_eq!(parse(&nulls), parse(&json!({"spec": {}})));
        let protected =
            json!({"spec": {"config": {"compute-prevent-destroy": "false", "profile": "p"}}});
        assert!(parse(&protected).is_some());
    }
}
