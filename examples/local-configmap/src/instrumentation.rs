//! Test aids around the package's `converge` and `delete`: the
//! `--audit-file` lines and the `--callback-delay-ms` wait, for the
//! scale-out e2e that proves no identity runs in two replicas at once.
//! Off by default; the package behaves the same without them.

use crate::audit::{AuditLog, Phase};
use crate::desired;
use crate::package::Cx;
use blue_kubernetes::CallbackResult;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// What to add around the callbacks (default: nothing).
#[derive(Clone, Debug, Default)]
pub struct Instrumentation {
    /// Where each `converge` and `delete` records its start and end.
    pub audit: Option<Arc<AuditLog>>,
    /// How long `converge` waits (asleep, holding no CPU) after its start
    /// line and before its first request, so overlapping runs would show.
    pub converge_delay: Option<Duration>,
}

impl Instrumentation {
    /// Runs `body` (the callback `callback`) between a start and an end
    /// line. A line that cannot be written fails the callback: an
    /// unrecorded run would void the audit's proof (a failed start line
    /// means nothing ran; after a failed end line the retry repeats an
    /// idempotent callback).
    pub async fn around<T>(
        &self,
        callback: &'static str,
        cx: &Cx,
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
        let identity = blue_identity::state_identity_hash(&desired::identity(cx));
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
    use crate::audit::parse_audit;
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
        let aids = Instrumentation {
            audit: Some(Arc::new(AuditLog::open(&path, "pod-a").unwrap())),
            converge_delay: None,
        };
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
        let expected = blue_identity::state_identity_hash(&desired::identity(&cx()));
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
