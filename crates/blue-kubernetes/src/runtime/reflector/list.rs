//! One full list of a reflector's scope, page by page.

use super::scope::{subject, Scope};
use crate::runtime::dispatch::{listed_all, observed};
use crate::runtime::Shared;
use crate::telemetry::failure_log::Failure;
use blue_kubernetes_client::ErrorKind;
use std::collections::HashSet;

/// Every page of a list, each item observed as its page arrives (so a
/// large list never sits in memory whole), then cached resources the list
/// lacks are forgotten. An expired continue token restarts it once.
/// Returns the list's resourceVersion (`Some(None)`: the transport gave
/// none); failures are logged, counted and backed off, `None` then.
pub(super) async fn list(shared: &Shared, scope: &Scope) -> Option<Option<String>> {
    let config = &shared.controller.config;
    let descriptor = &scope.descriptor;
    let subject = subject(scope, "list");
    let mut restarted = false;
    let mut listed = HashSet::new();
    let mut version = None;
    let mut page = scope.first_page(config.page_limit);
    loop {
        let request = config.client.list_page(descriptor, &scope.namespace, &page);
        match shared.failures.answered(&subject, "get", request).await {
            Ok(got) => {
                // A long list is progress page by page, not a hang.
                shared.health.progressed(scope.index);
                if version.is_none() {
                    version = got.resource_version;
                }
                for item in got.items {
                    // The cache's key, its namespace interned: `listed` allocates nothing per item.
                    listed.insert(observed(shared, scope, item, false));
                }
                match got.continue_token {
                    Some(token) => page.continue_token = Some(token),
                    None => break,
                }
            }
            Err(e) if e.kind() == ErrorKind::Gone && !restarted => {
                // What was observed stays true; the new list covers the rest.
                restarted = true;
                version = None;
                listed.clear();
                page = scope.first_page(config.page_limit);
            }
            Err(e) => {
                shared.counters.listed();
                shared.failures.failed(&subject, Failure::of(&e));
                let now = shared.controller.now();
                let (base, max) = (config.retry_base_ms, config.retry_max_ms);
                shared.list_backoff.failed(scope.index, now, base, max);
                shared.counters.list_failed(descriptor.qualified_plural());
                return None;
            }
        }
    }
    listed_all(shared, scope, &listed);
    shared.failures.succeeded(&subject);
    shared.list_backoff.succeeded(scope.index);
    shared.counters.listed();
    Some(version)
}
