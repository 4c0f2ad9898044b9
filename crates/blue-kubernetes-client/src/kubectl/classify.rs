//! Turning kubectl's failure text into an [`ErrorKind`].
//!
//! kubectl reports API errors as `Error from server (Reason): ...` and
//! transport errors as free text. The classification is the only thing the
//! transport keeps from that text, so it must be right without ever needing
//! to carry the text itself.

use crate::http_status::kind_of_reason;
use crate::ErrorKind;

/// Classifies a failed kubectl run from its output.
///
/// stderr is where kubectl reports failures; stdout is consulted only when
/// stderr says nothing recognisable, because a successful-looking JSON body
/// on stdout could mention words like `Conflict` as data.
///
/// Public only with the `testing` feature, for tests of fakes that must
/// fail the way kubectl does.
pub fn classify_output(stdout: &str, stderr: &str) -> ErrorKind {
    match classify_text(stderr) {
        ErrorKind::Other => classify_text(stdout),
        kind => kind,
    }
}

/// Classifies one text. The API server's own reason wins over wording
/// heuristics, because transport phrases (e.g. `timeout=30s` in a URL) can
/// appear next to a precise server verdict.
fn classify_text(text: &str) -> ErrorKind {
    if let Some(kind) = server_reason(text).and_then(kind_of_reason) {
        return kind;
    }
    // Ordered from the most to the least specific wording.
    const PHRASES: &[(&str, ErrorKind)] = &[
        ("the object has been modified", ErrorKind::Conflict),
        ("(Conflict)", ErrorKind::Conflict),
        ("(NotFound)", ErrorKind::NotFound),
        (
            "the server doesn't have a resource type",
            ErrorKind::NotFound,
        ),
        (
            "the server could not find the requested resource",
            ErrorKind::NotFound,
        ),
        ("(Unauthorized)", ErrorKind::Unauthorized),
        ("You must be logged in", ErrorKind::Unauthorized),
        ("(Forbidden)", ErrorKind::Forbidden),
        ("(Invalid)", ErrorKind::Invalid),
        ("(BadRequest)", ErrorKind::Invalid),
        ("is invalid", ErrorKind::Invalid),
        ("error validating", ErrorKind::Invalid),
        ("(Timeout)", ErrorKind::Timeout),
        ("context deadline exceeded", ErrorKind::Timeout),
        ("i/o timeout", ErrorKind::Timeout),
        ("TLS handshake timeout", ErrorKind::Timeout),
        // Capitalised on purpose: request URLs carry a lowercase `?timeout=`.
        ("Timeout", ErrorKind::Timeout),
        ("connection refused", ErrorKind::Unavailable),
        ("was refused", ErrorKind::Unavailable),
        ("no such host", ErrorKind::Unavailable),
        ("Unable to connect to the server", ErrorKind::Unavailable),
        ("ServiceUnavailable", ErrorKind::Unavailable),
        ("connection reset by peer", ErrorKind::Unavailable),
        ("no route to host", ErrorKind::Unavailable),
    ];
    PHRASES
        .iter()
        .find(|(phrase, _)| text.contains(phrase))
        .map_or(ErrorKind::Other, |(_, kind)| *kind)
}

/// The reason in the first `Error from server (Reason)` of `text`, if any.
fn server_reason(text: &str) -> Option<&str> {
    const MARKER: &str = "Error from server (";
    let start = text.find(MARKER)? + MARKER.len();
    let rest = &text[start..];
    let end = rest.find(')')?;
    Some(&rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    // Texts below are what kubectl 1.32 prints (see notes/kubectl.md); names
    // and addresses are illustrative.

    #[test]
    fn stale_write_is_classified_as_conflict() {
        let stderr = "Error from server (Conflict): Operation cannot be fulfilled on widgets.example.com \"w\": the object has been modified; please apply your changes to the latest version and try again\n";
        assert_eq!(classify_output("", stderr), ErrorKind::Conflict);
    }

    #[test]
    fn modified_object_without_reason_prefix_is_conflict() {
        let stderr = "error: Operation cannot be fulfilled on widgets.example.com \"w\": the object has been modified; please apply your changes to the latest version and try again\n";
        assert_eq!(classify_output("", stderr), ErrorKind::Conflict);
    }

    #[test]
    fn missing_object_is_classified_as_not_found() {
        let stderr = "Error from server (NotFound): widgets.example.com \"w\" not found\n";
        assert_eq!(classify_output("", stderr), ErrorKind::NotFound);
    }

    #[test]
    fn unknown_resource_type_is_classified_as_not_found() {
        let stderr = "error: the server doesn't have a resource type \"widgets\"\n";
        assert_eq!(classify_output("", stderr), ErrorKind::NotFound);
        let raw =
            "Error from server (NotFound): the server could not find the requested resource\n";
        assert_eq!(classify_output("", raw), ErrorKind::NotFound);
    }

    #[test]
    fn rejected_credentials_are_classified_as_unauthorized() {
        let stderr = "error: You must be logged in to the server (Unauthorized)\n";
        assert_eq!(classify_output("", stderr), ErrorKind::Unauthorized);
        let server = "Error from server (Unauthorized): the server has asked for the client to provide credentials\n";
        assert_eq!(classify_output("", server), ErrorKind::Unauthorized);
    }

    #[test]
    fn missing_permission_is_classified_as_forbidden() {
        let stderr = "Error from server (Forbidden): widgets.example.com is forbidden: User \"system:serviceaccount:default:op\" cannot list resource \"widgets\" in API group \"example.com\" in the namespace \"default\"\n";
        assert_eq!(classify_output("", stderr), ErrorKind::Forbidden);
    }

    #[test]
    fn rejected_object_is_classified_as_invalid() {
        let stderr = "The Widget \"w\" is invalid: spec.state: Unsupported value: \"paused\": supported values: \"running\", \"stopped\"\n";
        assert_eq!(classify_output("", stderr), ErrorKind::Invalid);
        let server = "Error from server (Invalid): error when replacing \"/tmp/x\": Widget.example.com \"w\" is invalid: status.phase: Invalid value\n";
        assert_eq!(classify_output("", server), ErrorKind::Invalid);
        let bad = "Error from server (BadRequest): the server rejected our request for an unknown reason\n";
        assert_eq!(classify_output("", bad), ErrorKind::Invalid);
        let client = "error: error validating \"/tmp/x\": error validating data: ValidationError(Widget): unknown field \"x\"; if you choose to ignore these errors, turn validation off with --validate=false\n";
        assert_eq!(classify_output("", client), ErrorKind::Invalid);
    }

    #[test]
    fn deadlines_are_classified_as_timeout() {
        let server = "Error from server (Timeout): the server was unable to return a response in the time allotted, but may still be processing the request (get widgets.example.com)\n";
        assert_eq!(classify_output("", server), ErrorKind::Timeout);
        let ctx = "Unable to connect to the server: context deadline exceeded\n";
        assert_eq!(classify_output("", ctx), ErrorKind::Timeout);
        let io = "Unable to connect to the server: dial tcp 10.0.0.1:443: i/o timeout\n";
        assert_eq!(classify_output("", io), ErrorKind::Timeout);
        let client = "Unable to connect to the server: net/http: request canceled (Client.Timeout exceeded while awaiting headers)\n";
        assert_eq!(classify_output("", client), ErrorKind::Timeout);
        let tls = "Unable to connect to the server: net/http: TLS handshake timeout\n";
        assert_eq!(classify_output("", tls), ErrorKind::Timeout);
    }

    #[test]
    fn unreachable_server_is_classified_as_unavailable() {
        // Real output of kubectl 1.32 against https://127.0.0.1:1: discovery
        // lines carry `?timeout=5s`, which must not read as a timeout.
        let stderr = concat!(
            "E1129 11:27:05.726645    7721 memcache.go:265] \"Unhandled Error\" err=\"couldn't get current server API group list: Get \\\"https://127.0.0.1:1/api?timeout=5s\\\": dial tcp 127.0.0.1:1: connect: connection refused\"\n",
            "The connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?\n",
        );
        assert_eq!(classify_output("", stderr), ErrorKind::Unavailable);
        let dns = "Unable to connect to the server: dial tcp: lookup kube.invalid on 127.0.0.53:53: no such host\n";
        assert_eq!(classify_output("", dns), ErrorKind::Unavailable);
        let down = "Error from server (ServiceUnavailable): the server is currently unable to handle the request\n";
        assert_eq!(classify_output("", down), ErrorKind::Unavailable);
    }

    #[test]
    fn server_reason_wins_over_wording() {
        // "is invalid" appears in the message, but the server said Conflict.
        let stderr = "Error from server (Conflict): the field is invalid because the object has been modified\n";
        assert_eq!(classify_output("", stderr), ErrorKind::Conflict);
    }

    #[test]
    fn already_exists_is_not_a_stale_write() {
        let stderr =
            "Error from server (AlreadyExists): widgets.example.com \"w\" already exists\n";
        assert_eq!(classify_output("", stderr), ErrorKind::Other);
    }

    #[test]
    fn unrecognised_text_is_other() {
        assert_eq!(classify_output("", ""), ErrorKind::Other);
        assert_eq!(
            classify_output("", "error: unknown flag: --bogus\n"),
            ErrorKind::Other
        );
    }

    #[test]
    fn stdout_is_consulted_only_when_stderr_is_unrecognised() {
        let stdout = "Error from server (NotFound): widgets.example.com \"w\" not found\n";
        assert_eq!(classify_output(stdout, ""), ErrorKind::NotFound);
        let stderr = "Error from server (Forbidden): no\n";
        assert_eq!(classify_output(stdout, stderr), ErrorKind::Forbidden);
    }
}
