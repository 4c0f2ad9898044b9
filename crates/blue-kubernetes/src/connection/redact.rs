//! Keeping connection values out of free text and recorded values: what
//! is redacted, and how a value handed out is found again.

use serde_json::Value;

/// The shortest value redacted from free text. A shorter one would mangle
/// log lines wherever its characters happen to occur (a port, a word), and
/// no generated credential is that short.
pub(crate) const SHORTEST_REDACTED: usize = 8;

/// What a redacted value reads as: the same marker [`Sensitive`](super::Sensitive) prints.
pub(crate) const REDACTED: &str = "<redacted>";

/// `text` with each of `values` (of at least [`SHORTEST_REDACTED`] bytes)
/// replaced by [`REDACTED`], the longest first, so a value that contains
/// another is replaced whole.
pub(super) fn redact<'a>(text: &str, values: impl Iterator<Item = &'a str>) -> String {
    let mut values: Vec<&str> = values.filter(|v| v.len() >= SHORTEST_REDACTED).collect();
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    let mut text = text.to_string();
    for value in values {
        if text.contains(value) {
            text = text.replace(value, REDACTED);
        }
    }
    text
}

/// Whether any string of `value` (or key of its maps) contains one of
/// `needles`.
pub(super) fn strings_hold(value: &Value, needles: &[String]) -> bool {
    let holds = |text: &str| needles.iter().any(|n| text.contains(n.as_str()));
    match value {
        Value::String(text) => holds(text),
        Value::Array(items) => items.iter().any(|v| strings_hold(v, needles)),
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| holds(k) || strings_hold(v, needles)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{redact, strings_hold};

    #[test]
    fn values_are_redacted_longest_first_and_short_ones_are_left() {
        let values = ["s3cr3t-value", "s3cr3t-value-2", "short"];
        let text = "a s3cr3t-value-2, a s3cr3t-value and a short one";
        assert_eq!(
            redact(text, values.into_iter()),
            "a <redacted>, a <redacted> and a short one"
        );
    }
    use serde_json::json;

    #[test]
    fn a_generated_value_is_found_inside_any_string_or_key_but_not_in_numbers() {
        let needles = ["s3cr3t-value".to_string()];
        for holding in [
            json!("s3cr3t-value"),
            json!({"dsn": "postgres://app:s3cr3t-value@db/app"}),
            json!([1, {"nested": ["x", "s3cr3t-value"]}]),
            json!({"s3cr3t-value": true}),
        ] {
            assert!(strings_hold(&holding, &needles), "{holding}");
        }
        for clean in [json!("s3cr3t"), json!({"port": 5432}), json!(null)] {
            assert!(!strings_hold(&clean, &needles), "{clean}");
        }
    }
}
