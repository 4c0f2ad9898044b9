//! One reflector per package type (or related kind) and namespace scope:
//! a paginated list, then a watch from the list's resourceVersion, feeding
//! the cache (or the related objects' cache, see `related`).
//!
//! # Guarantees
//! - A `410 Gone` (expired resourceVersion or continue token) relists; a
//!   stream the server ends rewatches from the last version seen; one that
//!   breaks rewatches with backoff.
//! - A full list every `resync_ms` while watching: changes whose events
//!   were lost (or a watch that went silent) are found within it.
//! - After [`WATCH_FAILURES_BEFORE_FALLBACK`] failed watches in a row the
//!   reflector lists every `poll_ms` instead, says so once (log and
//!   counter), and tries one watch again after each list once a doubling
//!   delay (`retry_base_ms` up to `retry_max_ms`) has passed, until one
//!   works.
//! - While watching or falling back, a failed list is retried with the
//!   list backoff, and a fallback list follows at the watch retry at the
//!   latest, however long `poll_ms` is.
//! - Without watches (`Config::watch` off, or a client that cannot watch,
//!   like the per-call kubectl transport) it lists every `poll_ms`.
//! - Only while this process may dispatch (leader election): a standby
//!   replica neither lists nor watches.

mod list;
pub(super) mod scope;

use super::dispatch;
use super::dispatch::{deleted, observed};
use super::Shared;
use crate::domain::due::backoff_ms;
use crate::telemetry::failure_log::Failure;
use crate::telemetry::request_metrics::TIMING;
use blue_kubernetes_client::{Error, ErrorKind, WatchEvent, WatchRequest};
use futures::StreamExt;
use list::list;
use scope::{subject, Scope};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// Failed watches in a row before falling back to periodic lists.
pub(crate) const WATCH_FAILURES_BEFORE_FALLBACK: u32 = 3;

/// The longest single watch request; the server ends it, we rewatch.
const MAX_WATCH_SECONDS: u64 = 290;

/// How this reflector learns about changes right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Watch,
    /// Lists every `poll_ms` for good: watches are off or unsupported.
    Poll,
    /// Watches failed: lists every `poll_ms`, tries to watch again at
    /// `retry` (attempt `attempts`).
    Fallback {
        retry: Instant,
        attempts: u32,
    },
}

/// How a watch phase ended.
enum Ended {
    /// Time for the periodic full list, or the version expired.
    Relist,
    Unsupported,
    Failing,
    /// Shut down, or leadership lost.
    Stopped,
}

pub(super) async fn run(shared: Arc<Shared>, scope: Scope, mut stopped: watch::Receiver<bool>) {
    let config = &shared.controller.config;
    let poll = Duration::from_millis(config.poll_ms);
    // While watching or trying to, a failed list is retried on the list
    // backoff, not a whole poll period later: with a long `poll_ms` an API
    // server restart would otherwise leave the type unobserved that long.
    let retry_step = poll.min(retry_delay(&shared, 1));
    let step = |mode: Mode| match mode {
        Mode::Poll => poll,
        Mode::Watch | Mode::Fallback { .. } => retry_step,
    };
    let mut mode = if config.watch {
        Mode::Watch
    } else {
        Mode::Poll
    };
    loop {
        if *stopped.borrow() {
            return;
        }
        let now = shared.controller.now();
        if !shared.may_dispatch() {
            shared.health.standing_by(scope.index);
            if pause(step(mode), &mut stopped).await {
                return;
            }
            continue;
        }
        if shared.list_backoff.waiting(scope.index, now) {
            shared.health.progressed(scope.index);
            if pause(step(mode), &mut stopped).await {
                return;
            }
            continue;
        }
        let Some(version) = list(&shared, &scope).await else {
            shared.health.progressed(scope.index);
            if pause(step(mode), &mut stopped).await {
                return;
            }
            continue;
        };
        shared.health.listed(scope.index);
        let watch_from = match (mode, version) {
            (Mode::Watch, Some(v)) => v,
            (Mode::Fallback { retry, attempts }, Some(v)) if Instant::now() >= retry => {
                mode = Mode::Fallback {
                    retry: Instant::now() + retry_delay(&shared, attempts + 1),
                    attempts: attempts + 1,
                };
                v
            }
            (mode_now, version) => {
                if let (Mode::Watch, None) = (mode_now, &version) {
                    // A transport that lists without a resourceVersion
                    // cannot be watched from.
                    mode = Mode::Poll;
                }
                // Falling back: the next list at the poll period or the
                // watch retry, whichever comes first.
                let wait = match (mode_now, &version) {
                    (Mode::Fallback { retry, .. }, Some(_)) => {
                        poll.min(retry.saturating_duration_since(Instant::now()))
                    }
                    _ => poll,
                };
                if pause(wait, &mut stopped).await {
                    return;
                }
                continue;
            }
        };
        let ended = watch_until_resync(&shared, &scope, watch_from, &mut mode, &mut stopped).await;
        // Until the next watch opens, the next list decides.
        dispatch::watching(&shared, scope.index, &scope.feed, &scope.namespace, false);
        match ended {
            Ended::Relist => {}
            Ended::Unsupported => mode = Mode::Poll,
            Ended::Failing => {
                if mode == Mode::Watch {
                    fell_back(&shared, &scope);
                    mode = Mode::Fallback {
                        retry: Instant::now() + retry_delay(&shared, 1),
                        attempts: 1,
                    };
                }
            }
            Ended::Stopped => {}
        }
    }
}

/// Sleeps `period` unless stopped first; true when stopped.
async fn pause(period: Duration, stopped: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(period) => *stopped.borrow(),
        _ = stopped.changed() => true,
    }
}

fn retry_delay(shared: &Shared, attempts: u32) -> Duration {
    let c = &shared.controller.config;
    Duration::from_millis(backoff_ms(attempts, c.retry_base_ms, c.retry_max_ms))
}

/// Watches from `version` until the next resync is due, rewatching as
/// streams end.
async fn watch_until_resync(
    shared: &Shared,
    scope: &Scope,
    mut version: String,
    mode: &mut Mode,
    stopped: &mut watch::Receiver<bool>,
) -> Ended {
    let config = &shared.controller.config;
    let descriptor = &scope.descriptor;
    let resync_at = Instant::now() + Duration::from_millis(config.resync_ms);
    let leadership_check = Duration::from_millis(config.poll_ms);
    let subject = subject(scope, "watch");
    // Falling back, one failed try sends it back to listing at once.
    let allowed_failures = match mode {
        Mode::Fallback { .. } => 1,
        _ => WATCH_FAILURES_BEFORE_FALLBACK,
    };
    let mut failures = 0u32;
    loop {
        let left = resync_at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ended::Relist;
        }
        let request = WatchRequest {
            resource_version: version.clone(),
            timeout_seconds: left.as_secs().clamp(1, MAX_WATCH_SECONDS) as u32,
            bookmarks: true,
            label_selector: scope.selector.clone(),
        };
        let opened = tokio::select! {
            opened = config.client.watch(descriptor, &scope.namespace, &request) => opened,
            _ = stopped.changed() => return Ended::Stopped,
        };
        let broke = match opened {
            Err(Error::Unsupported { .. }) => return Ended::Unsupported,
            Err(e) if e.kind() == ErrorKind::Gone => return Ended::Relist,
            Err(e) => Some(e),
            Ok(mut stream) => {
                dispatch::watching(shared, scope.index, &scope.feed, &scope.namespace, true);
                shared.counters.watch_opened();
                if let Mode::Fallback { .. } = mode {
                    restored(scope);
                    *mode = Mode::Watch;
                }
                // An interval, not a fresh sleep per event: a busy stream
                // must not starve the leadership check.
                let mut tick = tokio::time::interval(leadership_check);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                tick.reset();
                loop {
                    let next = tokio::select! {
                        next = stream.next() => next,
                        _ = tokio::time::sleep_until(resync_at) => return Ended::Relist,
                        _ = tick.tick() => {
                            shared.health.progressed(scope.index);
                            match shared.may_dispatch() {
                                true => continue,
                                false => return Ended::Stopped,
                            }
                        }
                        _ = stopped.changed() => return Ended::Stopped,
                    };
                    match next {
                        None => break None,
                        Some(Err(e)) if e.kind() == ErrorKind::Gone => return Ended::Relist,
                        Some(Err(e)) => break Some(e),
                        Some(Ok(event)) => {
                            shared.health.progressed(scope.index);
                            failures = 0;
                            if let Some(v) = event.resource_version() {
                                version = v.to_string();
                            }
                            apply(shared, scope, event);
                        }
                    }
                }
            }
        };
        match broke {
            None => {
                shared.failures.succeeded(&subject);
            }
            Some(e) => {
                failures += 1;
                shared.failures.failed(&subject, Failure::of(&e));
                if failures >= allowed_failures {
                    return Ended::Failing;
                }
                if pause(retry_delay(shared, failures), stopped).await {
                    return Ended::Stopped;
                }
                shared.health.progressed(scope.index);
            }
        }
    }
}

fn apply(shared: &Shared, scope: &Scope, event: WatchEvent) {
    shared.counters.watch_event();
    tracing::debug!(
        target: TIMING,
        kind = %scope.descriptor.kind,
        event = event_type(&event),
        name = event_name(&event),
        "watch event arrived"
    );
    match event {
        WatchEvent::Added(object) | WatchEvent::Modified(object) => {
            observed(shared, scope, object, true);
        }
        WatchEvent::Deleted(object) => deleted(shared, scope, &object),
        WatchEvent::Bookmark { .. } => {}
    }
}

fn event_type(event: &WatchEvent) -> &'static str {
    match event {
        WatchEvent::Added(_) => "ADDED",
        WatchEvent::Modified(_) => "MODIFIED",
        WatchEvent::Deleted(_) => "DELETED",
        WatchEvent::Bookmark { .. } => "BOOKMARK",
    }
}

fn event_name(event: &WatchEvent) -> &str {
    match event {
        WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
            o["metadata"]["name"].as_str().unwrap_or_default()
        }
        WatchEvent::Bookmark { .. } => "",
    }
}

fn fell_back(shared: &Shared, scope: &Scope) {
    shared.counters.fell_back();
    tracing::warn!(
        subject = %subject(scope, "watch"),
        poll_ms = shared.controller.config.poll_ms,
        "watch keeps failing; listing every poll_ms until it works again"
    );
}

fn restored(scope: &Scope) {
    tracing::info!(
        subject = %subject(scope, "watch"),
        "watch works again; periodic listing stopped"
    );
}
