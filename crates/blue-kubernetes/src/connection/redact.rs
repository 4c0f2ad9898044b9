//! Keeping connection values out of free text and recorded values: what
//! is redacted, and how a value handed out is found again.

use serde_json::Value;

/// The shortest value redacted from free text. A shorter one would mangle
/// log lines wherever its characters happen to occur (a port, a word), and
/// no generated credential is that short.
pub(crate) const SHORTEST_REDACTED: usize = 8;

/// What a redacted value reads as: the same marker [`Sensitive`](super::Sensitive) prints.
pub(crate) const REDACTED: &str = "<redacted>";

/// The values a pass handed out, for refusing and redacting them.
#[derive(Default)]
pub(super) struct HandedOut {
    /// What `get_or_create`, `get_or_create_with` and `store` returned:
    /// refused in step results and outputs and redacted from free text.
    generated: Vec<String>,
    /// What `get` read back: redacted from free text only (a step result
    /// may carry a detail the package stored with `set`).
    read: Vec<String>,
}

impl HandedOut {
    /// Notes `value` as handed out (`generated`: a value the package did
    /// not choose).
    pub(super) fn note(&mut self, value: &str, generated: bool) {
        let values = match generated {
            true => &mut self.generated,
            false => &mut self.read,
        };
        if !value.is_empty() && !values.iter().any(|v| v == value) {
            values.push(value.to_string());
        }
    }

    /// Whether any string of `value` holds a generated value.
    pub(super) fn holds_generated(&self, value: &Value) -> bool {
        !self.generated.is_empty() && strings_hold(value, &self.generated)
    }

    /// `text` with every value handed out redacted.
    pub(super) fn redact(&self, text: &str) -> String {
        let values = self.generated.iter().chain(&self.read);
        redact(text, values.map(String::as_str))
    }
}

/// `text` with each of `values` (of at least [`SHORTEST_REDACTED`] bytes)
/// replaced by [`REDACTED`], the longest first, so a value that contains
/// another is replaced whole.
fn redact<'a>(text: &str, values: impl Iterator<Item = &'a str>) -> String {
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
fn strings_hold(value: &Value, needles: &[String]) -> bool {
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
