//! Reactions timed from watch streams. The harness watches the measured
//! objects itself, and a reaction runs from the event that shows the change
//! (an edit's new generation, a create) to the event that shows the
//! operator's answer, each stamped when it arrived. A probe that reads every
//! few milliseconds adds up to its period to every figure and loads the API
//! server it measures; a watch event arrives as soon as etcd has the write.
//! A deletion is timed from its own event: deleting a managed ConfigMap
//! runs from the ConfigMap watch's `DELETED` to its `ADDED` again.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use blue_kubernetes_client::{
    Client, PageRequest, ProxyClient, ResourceDescriptor, WatchEvent, WatchRequest,
};
use futures::StreamExt;
use serde_json::Value;
use tokio::runtime::{Handle, Runtime};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The changes to one type in one namespace since [`Changes::open`], in
/// the order the API server sent them; waited for from blocking code.
pub struct Changes {
    /// Arrival, whether it was a deletion, and the object.
    events: mpsc::UnboundedReceiver<(Instant, bool, Value)>,
    reader: JoinHandle<()>,
    rt: Handle,
    /// How long a wait may take before it fails.
    timeout: Duration,
}

impl Changes {
    /// Watches `descriptor` in `namespace` from its current
    /// resourceVersion, on `rt`: every later change arrives, nothing
    /// earlier.
    pub fn open(
        rt: &Runtime,
        client: &Arc<ProxyClient>,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        timeout: Duration,
    ) -> Result<Self> {
        let stream = rt.block_on(async {
            // A one-item page is enough for the list's resourceVersion.
            let page = (client.list_page(descriptor, namespace, &PageRequest::first(1))).await?;
            let request = WatchRequest {
                resource_version: page.resource_version.context("a list without version")?,
                timeout_seconds: 900,
                bookmarks: false,
                label_selector: None,
            };
            anyhow::Ok(client.watch(descriptor, namespace, &request).await?)
        })?;
        let (sender, events) = mpsc::unbounded_channel();
        let reader = rt.spawn(async move {
            let mut stream = stream;
            while let Some(Ok(event)) = stream.next().await {
                let (deleted, object) = match event {
                    WatchEvent::Added(o) | WatchEvent::Modified(o) => (false, o),
                    WatchEvent::Deleted(o) => (true, o),
                    WatchEvent::Bookmark { .. } => continue,
                };
                if sender.send((Instant::now(), deleted, object)).is_err() {
                    return;
                }
            }
        });
        let rt = rt.handle().clone();
        Ok(Self {
            events,
            reader,
            rt,
            timeout,
        })
    }

    /// When the first object (added or modified) for which `done` holds
    /// arrived; the events before it are consumed. Fails with `never` after
    /// the timeout, or when the watch ends first.
    pub fn until(&mut self, never: &str, done: impl Fn(&Value) -> bool) -> Result<Instant> {
        self.until_event(never, |deleted, o| !deleted && done(o))
    }

    /// When the deletion of `name` arrived, as [`until`](Self::until).
    pub fn until_deleted(&mut self, never: &str, name: &str) -> Result<Instant> {
        self.until_event(never, |deleted, o| deleted && named(o, name))
    }

    fn until_event(&mut self, never: &str, done: impl Fn(bool, &Value) -> bool) -> Result<Instant> {
        self.until_seen(never, |_, deleted, o| done(deleted, o))
    }

    /// When the first event for which `done` (given its arrival, whether
    /// it was a deletion, and the object) holds arrived, as
    /// [`until`](Self::until).
    pub fn until_seen(
        &mut self,
        never: &str,
        mut done: impl FnMut(Instant, bool, &Value) -> bool,
    ) -> Result<Instant> {
        let (rt, timeout) = (self.rt.clone(), self.timeout);
        rt.block_on(async {
            let deadline = tokio::time::Instant::now() + timeout;
            loop {
                match tokio::time::timeout_at(deadline, self.events.recv()).await {
                    Ok(Some((at, deleted, object))) if done(at, deleted, &object) => return Ok(at),
                    Ok(Some(_)) => {}
                    Ok(None) => bail!("{never} (the watch ended)"),
                    Err(_) => bail!("{never}"),
                }
            }
        })
    }
}

impl Drop for Changes {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

pub fn named(object: &Value, name: &str) -> bool {
    object["metadata"]["name"] == name
}
