//! A `kube::Client` that could not carry a request, as an [`Error`]: a
//! fixed phrase and a classification, never kube's message (which may quote
//! a URL, an exec plugin's output or part of a response).

use crate::{Error, ErrorKind};
use std::error::Error as _;

/// Classifies `error` by what failed; the error itself is dropped.
pub(super) fn classify(error: &kube::Error) -> Error {
    let (problem, kind) = match error {
        kube::Error::Auth(_) => ("could not authenticate", ErrorKind::Unauthorized),
        _ if timed_out(error) => ("timed out", ErrorKind::Timeout),
        kube::Error::HyperError(_) | kube::Error::Service(_) => {
            ("connection failed", ErrorKind::Unavailable)
        }
        _ => ("request failed", ErrorKind::Other),
    };
    Error::Kube { problem, kind }
}

/// True when an I/O timeout (a connect or read timeout of the client's
/// configuration) is somewhere in the chain of causes.
fn timed_out(error: &kube::Error) -> bool {
    let mut cause = error.source();
    while let Some(e) = cause {
        if e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
        {
            return true;
        }
        cause = e.source();
    }
    false
}

/// A watch body that broke mid-stream.
pub(super) fn broken() -> Error {
    Error::Kube {
        problem: "watch connection broke",
        kind: ErrorKind::Unavailable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(error: impl std::error::Error + Send + Sync + 'static) -> kube::Error {
        kube::Error::Service(Box::new(error))
    }

    #[test]
    fn a_failed_connection_is_unavailable_and_names_nothing_of_it() {
        let secret = "https://10.0.0.1:6443 said token=hunter2";
        let error = classify(&service(std::io::Error::other(secret)));
        assert_eq!(error.kind(), ErrorKind::Unavailable);
        for shown in [error.to_string(), format!("{error:?}")] {
            assert!(
                !shown.contains("hunter2") && !shown.contains("10.0.0.1"),
                "{shown}"
            );
        }
    }

    #[test]
    fn a_timeout_anywhere_in_the_causes_is_a_timeout() {
        let io = std::io::Error::new(std::io::ErrorKind::TimedOut, "read timed out");
        assert_eq!(classify(&service(io)).kind(), ErrorKind::Timeout);
    }

    #[test]
    fn failing_credentials_are_unauthorized() {
        let auth = kube::client::AuthError::AuthExecRun {
            cmd: "plugin --token hunter2".into(),
            out: Box::new(std::process::Output {
                status: std::process::ExitStatus::default(),
                stdout: b"hunter2".to_vec(),
                stderr: Vec::new(),
            }),
        };
        let error = classify(&kube::Error::Auth(auth));
        assert_eq!(error.kind(), ErrorKind::Unauthorized);
        assert!(!format!("{error} {error:?}").contains("hunter2"));
    }
}
