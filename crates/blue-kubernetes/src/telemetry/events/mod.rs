//! Kubernetes Events: core/v1 `Event`s attached to a resource, aggregated
//! (a repeat of the same type and reason raises `count` on one Event) and
//! rate-limited per object (a token bucket), so a failing resource cannot
//! flood the API server. Writing an Event never fails a reconcile, and
//! never delays one: a pass only queues its Events (see [`outbox`]), so an
//! Event costs the infrastructure effect that follows it no round trip.

mod outbox;
mod state;

use super::Metrics;
use crate::clock::Clock;
use blue_kubernetes_client::{Client, ErrorKind, ResourceDescriptor};
use outbox::Outbox;
use serde_json::{json, Value};
pub(crate) use state::EventType;
use state::{forget_oldest, progress, take_token, Series, SeriesKey, State, MAX_SERIES};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, UNIX_EPOCH};

/// Room left in an Event's name (at most 253) for the object's name.
const NAME_ROOM: usize = 253 - 17;

/// Writes Events for one controller, reported as `component`.
pub(crate) struct EventRecorder {
    shared: Arc<Shared>,
    outbox: Outbox,
}

/// What the recorder and its background writer share.
struct Shared {
    component: String,
    client: Arc<dyn Client>,
    clock: Clock,
    metrics: Arc<Metrics>,
    state: Mutex<State>,
}

/// One admitted occurrence, waiting to be written.
struct Outgoing {
    key: SeriesKey,
    /// Its place in the order of admitted Events.
    sequence: u64,
    namespace: String,
    /// The Event to create when its series has none stored yet.
    fresh: Value,
    count: u64,
    message: String,
    now_ms: u64,
}

impl Outgoing {
    /// A progress Event waits out a grace before it is written, for its
    /// object's outcome (or release) to come and replace it.
    fn waits(&self) -> bool {
        let (_, kind, reason) = &self.key;
        progress(*kind, reason).is_some()
    }
}

impl EventRecorder {
    pub(crate) fn new(
        component: String,
        client: Arc<dyn Client>,
        clock: Clock,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                component,
                client,
                clock,
                metrics,
                state: Mutex::default(),
            }),
            outbox: Outbox::default(),
        }
    }

    /// What the recorder remembers per object.
    pub(crate) fn memory(&self) -> EventMemory {
        EventMemory(self.shared.clone())
    }

    /// Waits until every Event queued so far has been written (or failed).
    pub(crate) async fn flush(&self) {
        self.outbox.flush().await;
    }

    /// `object` was released (our finalizer removed: it is going away): a
    /// Deleting Event of it still waiting is not written, as an outcome
    /// would replace it. A Destroy that finishes within the grace costs no
    /// Event write.
    pub(crate) fn released(&self, object: &Value) {
        let uid = object.pointer("/metadata/uid").and_then(Value::as_str);
        if let Some(uid) = uid {
            self.shared.lock().supersede_waiting(uid);
        }
    }

    /// [`flush`](Self::flush), giving up after `limit`; returns false then.
    pub(crate) async fn flush_within(&self, limit: Duration) -> bool {
        tokio::time::timeout(limit, self.flush()).await.is_ok()
    }

    /// Records one occurrence on `object` (of type `d`). `reason` and
    /// `message` must be generic: never callback text, options or output,
    /// except the validation messages a package marked user-facing.
    /// Only queues the write; see [`flush`](Self::flush).
    pub(crate) fn record(
        &self,
        d: &ResourceDescriptor,
        object: &Value,
        kind: EventType,
        reason: &str,
        message: String,
    ) {
        let meta = |k: &str| {
            object["metadata"][k]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        let (uid, object_namespace, name) = (meta("uid"), meta("namespace"), meta("name"));
        if uid.is_empty() || name.is_empty() {
            return;
        }
        // Events about cluster-scoped objects live in `default`, as
        // kubectl and client-go put them.
        let namespace = match object_namespace.as_str() {
            "" => "default".to_string(),
            ns => ns.to_string(),
        };
        let shared = &self.shared;
        let now = (shared.clock)();
        let key = (uid.clone(), kind, reason.to_string());
        let (count, first_ms, sequence) = {
            let mut state = shared.lock();
            let fresh = state.series.len() >= MAX_SERIES && !state.series.contains_key(&key);
            if fresh {
                forget_oldest(&mut state.series);
            }
            let series = state.series.entry(key.clone()).or_insert(Series {
                count: 0,
                stored: None,
                first_ms: now,
                last_ms: now,
            });
            series.count += 1;
            series.last_ms = now;
            let (count, first_ms) = (series.count, series.first_ms);
            if !take_token(&mut state.buckets, &uid, now) {
                drop(state);
                shared.metrics.event("dropped");
                return;
            }
            state.sequence += 1;
            let sequence = state.sequence;
            state.supersede(&key, sequence);
            (count, first_ms, sequence)
        };
        let fresh = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": event_name(&name, now, sequence),
                "namespace": namespace,
            },
            "involvedObject": {
                "apiVersion": d.api_version(),
                "kind": d.kind,
                "name": name,
                "namespace": object_namespace,
                "uid": uid,
                "resourceVersion": meta("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "type": kind.as_str(),
            "source": {"component": shared.component},
            "reportingComponent": shared.component,
            "reportingInstance": shared.component,
            "firstTimestamp": timestamp(first_ms),
            "lastTimestamp": timestamp(now),
            "count": count,
        });
        let outgoing = Outgoing {
            key,
            sequence,
            namespace,
            fresh,
            count,
            message,
            now_ms: now,
        };
        if !self.outbox.push(&self.shared, outgoing) {
            // Not queued, so nothing will take it: forget it as waiting.
            shared
                .lock()
                .take(&(uid, kind, reason.to_string()), sequence);
            shared.metrics.event("dropped");
        }
    }
}

/// What the recorder remembers of each object (its series, its token
/// bucket), for the controller's memory to forget with the rest of what it
/// remembers of the object.
pub(crate) struct EventMemory(Arc<Shared>);

impl EventMemory {
    pub(crate) fn forget(&self, uid: &str) {
        self.0.lock().forget(uid);
    }

    #[cfg(feature = "testing")]
    pub(crate) fn len(&self) -> usize {
        let state = self.0.lock();
        state.series.len() + state.buckets.len() + state.queued_progress.len()
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes one queued occurrence: raises the count of its series' stored
    /// Event, or creates the Event. Looked up now, not when queued, so a
    /// repeat queued behind its series' first write aggregates onto it.
    async fn write(&self, o: Outgoing) {
        let stored = {
            let mut state = self.lock();
            if !state.take(&o.key, o.sequence) {
                drop(state);
                self.metrics.event("superseded");
                return;
            }
            state.series.get(&o.key).and_then(|s| s.stored.clone())
        };
        let event = match stored {
            Some(mut event) => {
                event["count"] = json!(o.count);
                event["message"] = json!(o.message);
                event["lastTimestamp"] = json!(timestamp(o.now_ms));
                event
            }
            None => o.fresh,
        };
        let namespace = &o.namespace;
        let aggregated = event["metadata"].get("resourceVersion").is_some();
        let written = match aggregated {
            true => match self.client.update_event(namespace, &event).await {
                // The Event expired (the server keeps them about an hour): start anew.
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    let mut again = event.clone();
                    again["metadata"] =
                        json!({"name": event["metadata"]["name"], "namespace": namespace});
                    again["firstTimestamp"] = json!(timestamp(o.now_ms));
                    self.client.create_event(namespace, &again).await
                }
                other => other,
            },
            false => self.client.create_event(namespace, &event).await,
        };
        match written {
            Ok(stored) => {
                self.metrics
                    .event(if aggregated { "aggregated" } else { "created" });
                if let Some(series) = self.lock().series.get_mut(&o.key) {
                    series.stored = Some(stored);
                }
            }
            Err(e) => {
                self.metrics.event("failed");
                // Text-free by construction; issue-level logging of repeated
                // failures belongs to the transport's health logger.
                tracing::debug!(kind = %e.kind(), "event write failed");
            }
        }
    }
}

/// `<object>.<hex nanoseconds + sequence>`, like client-go, within 253 bytes.
fn event_name(object: &str, now_ms: u64, sequence: u64) -> String {
    let mut end = object.len().min(NAME_ROOM);
    while !object.is_char_boundary(end) {
        end -= 1;
    }
    let stamp = now_ms.saturating_mul(1_000_000).saturating_add(sequence);
    format!("{}.{stamp:x}", &object[..end])
}

fn timestamp(ms: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}
