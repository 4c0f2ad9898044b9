//! A small YAML writer for JSON documents such as a CRD: block style, and
//! strings quoted JSON-style unless plainly safe.

use serde_json::Value;

/// Renders `value` as a YAML document (block style, two-space indent).
///
/// ```
/// let yaml = blue_kubernetes::crd::to_yaml(&serde_json::json!({
///     "kind": "CustomResourceDefinition",
///     "spec": {"names": {"shortNames": ["w"]}, "note": "a: b"},
/// }));
/// assert_eq!(yaml, "kind: CustomResourceDefinition\nspec:\n  names:\n    shortNames:\n    - w\n  note: \"a: b\"\n");
/// ```
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(m) if !m.is_empty() => object(m, 0, &mut out),
        Value::Array(a) if !a.is_empty() => array(a, 0, &mut out),
        scalar => {
            out.push_str(&inline(scalar));
            out.push('\n');
        }
    }
    out
}

fn object(map: &serde_json::Map<String, Value>, indent: usize, out: &mut String) {
    for (key, value) in map {
        out.push_str(&" ".repeat(indent));
        out.push_str(&string(key));
        out.push(':');
        match value {
            Value::Object(m) if !m.is_empty() => {
                out.push('\n');
                object(m, indent + 2, out);
            }
            Value::Array(a) if !a.is_empty() => {
                out.push('\n');
                array(a, indent, out);
            }
            scalar => {
                out.push(' ');
                out.push_str(&inline(scalar));
                out.push('\n');
            }
        }
    }
}

fn array(items: &[Value], indent: usize, out: &mut String) {
    for item in items {
        let mut nested = String::new();
        match item {
            Value::Object(m) if !m.is_empty() => object(m, indent + 2, &mut nested),
            Value::Array(a) if !a.is_empty() => array(a, indent + 2, &mut nested),
            scalar => nested = format!("{}{}\n", " ".repeat(indent + 2), inline(scalar)),
        }
        // The first line of the item moves up beside its dash.
        out.push_str(&" ".repeat(indent));
        out.push_str("- ");
        out.push_str(&nested[indent + 2..]);
    }
}

fn inline(value: &Value) -> String {
    match value {
        Value::String(s) => string(s),
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
        other => other.to_string(),
    }
}

/// Plain when it cannot be read as anything but this string, else quoted.
fn string(s: &str) -> String {
    let plain = s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "y" | "n" | "yes" | "no" | "on" | "off" | "true" | "false" | "null"
        );
    if plain {
        s.to_string()
    } else {
        Value::String(s.to_string()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ambiguous_strings_are_quoted_and_nesting_is_kept() {
        let doc = json!({
            "a": ["yes", "60s", "x", {"k": 1, "l": [true]}, [], {}],
            "b": {"c": null, "d": "^[1-9]$", "e": "has \"quotes\""},
        });
        assert_eq!(
            to_yaml(&doc),
            "a:\n- \"yes\"\n- \"60s\"\n- x\n- k: 1\n  l:\n  - true\n- []\n- {}\nb:\n  c: null\n  d: \"^[1-9]$\"\n  e: \"has \\\"quotes\\\"\"\n"
        );
    }
}
