//! Everything that exists only for the project's own end-to-end, chaos
//! and benchmark tests, behind the runner's one `--test-hooks` option
//! (`BLUE_TEST_HOOKS`): off unless given, and the package behaves the same
//! without it.
//!
//! - `audit-file=PATH`: each `converge` and `delete` appends a start and
//!   an end line to PATH ([`audit`]); replicas may share the file, and a
//!   test proves from it alone that no identity ran in two at once;
//! - `callback-delay=DURATION` (e.g. `200ms`): `converge` waits this long
//!   after its start line, so overlapping runs would show;
//! - `api-group=GROUP`, `api-version=VERSION`: the package registers for
//!   another group or version, to see what the preflight says about a
//!   resource type the cluster does not serve.

pub mod audit;

use crate::desired;
use crate::package::Cx;
use audit::{AuditLog, Phase};
use blue_kubernetes::replicas::LeaderElectionConfig;
use blue_kubernetes::runner::{BoxError, Connected, NoFlags, TestHookSet};
use blue_kubernetes::CallbackResult;
use blue_kubernetes_client::ResourceDescriptor;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// `audit-file=PATH`.
pub const AUDIT_FILE: &str = "audit-file";
/// `callback-delay=DURATION`.
pub const CALLBACK_DELAY: &str = "callback-delay";
/// `api-group=GROUP`.
pub const API_GROUP: &str = "api-group";
/// `api-version=VERSION`.
pub const API_VERSION: &str = "api-version";
/// This operator's own hooks, for [`Runner::test_hooks`](blue_kubernetes::runner::Runner::test_hooks).
pub const NAMES: [&str; 4] = [AUDIT_FILE, CALLBACK_DELAY, API_GROUP, API_VERSION];

/// The hooks turned on (default: none).
#[derive(Clone, Debug, Default)]
pub struct TestHooks {
    /// Where each `converge` and `delete` records its start and end.
    pub audit: Option<Arc<AuditLog>>,
    /// How long `converge` waits (asleep, holding no CPU) after its start
    /// line and before its first request.
    pub converge_delay: Option<Duration>,
    /// Registers the package under this group instead.
    pub api_group: Option<String>,
    /// Registers the package under this version instead.
    pub api_version: Option<String>,
}

impl TestHooks {
    /// The hooks the runner's `--test-hooks` turned on; the audit names
    /// this replica by its Lease holder identity.
    pub fn from_runner(run: &Connected<'_, NoFlags>) -> Result<Self, BoxError> {
        let lease = run.sharding.map(|s| &s.lease).or(run.leader_election);
        let replica = lease.map_or_else(LeaderElectionConfig::unique_identity, |l| {
            l.identity.clone()
        });
        Self::new(run.test_hooks, replica)
    }

    /// The hooks in `set`; the audit names this replica `replica`. An
    /// unusable audit file or delay fails here, before anything runs.
    pub fn new(set: &TestHookSet, replica: String) -> Result<Self, BoxError> {
        let audit = match set.value(AUDIT_FILE) {
            None => None,
            Some(path) => Some(Arc::new(
                AuditLog::open(path.as_ref(), replica)
                    .map_err(|e| format!("test hook {AUDIT_FILE}: opening {path}: {e}"))?,
            )),
        };
        let converge_delay = match set.value(CALLBACK_DELAY) {
            None => None,
            Some(text) => Some(
                humantime::parse_duration(text)
                    .map_err(|e| format!("test hook {CALLBACK_DELAY}: {e}"))?,
            ),
        };
        Ok(Self {
            audit,
            converge_delay,
            api_group: set.value(API_GROUP).map(str::to_string),
            api_version: set.value(API_VERSION).map(str::to_string),
        })
    }

    /// `descriptor`, moved to the hooks' group and version.
    pub fn descriptor(&self, mut descriptor: ResourceDescriptor) -> ResourceDescriptor {
        if let Some(group) = &self.api_group {
            descriptor.group = group.clone();
        }
        if let Some(version) = &self.api_version {
            descriptor.version = version.clone();
        }
        descriptor
    }

    /// Runs `body` (the callback `callback`) between a start and an end
    /// line. A line that cannot be written fails the callback: an
    /// unrecorded run would void the audit's proof (a failed start line
    /// means nothing ran; after a failed end line the retry repeats an
    /// idempotent callback).
    pub async fn around<T, C: desired::ConfigMapSpec>(
        &self,
        callback: &'static str,
        cx: &Cx<C>,
        body: impl Future<Output = CallbackResult<T>>,
    ) -> CallbackResult<T> {
        let delay = match callback {
            "converge" => self.converge_delay,
            _ => None,
        };
        let Some(audit) = &self.audit else {
            wait(delay).await;
            return body.await;
        };
        let identity = blue_identity::state_identity_hash(&desired::identity(&cx.clone().into()));
        let event = cx.intent().as_str();
        audit.record(&identity, callback, event, Phase::Start)?;
        wait(delay).await;
        let result = body.await;
        audit.record(&identity, callback, event, Phase::End)?;
        result
    }
}

async fn wait(delay: Option<Duration>) {
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use audit::parse_audit;
    use blue_kubernetes::config::Names;
    use blue_kubernetes::Context;
    use serde_json::json;

    fn cx() -> Cx {
        let resource = json!({
            "metadata": {"namespace": "dev", "name": "app", "uid": "u1"},
            "spec": {"config": {}},
        });
        Context::from_resource(&resource, Names::default()).unwrap()
    }

    #[tokio::test]
    async fn a_callback_is_recorded_around_its_body_under_its_identity_hash() {
        let path = std::env::temp_dir().join(format!("lcm-instr-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let spec = format!("{AUDIT_FILE}={}", path.display());
        let set = TestHookSet::parse(&spec, &NAMES).unwrap();
        let aids = TestHooks::new(&set, "pod-a".into()).unwrap();
        let ran = aids
            .around("delete", &cx(), async {
                let lines = std::fs::read_to_string(&path).unwrap();
                Ok(parse_audit(&lines).unwrap().len())
            })
            .await
            .unwrap();
        let failed: CallbackResult<()> = aids
            .around("converge", &cx(), async { Err("no".into()) })
            .await;
        let entries = parse_audit(&std::fs::read_to_string(&path).unwrap()).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(ran, 1, "the start line precedes the body");
        assert!(failed.is_err());
        let expected = blue_identity::state_identity_hash(&desired::identity(&cx().into()));
        let summary: Vec<(&str, &str, &str, Phase)> = entries
            .iter()
            .map(|e| {
                (
                    e.identity.as_str(),
                    e.callback.as_str(),
                    e.event.as_str(),
                    e.phase,
                )
            })
            .collect();
        let id = expected.as_str();
        assert_eq!(
            summary,
            [
                (id, "delete", "create", Phase::Start),
                (id, "delete", "create", Phase::End),
                (id, "converge", "create", Phase::Start),
                (id, "converge", "create", Phase::End),
            ]
        );
    }
}

#[cfg(test)]
mod parsing {
    use super::*;

    #[test]
    fn no_hook_is_on_unless_given_and_each_is_checked() {
        let none = TestHooks::new(&TestHookSet::default(), "r".into()).unwrap();
        assert!(none.audit.is_none() && none.converge_delay.is_none());
        let d = crate::package::descriptor();
        assert_eq!(none.descriptor(d.clone()), d);
        let spec = "callback-delay=250ms,api-group=missing.blue.dev,api-version=v1";
        let on = TestHooks::new(&TestHookSet::parse(spec, &NAMES).unwrap(), "r".into()).unwrap();
        assert_eq!(on.converge_delay, Some(Duration::from_millis(250)));
        let moved = on.descriptor(d);
        assert_eq!(
            (moved.group.as_str(), moved.version.as_str()),
            ("missing.blue.dev", "v1")
        );
        let soon = TestHookSet::parse("callback-delay=soon", &NAMES).unwrap();
        let err = TestHooks::new(&soon, "r".into()).unwrap_err();
        assert!(err.to_string().contains(CALLBACK_DELAY), "{err}");
        let dir = TestHookSet::parse("audit-file=/nonexistent/dir/audit", &NAMES).unwrap();
        assert!(TestHooks::new(&dir, "r".into()).is_err());
    }
}
