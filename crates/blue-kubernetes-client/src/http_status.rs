//! Turning an API server's answer into an [`ErrorKind`]: its HTTP status
//! and the `reason` of its `Status`, which kubectl also prints.

use crate::ErrorKind;

/// Classifies a non-2xx answer from its status code and, when the body is a
/// Kubernetes `Status`, its `reason`, exactly as the kubectl transport
/// classifies `Error from server (Reason)`. The body is only parsed here;
/// nothing of it is kept.
pub(crate) fn classify_http(status: u16, body: &[u8]) -> ErrorKind {
    let status_body = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .filter(|v| v["kind"] == "Status");
    classify_status(
        status,
        status_body.as_ref().and_then(|v| v["reason"].as_str()),
    )
}

/// Classifies an HTTP status code with the `reason` of its Kubernetes
/// `Status`, if known: a known reason wins over the code.
pub(crate) fn classify_status(status: u16, reason: Option<&str>) -> ErrorKind {
    reason
        .and_then(kind_of_reason)
        .unwrap_or_else(|| kind_of_status(status))
}

fn kind_of_status(status: u16) -> ErrorKind {
    match status {
        401 => ErrorKind::Unauthorized,
        403 => ErrorKind::Forbidden,
        404 => ErrorKind::NotFound,
        410 => ErrorKind::Gone,
        409 => ErrorKind::Conflict,
        408 | 504 => ErrorKind::Timeout,
        400 | 413 | 415 | 422 => ErrorKind::Invalid,
        429 | 500..=599 => ErrorKind::Unavailable,
        _ => ErrorKind::Other,
    }
}

/// Maps a Kubernetes `metav1.StatusReason` to a kind; unknown reasons
/// come back as `None`, and the caller falls back to the HTTP status code
/// or, for kubectl, to its wording heuristics.
pub(crate) fn kind_of_reason(reason: &str) -> Option<ErrorKind> {
    Some(match reason {
        "Conflict" => ErrorKind::Conflict,
        "NotFound" => ErrorKind::NotFound,
        "Gone" | "Expired" => ErrorKind::Gone,
        "Unauthorized" => ErrorKind::Unauthorized,
        "Forbidden" => ErrorKind::Forbidden,
        "Invalid" | "BadRequest" | "RequestEntityTooLarge" | "UnsupportedMediaType" => {
            ErrorKind::Invalid
        }
        "Timeout" | "ServerTimeout" => ErrorKind::Timeout,
        "ServiceUnavailable" | "TooManyRequests" => ErrorKind::Unavailable,
        // AlreadyExists is also HTTP 409, but it does not mean "your snapshot
        // is stale", which is what callers act on for Conflict.
        "AlreadyExists" | "InternalError" | "MethodNotAllowed" | "NotAcceptable" => {
            ErrorKind::Other
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(reason: &str, code: u16) -> Vec<u8> {
        serde_json::json!({"kind": "Status", "status": "Failure", "reason": reason, "code": code})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn status_reason_decides_when_present() {
        assert_eq!(
            classify_http(409, &status("Conflict", 409)),
            ErrorKind::Conflict
        );
        assert_eq!(
            classify_http(404, &status("NotFound", 404)),
            ErrorKind::NotFound
        );
        assert_eq!(
            classify_http(403, &status("Forbidden", 403)),
            ErrorKind::Forbidden
        );
        assert_eq!(
            classify_http(422, &status("Invalid", 422)),
            ErrorKind::Invalid
        );
        assert_eq!(
            classify_http(504, &status("Timeout", 504)),
            ErrorKind::Timeout
        );
        assert_eq!(
            classify_http(500, &status("InternalError", 500)),
            ErrorKind::Other
        );
    }

    #[test]
    fn status_code_decides_without_a_status_body() {
        for (code, kind) in [
            (401, ErrorKind::Unauthorized),
            (403, ErrorKind::Forbidden),
            (404, ErrorKind::NotFound),
            (409, ErrorKind::Conflict),
            (408, ErrorKind::Timeout),
            (504, ErrorKind::Timeout),
            (422, ErrorKind::Invalid),
            (502, ErrorKind::Unavailable),
            (503, ErrorKind::Unavailable),
            (418, ErrorKind::Other),
        ] {
            assert_eq!(classify_http(code, b"<html>oops</html>"), kind, "{code}");
        }
    }

    #[test]
    fn already_exists_is_not_a_conflict_though_both_are_409() {
        let body = br#"{"kind":"Status","reason":"AlreadyExists"}"#;
        assert_eq!(classify_http(409, body), ErrorKind::Other);
        assert_eq!(classify_http(503, b"upstream down"), ErrorKind::Unavailable);
    }

    #[test]
    fn a_json_body_that_is_not_a_status_is_ignored() {
        let body = br#"{"kind":"ConfigMap","reason":"Conflict"}"#;
        assert_eq!(classify_http(404, body), ErrorKind::NotFound);
    }
}
