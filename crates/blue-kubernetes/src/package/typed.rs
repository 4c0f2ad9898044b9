//! Typed config: a package's `spec.config` decoded into its `Config` type
//! once per pass (see `erased`); a config that does not decode is why the
//! resource is Invalid, told without the offending values.

use crate::domain::names::Names;
use crate::package::options::CallbackInput;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The keys the controller owns inside `spec.config`: the package's type
/// never sees them (they stay in [`CallbackInput`]).
fn reserved(key: &str, names: &Names) -> bool {
    key == "profile" || key == names.destroy_protection_key
}

/// `spec.config` of `resource` without the reserved keys.
fn config_of(resource: &Value, names: &Names) -> Value {
    let mut map = resource
        .pointer("/spec/config")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    map.retain(|k, _| !reserved(k, names));
    Value::Object(map)
}

/// Why a typed config does not decode: where in `spec.config`, and
/// serde's message (which may quote the offending value: redact it before
/// it goes anywhere, see [`redact`]).
#[derive(Debug, thiserror::Error)]
#[error("spec.config{path}: {error}")]
pub(crate) struct ConfigError {
    /// The field's path inside `spec.config`, from its root: `.size`,
    /// `.hosts[2]`; empty for the config itself.
    pub(crate) path: String,
    /// Not a `source`: the text is said once, so that redacting it (which
    /// keeps what follows `, expected`) never meets it a second time.
    pub(crate) error: serde_json::Error,
}

impl ConfigError {
    /// The field's path from the resource's root, as Kubernetes writes
    /// field paths: `spec.config.size`.
    pub(crate) fn field(&self) -> String {
        format!("spec.config{}", self.path)
    }
}

/// The typed config of the resource the options are for, or where and
/// why it does not decode.
pub(crate) fn decode_config_at<C: DeserializeOwned>(
    options: &CallbackInput,
) -> Result<C, ConfigError> {
    let config = config_of(options.resource(), &options.names());
    serde_path_to_error::deserialize(config).map_err(|e| {
        let path = match e.path().iter().next() {
            None => String::new(),
            Some(_) => match e.path().to_string() {
                p if p.starts_with('[') => p,
                p => format!(".{p}"),
            },
        };
        ConfigError {
            path,
            error: e.into_inner(),
        }
    })
}

/// The typed config of the resource the options are for.
pub(crate) fn decode_config<C: DeserializeOwned>(
    options: &CallbackInput,
) -> Result<C, serde_json::Error> {
    serde_json::from_value(config_of(options.resource(), &options.names()))
}

/// A serde message with the offending *values* removed: serde quotes what it
/// got (`invalid type: string "hunter2"`, ``unknown field `token` ``) before
/// `expected ...`, which names only the type's own fields and types.
pub(crate) fn redact(message: &str) -> String {
    if message.starts_with("missing field") {
        return message.to_string();
    }
    let mut out = String::with_capacity(message.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in message.char_indices() {
        match quote {
            // serde quotes strings with Debug escapes: `\"` does not close.
            Some(_) if escaped => escaped = false,
            Some('"') if c == '\\' => escaped = true,
            Some(q) if c == q => {
                out.push_str("...");
                out.push(c);
                quote = None;
            }
            Some(_) => {}
            None if message[i..].starts_with(", expected") => {
                out.push_str(&message[i..]);
                break;
            }
            None => {
                out.push(c);
                if c == '"' || c == '`' {
                    quote = Some(c);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_error<C: DeserializeOwned>(v: Value) -> String {
        serde_json::from_value::<C>(v).err().unwrap().to_string()
    }

    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Sized {
        size: u32,
    }

    #[test]
    fn decode_messages_lose_the_values_but_keep_the_expectation() {
        let secret = "hunter2";
        for tricky in ["a\"hunter2\"b", "x, expected hunter2"] {
            let message = decode_error::<Sized>(serde_json::json!({ "size": tricky }));
            assert!(!redact(&message).contains(secret), "{}", redact(&message));
        }
        let wrong_type = decode_error::<Sized>(serde_json::json!({"size": secret}));
        let unknown = decode_error::<Sized>(serde_json::json!({"size": 1, secret: 1}));
        for message in [&wrong_type, &unknown] {
            assert!(message.contains(secret), "{message}");
            let redacted = redact(message);
            assert!(!redacted.contains(secret), "{redacted}");
            assert!(redacted.contains("expected"), "{redacted}");
        }
        assert!(redact(&unknown).contains("`size`"));
        let missing = decode_error::<Sized>(serde_json::json!({}));
        assert_eq!(redact(&missing), "missing field `size`");
    }
}
