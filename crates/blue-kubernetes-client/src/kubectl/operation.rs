//! The operation name errors may carry, and nothing else from the arguments.

/// Global flags whose value is a separate argument, so that value is not
/// mistaken for the operation.
const FLAGS_WITH_VALUE: &[&str] = &[
    "--kubeconfig",
    "--context",
    "--cluster",
    "--user",
    "--namespace",
    "-n",
    "--server",
    "-s",
    "--as",
    "--as-group",
    "--cache-dir",
    "--request-timeout",
    "--token",
];

/// The kubectl operation (`get`, `patch`, ...) of `args`: the first argument
/// that is neither a flag nor a flag's value.
///
/// Errors print this name, so anything that does not look like a kubectl
/// verb (a path, a JSON body, a token passed in the wrong place) is replaced
/// by `unknown` rather than risk echoing a secret.
///
/// Public only with the `testing` feature, for runners in benches that
/// count invocations by operation.
pub fn operation_of<S: AsRef<str>>(args: &[S]) -> String {
    let mut args = args.iter().map(AsRef::as_ref);
    while let Some(arg) = args.next() {
        if FLAGS_WITH_VALUE.contains(&arg) {
            args.next();
        } else if !arg.starts_with('-') {
            return sanitize(arg);
        }
    }
    UNKNOWN.to_owned()
}

const UNKNOWN: &str = "unknown";

fn sanitize(arg: &str) -> String {
    let verb_like = arg.len() <= 32
        && arg.starts_with(|c: char| c.is_ascii_lowercase())
        && arg
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if verb_like {
        arg.to_owned()
    } else {
        UNKNOWN.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_is_the_first_verb() {
        assert_eq!(operation_of(&["replace", "--raw", "/apis/x"]), "replace");
        assert_eq!(operation_of(&["api-resources"]), "api-resources");
        assert_eq!(operation_of(&["get", "pods"]), "get");
    }

    #[test]
    fn flags_and_their_values_are_skipped() {
        let argv = [
            "--kubeconfig",
            "/k",
            "--context",
            "c",
            "--request-timeout=30s",
            "get",
        ];
        assert_eq!(operation_of(&argv), "get");
        assert_eq!(operation_of(&["--context", "dev", "patch", "x"]), "patch");
    }

    #[test]
    fn arguments_that_are_not_verbs_are_never_echoed() {
        for arg in [
            "/tmp/secret-path",
            "Bearer abc",
            "x".repeat(40).as_str(),
            "",
            "{\"token\":\"s3cret\"}",
        ] {
            assert_eq!(operation_of(&[arg]), "unknown");
        }
        assert_eq!(operation_of::<&str>(&[]), "unknown");
    }
}
