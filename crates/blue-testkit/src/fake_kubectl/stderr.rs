//! kubectl's error texts, as a real kubectl prints them.

use blue_kubernetes_client::{ErrorKind, ResourceDescriptor};

/// What an error is about: the type, the namespace, the object's name (none
/// for a list) and the verb.
pub(crate) struct Subject<'a> {
    pub(crate) descriptor: &'a ResourceDescriptor,
    pub(crate) namespace: &'a str,
    pub(crate) name: Option<&'a str>,
    pub(crate) verb: &'a str,
}

/// The stderr of a request that failed with `kind`.
pub(crate) fn text(kind: ErrorKind, s: &Subject<'_>) -> String {
    let qualified = s.descriptor.qualified_plural();
    let name = s.name.unwrap_or_default();
    match (kind, s.name) {
        (ErrorKind::Conflict, _) => format!(
            "Error from server (Conflict): Operation cannot be fulfilled on {qualified} \"{name}\": \
             the object has been modified; please apply your changes to the latest version and try again"
        ),
        (ErrorKind::NotFound, Some(name)) => {
            format!("Error from server (NotFound): {qualified} \"{name}\" not found")
        }
        (ErrorKind::NotFound, None) => no_such_path(),
        (ErrorKind::Unauthorized, _) => {
            "error: You must be logged in to the server (Unauthorized)".into()
        }
        (ErrorKind::Forbidden, _) => format!(
            "Error from server (Forbidden): {qualified} \"{name}\" is forbidden: User \
             \"system:serviceaccount:default:operator\" cannot {verb} resource \"{plural}\" \
             in API group \"{group}\" in the namespace \"{namespace}\"",
            verb = s.verb,
            plural = s.descriptor.plural,
            group = s.descriptor.group,
            namespace = s.namespace,
        ),
        (ErrorKind::Timeout, _) => "Error from server (Timeout): the server was unable to return a \
             response in the time allotted, but may still be processing the request"
            .into(),
        (ErrorKind::Unavailable, _) => unavailable(),
        (ErrorKind::Invalid, _) => format!(
            "The {kind} \"{name}\" is invalid: metadata: Invalid value: rejected by the fake cluster",
            kind = s.descriptor.kind,
        ),
        (ErrorKind::Gone, _) => "Error from server (Expired): The provided continue parameter is \
             too old to display a consistent list result. You can start a new list without the \
             continue parameter."
            .into(),
        // Other, and any kind the client adds later.
        _ => "Error from server (InternalError): an error on the server (\"\") \
             has prevented the request from succeeding"
            .into(),
    }
}

/// What kubectl prints when nothing listens at the server address.
pub(crate) fn unavailable() -> String {
    "E0101 00:00:00.000000    4242 memcache.go:265] couldn't get current server API group list: \
     Get \"https://127.0.0.1:6443/api?timeout=30s\": dial tcp 127.0.0.1:6443: connect: connection refused\n\
     The connection to the server 127.0.0.1:6443 was refused - did you specify the right host or port?"
        .into()
}

/// A type the fake was not told about.
pub(crate) fn unknown_type(resource: &str) -> String {
    format!("error: the server doesn't have a resource type \"{resource}\"")
}

/// A verb kubectl does not have.
pub(crate) fn unknown_command(verb: &str) -> String {
    format!("error: unknown command \"{verb}\" for \"kubectl\"")
}

/// A raw path naming no known resource.
pub(crate) fn no_such_path() -> String {
    "Error from server (NotFound): the server could not find the requested resource".into()
}
