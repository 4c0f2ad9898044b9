//! Test hooks for real processes: pause an operator, or SIGKILL it, at a
//! named boundary of a pass, so an end-to-end test can crash it exactly
//! where it means to instead of aiming with sleeps. **For tests only:**
//! off unless [`Config::test_hooks`](crate::Config::test_hooks) is set,
//! and then a pass that reaches no named boundary behaves as without.
//!
//! A hook is `ACTION:BOUNDARY`, several separated by commas:
//!
//! | boundary | where |
//! |---|---|
//! | `before-step:NAME` | step `NAME`'s `Running` record landed; its closure is not called yet |
//! | `after-step:NAME` | step `NAME`'s closure returned (success or not); its outcome is not recorded yet |
//! | `after-converge` | `converge` returned (success or not); nothing of its outcome is written yet |
//! | `before-finalizer-release` | the resource is about to lose the controller's finalizer |
//!
//! | action | what |
//! |---|---|
//! | `pause` | writes a marker file into the hooks' directory and waits until it is removed |
//! | `kill` | writes the marker file (with a directory), then SIGKILLs the process |
//!
//! The marker is named by [`Boundary::marker`] (`after-step:role@dev.db`
//! for resource `dev/db`) and holds the hook and the resource. A test
//! waits for the file, looks at the world (or the process's death), and
//! removes the file to let a paused pass go on. The pass holds its
//! resource's lock while paused: nothing else reconciles that resource
//! in this process meanwhile.
//!
//! An operator binary reads them from [`HOOKS_ENV`] and [`DIR_ENV`]:
//!
//! ```
//! use blue_kubernetes::test_hooks::{Action, Boundary, TestHooks};
//! let hooks = TestHooks::parse("kill:after-step:role, pause:after-converge", Some("/tmp/h".into()))
//!     .unwrap();
//! assert_eq!(hooks.hooks()[0].action, Action::Kill);
//! assert_eq!(hooks.hooks()[0].boundary, Boundary::AfterStep("role".into()));
//! assert_eq!(Boundary::AfterConverge.marker("dev", "db"), "after-converge@dev.db");
//! let err = TestHooks::parse("stop:after-converge", None).unwrap_err();
//! assert_eq!(err.to_string(), "test hook `stop:after-converge`: unknown action `stop` (pause or kill)");
//! // In an operator's main: off unless the variable is set.
//! # fn demo(mut config: blue_kubernetes::Config) -> Result<(), blue_kubernetes::test_hooks::TestHooksError> {
//! config.test_hooks = TestHooks::from_env()?;
//! # Ok(()) }
//! ```

use crate::domain::resource;
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The environment variable an operator binary reads its hooks from
/// (test-only): `pause:after-step:role,kill:before-finalizer-release`.
pub const HOOKS_ENV: &str = "BLUE_TEST_HOOKS";

/// The environment variable naming the directory for marker files
/// (test-only); required when a hook pauses.
pub const DIR_ENV: &str = "BLUE_TEST_HOOKS_DIR";

/// How often a paused pass looks whether its marker is gone.
const POLL: Duration = Duration::from_millis(20);

/// The hooks of one process, parsed from one string.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TestHooks {
    hooks: Vec<Hook>,
    dir: Option<PathBuf>,
}

/// One hook: what to do at which boundary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hook {
    /// What to do there.
    pub action: Action,
    /// Where.
    pub boundary: Boundary,
}

/// What a hook does at its boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Write the marker and wait until it is removed.
    Pause,
    /// Write the marker (with a directory), then SIGKILL this process.
    Kill,
}

/// A point in a pass a hook can name (the table in the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Boundary {
    /// `before-step:NAME`.
    BeforeStep(String),
    /// `after-step:NAME`.
    AfterStep(String),
    /// `after-converge`.
    AfterConverge,
    /// `before-finalizer-release`.
    BeforeFinalizerRelease,
}

/// A hook string that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum TestHooksError {
    /// One `ACTION:BOUNDARY` part is wrong.
    #[error("test hook `{part}`: {reason}")]
    Part {
        /// The part, as given.
        part: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A hook pauses, and no directory for its marker was given.
    #[error("test hook `{0}` pauses: it needs a directory for its marker file ({DIR_ENV})")]
    NoDirectory(String),
}

impl TestHooks {
    /// Parses `spec` (comma-separated `ACTION:BOUNDARY`); `dir` is where
    /// the marker files go. An error names the part that is wrong.
    pub fn parse(spec: &str, dir: Option<PathBuf>) -> Result<Self, TestHooksError> {
        let hooks = spec
            .split(',')
            .map(str::trim)
            .map(|part| Hook::parse(part).map_err(|reason| part_error(part, reason)))
            .collect::<Result<Vec<_>, _>>()?;
        if dir.is_none() {
            if let Some(pause) = hooks.iter().find(|h| h.action == Action::Pause) {
                return Err(TestHooksError::NoDirectory(pause.to_string()));
            }
        }
        Ok(Self { hooks, dir })
    }

    /// The hooks [`HOOKS_ENV`] names, with [`DIR_ENV`]'s directory; none
    /// when [`HOOKS_ENV`] is unset or empty.
    pub fn from_env() -> Result<Option<Self>, TestHooksError> {
        let spec = std::env::var(HOOKS_ENV).unwrap_or_default();
        if spec.trim().is_empty() {
            return Ok(None);
        }
        let dir = std::env::var_os(DIR_ENV).filter(|d| !d.is_empty());
        Self::parse(&spec, dir.map(PathBuf::from)).map(Some)
    }

    /// The hooks, in the order given.
    pub fn hooks(&self) -> &[Hook] {
        &self.hooks
    }

    /// The directory marker files go to.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Runs the first hook naming `point`, for `resource`.
    async fn fire(&self, point: Point<'_>, resource: &Value) {
        let Some(hook) = self.hooks.iter().find(|h| h.boundary.is(&point)) else {
            return;
        };
        let (namespace, name) = (resource::namespace(resource), resource::name(resource));
        let marker = self
            .dir
            .as_ref()
            .map(|d| d.join(hook.boundary.marker(namespace, name)));
        tracing::warn!(hook = %hook, namespace, name, "test hook reached");
        let written = marker
            .as_ref()
            .is_some_and(|m| std::fs::write(m, format!("{hook} {namespace}/{name}\n")).is_ok());
        match (hook.action, marker) {
            (Action::Kill, _) => kill_self(),
            (Action::Pause, Some(marker)) if written => {
                while marker.exists() {
                    tokio::time::sleep(POLL).await;
                }
            }
            (Action::Pause, _) => tracing::warn!("test hook: cannot write the marker; not pausing"),
        }
    }
}

fn part_error(part: &str, reason: String) -> TestHooksError {
    TestHooksError::Part {
        part: part.to_string(),
        reason,
    }
}

/// Nothing may run after it: the process ends as if the machine died.
fn kill_self() -> ! {
    use nix::sys::signal::{kill, Signal};
    let _ = kill(nix::unistd::Pid::this(), Signal::SIGKILL);
    // SIGKILL cannot be caught; should it fail to be sent, end anyway.
    std::process::abort();
}

impl Hook {
    fn parse(part: &str) -> Result<Self, String> {
        let (action, boundary) = part
            .split_once(':')
            .ok_or("want ACTION:BOUNDARY, e.g. pause:after-step:NAME")?;
        let action = match action {
            "pause" => Action::Pause,
            "kill" => Action::Kill,
            other => return Err(format!("unknown action `{other}` (pause or kill)")),
        };
        let step =
            |name: &str, boundary: fn(String) -> Boundary| match crate::steps::valid_name(name) {
                true => Ok(boundary(name.to_string())),
                false => Err(format!("step name `{name}` is not [a-z0-9-]{{1,63}}")),
            };
        let boundary = match boundary.split_once(':') {
            Some(("before-step", name)) => step(name, Boundary::BeforeStep)?,
            Some(("after-step", name)) => step(name, Boundary::AfterStep)?,
            None if boundary == "after-converge" => Boundary::AfterConverge,
            None if boundary == "before-finalizer-release" => Boundary::BeforeFinalizerRelease,
            _ => return Err(format!(
                "unknown boundary `{boundary}` (before-step:NAME, after-step:NAME, after-converge, before-finalizer-release)"
            )),
        };
        Ok(Self { action, boundary })
    }
}

impl fmt::Display for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let action = match self.action {
            Action::Pause => "pause",
            Action::Kill => "kill",
        };
        write!(f, "{action}:{}", self.boundary)
    }
}

impl Boundary {
    /// The marker file's name for `namespace/name` (`name` alone for a
    /// cluster-scoped resource): `BOUNDARY@NAMESPACE.NAME`.
    pub fn marker(&self, namespace: &str, name: &str) -> String {
        match namespace {
            "" => format!("{self}@{name}"),
            _ => format!("{self}@{namespace}.{name}"),
        }
    }

    fn is(&self, point: &Point<'_>) -> bool {
        match (self, point) {
            (Boundary::BeforeStep(a), Point::BeforeStep(b)) => a == b,
            (Boundary::AfterStep(a), Point::AfterStep(b)) => a == b,
            (Boundary::AfterConverge, Point::AfterConverge) => true,
            (Boundary::BeforeFinalizerRelease, Point::BeforeFinalizerRelease) => true,
            _ => false,
        }
    }
}

impl fmt::Display for Boundary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Boundary::BeforeStep(name) => write!(f, "before-step:{name}"),
            Boundary::AfterStep(name) => write!(f, "after-step:{name}"),
            Boundary::AfterConverge => f.write_str("after-converge"),
            Boundary::BeforeFinalizerRelease => f.write_str("before-finalizer-release"),
        }
    }
}

/// A boundary a pass reached, borrowed: naming it allocates nothing.
pub(crate) enum Point<'a> {
    BeforeStep(&'a str),
    AfterStep(&'a str),
    AfterConverge,
    BeforeFinalizerRelease,
}

/// A pass reached `point` on `resource`: runs the hook naming it, if any.
pub(crate) async fn reached(hooks: Option<&TestHooks>, point: Point<'_>, resource: &Value) {
    if let Some(hooks) = hooks {
        hooks.fire(point, resource).await;
    }
}
