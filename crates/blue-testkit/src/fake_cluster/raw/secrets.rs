//! The API server's rules for a Secret's payload on every write:
//! `stringData` is merged into `data` (base64-encoded, winning over the
//! same key in `data`) and dropped, every `data` value must be valid
//! base64, and `type` defaults to `Opaque`.

use super::paths::Target;
use super::Refused;
use serde_json::{json, Map, Value};

/// Applies the rules to `object` when `target` is a core Secret; anything
/// else passes unchanged. A `data` value that is not base64 is `422 Invalid`.
pub(crate) fn admit(target: &Target, object: &mut Value) -> Result<(), Refused> {
    if !(target.group.is_empty() && target.plural == "secrets") {
        return Ok(());
    }
    let Some(fields) = object.as_object_mut() else {
        return Err(Refused::bad_request());
    };
    let mut data = match fields.remove("data") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(data)) => data,
        Some(_) => return Err(Refused::invalid()),
    };
    if data.values().any(|v| !v.as_str().is_some_and(is_base64)) {
        return Err(Refused::invalid());
    }
    match fields.remove("stringData") {
        None | Some(Value::Null) => {}
        Some(Value::Object(plain)) => {
            for (key, value) in plain {
                let text = value.as_str().ok_or_else(Refused::invalid)?;
                data.insert(key, json!(encode(text.as_bytes())));
            }
        }
        Some(_) => return Err(Refused::invalid()),
    }
    if !data.is_empty() {
        fields.insert("data".into(), Value::Object(data));
    }
    fields.entry("type").or_insert_with(|| json!("Opaque"));
    Ok(())
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding, as the server stores `data`.
pub(crate) fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Whether `text` is standard padded base64, which is what the server
/// accepts in `data`.
fn is_base64(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() % 4 != 0 {
        return false;
    }
    let padding = bytes.iter().rev().take_while(|b| **b == b'=').count();
    padding <= 2
        && bytes[..bytes.len() - padding]
            .iter()
            .all(|b| ALPHABET.contains(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_matches_the_standard_alphabet_with_padding() {
        assert_eq!(encode(b""), "");
        assert_eq!(encode(b"f"), "Zg==");
        assert_eq!(encode(b"fo"), "Zm8=");
        assert_eq!(encode(b"foo"), "Zm9v");
        assert_eq!(encode(b"hunter2"), "aHVudGVyMg==");
        for good in ["", "Zg==", "Zm8=", "Zm9v", "aHVudGVyMg=="] {
            assert!(is_base64(good), "{good}");
        }
        for bad in ["Zg", "Zm9v!", "Z===", "not base64", "Zg=a"] {
            assert!(!is_base64(bad), "{bad}");
        }
    }
}
