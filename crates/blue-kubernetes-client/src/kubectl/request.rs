//! One kubectl request: its parameters, its response (and the error for one
//! that does not decode), and how an input document replaces `-f -`.

use crate::Error;
use serde_json::Value;

/// Per-request parameters of [`KubectlClient::request`](crate::KubectlClient::request).
///
/// ```
/// use blue_kubernetes_client::RequestParams;
/// let params = RequestParams::default()
///     .with_input(r#"{"kind":"ConfigMap"}"#)
///     .with_timeout_ms(5_000);
/// assert!(!params.raw);
/// assert!(RequestParams::raw().raw);
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestParams {
    /// A document for the `-f -` (or `--filename -`, `--filename=-`, `-f=-`)
    /// in the arguments. It is written to a private temporary file whose path
    /// replaces that `-`; kubectl's stdin stays closed.
    pub input: Option<String>,
    /// Return stdout as text instead of parsing it as JSON.
    pub raw: bool,
    /// Overrides the client's process deadline for this request.
    pub timeout_ms: Option<u64>,
}

impl RequestParams {
    /// Parameters for a request whose output is returned as text.
    pub fn raw() -> Self {
        Self {
            raw: true,
            ..Self::default()
        }
    }

    /// Sets the document for `-f -`.
    pub fn with_input(mut self, input: impl Into<String>) -> Self {
        self.input = Some(input.into());
        self
    }

    /// Sets this request's process deadline.
    pub fn with_timeout_ms(mut self, timeout_ms: u64) -> Self {
        self.timeout_ms = Some(timeout_ms);
        self
    }
}

// The input may be a Secret manifest: Debug shows its size only.
impl std::fmt::Debug for RequestParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestParams")
            .field("input_bytes", &self.input.as_ref().map(String::len))
            .field("raw", &self.raw)
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

/// What a successful request printed.
///
/// The variant follows [`RequestParams::raw`]: `Text` when raw, otherwise
/// `Json`, with `None` for empty output (e.g. `get --ignore-not-found` of a
/// missing object).
///
/// ```
/// use blue_kubernetes_client::Response;
/// let r = Response::Json(Some(serde_json::json!({"items": []})));
/// assert!(r.as_json().is_some());
/// assert_eq!(Response::Text("ok\n".into()).as_text(), Some("ok\n"));
/// assert_eq!(Response::Json(None).into_json(), None);
/// ```
#[derive(Clone, PartialEq)]
pub enum Response {
    /// Parsed stdout; `None` when kubectl printed nothing but whitespace.
    Json(Option<Value>),
    /// stdout verbatim.
    Text(String),
}

impl Response {
    /// The parsed JSON, if this is a non-empty `Json` response.
    pub fn as_json(&self) -> Option<&Value> {
        match self {
            Response::Json(value) => value.as_ref(),
            Response::Text(_) => None,
        }
    }

    /// The parsed JSON, if this is a non-empty `Json` response.
    pub fn into_json(self) -> Option<Value> {
        match self {
            Response::Json(value) => value,
            Response::Text(_) => None,
        }
    }

    /// The text, if this is a `Text` response.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Response::Text(text) => Some(text),
            Response::Json(_) => None,
        }
    }

    /// The text, if this is a `Text` response.
    pub fn into_text(self) -> Option<String> {
        match self {
            Response::Text(text) => Some(text),
            Response::Json(_) => None,
        }
    }
}

// Responses can hold Secrets the caller read: Debug shows shape only.
impl std::fmt::Debug for Response {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Response::Json(None) => f.write_str("Json(None)"),
            Response::Json(Some(_)) => f.write_str("Json(Some(<redacted>))"),
            Response::Text(text) => write!(f, "Text(<{} bytes>)", text.len()),
        }
    }
}

/// The error for a response that is not what `operation` answers (no JSON,
/// or JSON of another shape); the response itself is not kept.
pub(crate) fn decode(operation: &str) -> Error {
    Error::Decode {
        operation: operation.to_owned(),
    }
}

/// Where standard input is named in `args`.
#[derive(Debug, PartialEq, Eq)]
enum StdinMarker {
    /// `-f -` / `--filename -`: the `-` is its own argument at this index.
    Separate(usize),
    /// `-f=-` / `--filename=-`: the whole argument at this index.
    Joined(usize, &'static str),
}

/// Finds the arguments that make kubectl read standard input. Scanning stops
/// at `--`: what follows belongs to another program (e.g. `exec`).
fn stdin_markers(args: &[String]) -> Vec<StdinMarker> {
    let mut markers = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        match arg.as_str() {
            "--" => break,
            "-f" | "--filename" if args.get(i + 1).map(String::as_str) == Some("-") => {
                markers.push(StdinMarker::Separate(i + 1));
            }
            "-f=-" => markers.push(StdinMarker::Joined(i, "-f=")),
            "--filename=-" => markers.push(StdinMarker::Joined(i, "--filename=")),
            _ => {}
        }
    }
    markers
}

/// Makes `args` read `input_path` instead of standard input.
///
/// With an input, exactly one `-f -` is required: without one kubectl would
/// silently ignore the document, with several it is ambiguous. Without an
/// input, a `-f -` is refused too, because kubectl's stdin is closed and it
/// would act on an empty document.
pub(crate) fn substitute_input(args: &mut [String], input_path: Option<&str>) -> Result<(), Error> {
    let markers = stdin_markers(args);
    let path = match (input_path, markers.len()) {
        (None, 0) => return Ok(()),
        (Some(path), 1) => path,
        (None, _) => {
            return Err(Error::InvalidOption {
                field: "input",
                reason: "the arguments read standard input (`-f -`) but no input was given",
            })
        }
        (Some(_), 0) => {
            return Err(Error::InvalidOption {
                field: "input",
                reason: "an input was given but the arguments have no `-f -` to receive it",
            })
        }
        (Some(_), _) => {
            return Err(Error::InvalidOption {
                field: "input",
                reason: "the arguments name standard input more than once",
            })
        }
    };
    match markers[0] {
        StdinMarker::Separate(i) => args[i] = path.to_owned(),
        StdinMarker::Joined(i, flag) => args[i] = format!("{flag}{path}"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_owned()).collect()
    }

    fn substituted(args: &[&str]) -> Result<Vec<String>, Error> {
        let mut args = strings(args);
        substitute_input(&mut args, Some("/tmp/in.json")).map(|()| args)
    }

    #[test]
    fn every_spelling_of_stdin_is_substituted() {
        assert_eq!(
            substituted(&["apply", "-f", "-"]).unwrap(),
            ["apply", "-f", "/tmp/in.json"]
        );
        assert_eq!(
            substituted(&["apply", "--filename", "-"]).unwrap(),
            ["apply", "--filename", "/tmp/in.json"]
        );
        assert_eq!(
            substituted(&["apply", "--filename=-", "-n", "x"]).unwrap(),
            ["apply", "--filename=/tmp/in.json", "-n", "x"]
        );
        assert_eq!(
            substituted(&["apply", "-f=-"]).unwrap(),
            ["apply", "-f=/tmp/in.json"]
        );
    }

    #[test]
    fn input_without_stdin_argument_is_refused() {
        for args in [
            &["apply", "-f", "manifest.yaml"][..],
            &["get", "pods", "-"][..],
            &["exec", "pod", "--", "cat", "-f", "-"][..],
        ] {
            let err = substituted(args).unwrap_err();
            assert!(matches!(err, Error::InvalidOption { field: "input", .. }));
        }
    }

    #[test]
    fn stdin_argument_without_input_is_refused() {
        let mut args = strings(&["apply", "-f", "-"]);
        assert!(substitute_input(&mut args, None).is_err());
        let mut plain = strings(&["get", "pods"]);
        assert!(substitute_input(&mut plain, None).is_ok());
    }

    #[test]
    fn stdin_named_twice_is_refused() {
        assert!(substituted(&["apply", "-f", "-", "--filename=-"]).is_err());
    }

    #[test]
    fn debug_never_shows_input_or_output() {
        let options = RequestParams::default().with_input("password: hunter2");
        assert!(!format!("{options:?}").contains("hunter2"));
        let json = Response::Json(Some(serde_json::json!({"password": "hunter2"})));
        assert!(!format!("{json:?}").contains("hunter2"));
        assert!(!format!("{:?}", Response::Text("hunter2".into())).contains("hunter2"));
    }
}
