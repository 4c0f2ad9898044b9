//! The audit as a hook on the controller's client: every call goes to the
//! [`FakeCluster`](blue_testkit::FakeCluster) between the audit's checks
//! (`audit.rs`). A pass's calls yield first (so concurrent reconciles on
//! one current-thread runtime interleave at every cluster call) and are
//! counted, and a failed one marks where the pass must stop; the cache's
//! pages and watches are only counted, Events only checked, and discovery,
//! access checks and Leases pass through.

use crate::audit::Audit;
use blue_kubernetes_client::{Answer, Call, Error, Hook};
use blue_testkit::Operation;
use std::time::Duration;

#[async_trait::async_trait]
impl Hook for Audit {
    async fn before(&self, call: &Call<'_>) -> Result<(), Error> {
        match *call {
            Call::List { .. } => self.begin(Operation::List).await,
            Call::Get { .. } => self.begin(Operation::Get).await,
            // Counted, not audited as a pass's calls: a failed page or
            // watch is no reconcile's failure.
            Call::ListPage { .. } => self.count(Operation::ListPage).await,
            Call::Watch { .. } => self.count(Operation::Watch).await,
            Call::UpdateStatus {
                resource, status, ..
            } => {
                self.begin(Operation::UpdateStatus).await;
                self.audit_status_write(resource, status);
            }
            Call::UpdateFinalizers {
                descriptor,
                resource,
                finalizers,
            } => {
                self.begin(Operation::UpdateFinalizers).await;
                self.audit_finalizers_write(descriptor, resource, finalizers);
            }
            Call::CreateEvent { event, .. } | Call::UpdateEvent { event, .. } => {
                self.audit_event(event)
            }
            _ => {}
        }
        Ok(())
    }

    fn after(&self, call: &Call<'_>, result: Result<Answer<'_>, &Error>, _: Duration) {
        let failure = result.as_ref().err().copied();
        match *call {
            Call::List { .. } | Call::Get { .. } => self.end(failure),
            Call::UpdateStatus {
                resource, status, ..
            } => {
                self.end(failure);
                let written = match result {
                    Ok(Answer::Written(written)) => Some(written),
                    _ => None,
                };
                self.audit_status_written(resource, status, written);
            }
            Call::UpdateFinalizers { resource, .. } => {
                self.end(failure);
                self.audit_finalizers_written(resource, failure.is_none());
            }
            _ => {}
        }
    }
}
