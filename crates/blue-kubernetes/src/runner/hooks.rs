//! `--test-hooks` (or `BLUE_TEST_HOOKS`): the one place for everything
//! that exists only for the project's own end-to-end, chaos and benchmark
//! tests. Hidden from `--help`; unset, nothing here does anything.

use crate::test_hooks::{TestHooks, TestHooksError};
use blue_kubernetes_client::KubectlConfig;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The hooks the runner itself understands beside `pause:` and `kill:`:
/// the marker directory, the in-cluster settings a test running the
/// operator "in-cluster" from outside a cluster overrides, and the
/// storage migration's Lease duration (a chaos test kills the migration
/// often, and waits out each dead holder's Lease).
const RUNNER_HOOKS: [&str; 5] = [
    "dir",
    "service-account-dir",
    "service-host",
    "service-port",
    "migration-lease-ms",
];

/// What `--test-hooks` asked for: a comma-separated list of
///
/// - `pause:BOUNDARY` and `kill:BOUNDARY`: pause or SIGKILL the process
///   at a boundary of a pass (see [`crate::test_hooks`]), with
///   `dir=PATH` naming the directory of their marker files;
/// - `service-account-dir=PATH`, `service-host=HOST`, `service-port=PORT`:
///   what `--in-cluster` reads instead of the pod's;
/// - `migration-lease-ms=N`: the storage migration's Lease duration (its
///   renew deadline two thirds of it, its retry period a sixth);
/// - the operator's own hooks, as it declared them with
///   [`Runner::test_hooks`](super::Runner::test_hooks): `NAME` or
///   `NAME=VALUE` (an audit file, a callback delay, a failure to inject).
///
/// Empty when the option is not given: then every hook is off.
///
/// ```
/// use blue_kubernetes::runner::TestHookSet;
/// let hooks = TestHookSet::parse("kill:after-step:role,audit-steps,delay=2s", &["audit-steps", "delay"])
///     .unwrap();
/// assert!(hooks.has("audit-steps"));
/// assert_eq!(hooks.value("delay"), Some("2s"));
/// assert_eq!(hooks.pass_hooks().unwrap().hooks().len(), 1);
/// let err = TestHookSet::parse("audit-stpes", &["audit-steps"]).unwrap_err();
/// assert!(err.to_string().contains("`audit-stpes`"), "{err}");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TestHookSet {
    pass: Option<TestHooks>,
    /// `NAME=VALUE`, or `NAME` alone with an empty value.
    values: BTreeMap<String, String>,
}

/// A `--test-hooks` value that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum TestHookError {
    /// A `pause:` or `kill:` part is wrong.
    #[error(transparent)]
    Pass(TestHooksError),
    /// A part names no hook this operator knows.
    #[error("test hook `{part}`: unknown; known are pause:BOUNDARY, kill:BOUNDARY and {known}")]
    Unknown {
        /// The part, as given.
        part: String,
        /// The names it could have been.
        known: String,
    },
    /// A hook is named twice.
    #[error("test hook `{0}` is given twice")]
    Repeated(String),
    /// A hook pauses, and no `dir=PATH` was given.
    #[error("test hook `{0}` pauses: it needs dir=PATH for its marker file")]
    NoDirectory(String),
}

impl TestHookSet {
    /// Parses `spec`, accepting the runner's hooks and `accepted` (the
    /// operator's own). An error names the part that is wrong.
    pub fn parse(spec: &str, accepted: &[&str]) -> Result<Self, TestHookError> {
        let mut pass = Vec::new();
        let mut values = BTreeMap::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if part.starts_with("pause:") || part.starts_with("kill:") {
                pass.push(part);
                continue;
            }
            let (name, value) = part.split_once('=').unwrap_or((part, ""));
            if !RUNNER_HOOKS.contains(&name) && !accepted.contains(&name) {
                let known = RUNNER_HOOKS.iter().chain(accepted).copied();
                return Err(TestHookError::Unknown {
                    part: part.to_string(),
                    known: known.collect::<Vec<_>>().join(", "),
                });
            }
            if values.insert(name.to_string(), value.to_string()).is_some() {
                return Err(TestHookError::Repeated(name.to_string()));
            }
        }
        let dir = values.get("dir").map(PathBuf::from);
        let pass = match pass.is_empty() {
            true => None,
            false => Some(TestHooks::parse(&pass.join(","), dir).map_err(|e| match e {
                TestHooksError::NoDirectory(hook) => TestHookError::NoDirectory(hook),
                other => TestHookError::Pass(other),
            })?),
        };
        Ok(Self { pass, values })
    }

    /// No hook is on.
    pub fn is_empty(&self) -> bool {
        self.pass.is_none() && self.values.is_empty()
    }

    /// Whether hook `name` was given (with a value or without).
    pub fn has(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }

    /// The value of hook `name` (empty when given without `=VALUE`).
    pub fn value(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// The `pause:` and `kill:` hooks, for
    /// [`Config::test_hooks`](crate::Config::test_hooks) (the runner sets it).
    pub fn pass_hooks(&self) -> Option<&TestHooks> {
        self.pass.as_ref()
    }

    /// The in-cluster overrides, onto `options`.
    pub(crate) fn apply(&self, options: &mut KubectlConfig) {
        options.service_account_dir = self.value("service-account-dir").map(PathBuf::from);
        options.service_host = self.value("service-host").map(str::to_string);
        options.service_port = self.value("service-port").map(str::to_string);
    }
}
