//! The watch wire format: one JSON object per line,
//! `{"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}}`,
//! decoded line by line as the bytes arrive.

use crate::http_status::classify_status;
use crate::{Error, WatchEvent};
use serde::Deserialize;
use serde_json::Value;
use std::collections::VecDeque;

/// A line longer than this is refused rather than buffered: the API server
/// stores objects of at most about 1.5 MiB, so this is never a real event.
pub(crate) const MAX_LINE_BYTES: usize = 16 << 20;

/// What a decoded line or chunk yields: events, or an error as the last item.
pub(crate) type Decoded = VecDeque<Result<WatchEvent, Error>>;

/// Splits a byte stream into lines, however its chunks fall (a line may span
/// chunks, a chunk may hold several lines), and decodes each complete line.
#[derive(Default)]
pub(crate) struct EventDecoder {
    /// The start of a line whose end has not arrived yet.
    partial: Vec<u8>,
}

impl EventDecoder {
    /// Decodes every line `chunk` completes into `out`. Returns `false` once
    /// an error was pushed: it is the last item, nothing more is decoded.
    pub(crate) fn feed(&mut self, chunk: &[u8], out: &mut Decoded) -> bool {
        let mut rest = chunk;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            let decoded = if self.partial.is_empty() {
                decode_line(&rest[..end])
            } else {
                self.partial.extend_from_slice(&rest[..end]);
                let line = std::mem::take(&mut self.partial);
                decode_line(&line)
            };
            rest = &rest[end + 1..];
            if !push(decoded, out) {
                return false;
            }
        }
        if self.partial.len() + rest.len() > MAX_LINE_BYTES {
            self.partial = Vec::new();
            out.push_back(Err(decode_error()));
            return false;
        }
        self.partial.extend_from_slice(rest);
        true
    }

    /// The stream ended: a last line without its newline still counts.
    pub(crate) fn finish(&mut self, out: &mut Decoded) {
        let line = std::mem::take(&mut self.partial);
        push(decode_line(&line), out);
    }
}

/// Pushes the result of one line; blank lines yield nothing.
fn push(decoded: Option<Result<WatchEvent, Error>>, out: &mut Decoded) -> bool {
    match decoded {
        None => true,
        Some(Ok(event)) => {
            out.push_back(Ok(event));
            true
        }
        Some(Err(e)) => {
            out.push_back(Err(e));
            false
        }
    }
}

#[derive(Deserialize)]
struct RawEvent {
    #[serde(rename = "type")]
    kind: String,
    object: Value,
}

/// One line: an event, an `ERROR` event's classified error, or a decode
/// error (never showing the line); `None` for a blank line.
fn decode_line(line: &[u8]) -> Option<Result<WatchEvent, Error>> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let Ok(RawEvent { kind, object }) = serde_json::from_slice::<RawEvent>(line) else {
        return Some(Err(decode_error()));
    };
    Some(match kind.as_str() {
        "ADDED" => Ok(WatchEvent::Added(object)),
        "MODIFIED" => Ok(WatchEvent::Modified(object)),
        "DELETED" => Ok(WatchEvent::Deleted(object)),
        "BOOKMARK" => object
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .map(|rv| WatchEvent::Bookmark {
                resource_version: rv.to_owned(),
            })
            .ok_or_else(decode_error),
        "ERROR" => Err(error_event(&object)),
        _ => Err(decode_error()),
    })
}

/// An `ERROR` event carries a Kubernetes `Status`: classified by its code
/// and reason like an HTTP answer (410 / `Expired` / `Gone`: list again).
/// A Status without a code counts as a server error (500).
fn error_event(status: &Value) -> Error {
    let code = status["code"]
        .as_u64()
        .and_then(|c| u16::try_from(c).ok())
        .unwrap_or(500);
    Error::Http {
        method: "GET",
        status: code,
        kind: classify_status(code, status["reason"].as_str()),
    }
}

fn decode_error() -> Error {
    Error::Decode {
        operation: "watch".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;
    use serde_json::json;

    const STREAM: &str = concat!(
        r#"{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}}"#,
        "\n",
        r#"{"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"6"}}}"#,
        "\n\n",
        r#"{"type":"BOOKMARK","object":{"kind":"Widget","metadata":{"resourceVersion":"9"}}}"#,
        "\n",
        r#"{"type":"DELETED","object":{"metadata":{"name":"a","resourceVersion":"10"}}}"#,
        "\n",
    );

    fn versions(out: &Decoded) -> Vec<String> {
        out.iter()
            .map(|e| e.as_ref().unwrap().resource_version().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn events_decode_the_same_however_the_bytes_are_split() {
        let bytes = STREAM.as_bytes();
        for size in 1..=bytes.len() {
            let mut decoder = EventDecoder::default();
            let mut out = Decoded::new();
            for chunk in bytes.chunks(size) {
                assert!(decoder.feed(chunk, &mut out), "chunk size {size}");
            }
            decoder.finish(&mut out);
            assert_eq!(versions(&out), ["5", "6", "9", "10"], "chunk size {size}");
        }
    }

    #[test]
    fn each_kind_of_event_keeps_its_object() {
        let mut out = Decoded::new();
        let mut decoder = EventDecoder::default();
        assert!(decoder.feed(STREAM.as_bytes(), &mut out));
        assert!(matches!(&out[0], Ok(WatchEvent::Added(o)) if o["metadata"]["name"] == "a"));
        assert!(matches!(&out[1], Ok(WatchEvent::Modified(_))));
        assert_eq!(
            out[2].as_ref().unwrap(),
            &WatchEvent::Bookmark {
                resource_version: "9".into()
            }
        );
        assert!(matches!(&out[3], Ok(WatchEvent::Deleted(_))));
    }

    #[test]
    fn a_last_line_without_newline_still_counts() {
        let mut out = Decoded::new();
        let mut decoder = EventDecoder::default();
        let line = r#"{"type":"ADDED","object":{"metadata":{"resourceVersion":"3"}}}"#;
        assert!(decoder.feed(line.as_bytes(), &mut out));
        assert!(out.is_empty(), "nothing before the line is complete");
        decoder.finish(&mut out);
        assert_eq!(versions(&out), ["3"]);
    }

    fn error_line(status: Value) -> Result<WatchEvent, Error> {
        let line = json!({"type": "ERROR", "object": status}).to_string();
        decode_line(line.as_bytes()).unwrap()
    }

    #[test]
    fn an_expired_version_is_gone_and_other_errors_are_classified() {
        let expired = json!({"kind": "Status", "status": "Failure", "code": 410,
            "reason": "Expired", "message": "too old resource version: 1 (2)"});
        let err = error_line(expired).unwrap_err();
        assert_eq!(
            (err.kind(), err.http_status()),
            (ErrorKind::Gone, Some(410))
        );
        assert!(!err.to_string().contains("too old"));
        let gone_without_reason = json!({"kind": "Status", "code": 410});
        assert_eq!(
            error_line(gone_without_reason).unwrap_err().kind(),
            ErrorKind::Gone
        );
        let forbidden = json!({"kind": "Status", "code": 403, "reason": "Forbidden"});
        assert_eq!(
            error_line(forbidden).unwrap_err().kind(),
            ErrorKind::Forbidden
        );
        let internal = json!({"kind": "Status", "code": 500, "reason": "InternalError"});
        assert_eq!(error_line(internal).unwrap_err().kind(), ErrorKind::Other);
        let no_code = json!({"kind": "Status", "reason": "Gone"});
        assert_eq!(error_line(no_code).unwrap_err().kind(), ErrorKind::Gone);
    }

    #[test]
    fn an_undecodable_line_ends_the_stream_without_showing_it() {
        let mut out = Decoded::new();
        let mut decoder = EventDecoder::default();
        let bytes = concat!(
            r#"{"type":"ADDED","object":{"metadata":{"resourceVersion":"3"}}}"#,
            "\nnot json hunter2\n",
            r#"{"type":"ADDED","object":{}}"#,
            "\n"
        );
        assert!(!decoder.feed(bytes.as_bytes(), &mut out));
        assert_eq!(out.len(), 2);
        assert!(out[0].is_ok());
        let err = out[1].as_ref().unwrap_err();
        assert!(matches!(err, Error::Decode { .. }));
        assert!(!format!("{err} {err:?}").contains("hunter2"));
        for odd in [
            r#"{"type":"RENAMED","object":{}}"#,
            r#"{"type":"BOOKMARK","object":{"metadata":{}}}"#,
            r#"{"object":{}}"#,
        ] {
            assert!(
                matches!(decode_line(odd.as_bytes()), Some(Err(Error::Decode { .. }))),
                "{odd}"
            );
        }
    }

    #[test]
    fn a_line_past_the_limit_is_refused_instead_of_buffered() {
        let mut out = Decoded::new();
        let mut decoder = EventDecoder::default();
        let chunk = vec![b'x'; MAX_LINE_BYTES / 2 + 1];
        assert!(decoder.feed(&chunk, &mut out));
        assert!(!decoder.feed(&chunk, &mut out));
        assert!(matches!(out.pop_back(), Some(Err(Error::Decode { .. }))));
        assert!(decoder.partial.is_empty());
    }
}
