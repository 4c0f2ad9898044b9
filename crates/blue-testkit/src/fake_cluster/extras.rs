//! The cluster-level side of [`FakeCluster`]: discovery of served types,
//! an authorizer with denied checks, and an Event store whose writes can be
//! failed or held.
//!
//! None of these calls enter the call log or [`CallCounts`](crate::CallCounts),
//! which count the resource operations the cost budget is about; Event
//! writes have their own count, [`FakeCluster::event_writes`].

use super::{FakeCluster, Fault};
use blue_kubernetes_client::{AccessCheck, ApiResource, Error, ErrorKind, ResourceDescriptor};
use serde_json::{json, Value};
use std::collections::HashSet;

#[derive(Debug, Default)]
pub(crate) struct Extras {
    served: Vec<ResourceDescriptor>,
    denied: HashSet<AccessCheck>,
    events: Vec<Value>,
    event_writes: usize,
    event_fault: Option<Fault>,
    event_revision: u64,
    /// True while Event writes wait (see [`FakeCluster::hold_events`]).
    events_held: tokio::sync::watch::Sender<bool>,
}

impl Extras {
    pub(crate) fn serve(&mut self, d: &ResourceDescriptor) {
        if !self.served.contains(d) {
            self.served.push(d.clone());
        }
    }

    /// The custom resource types the cluster serves.
    pub(crate) fn served(&self) -> &[ResourceDescriptor] {
        &self.served
    }
}

impl FakeCluster {
    /// Makes discovery report `d` as served (objects created with
    /// [`FakeCluster::create`] make their type served too).
    ///
    /// ```
    /// use blue_kubernetes_client::{Client, ResourceDescriptor};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let cluster = blue_testkit::FakeCluster::new();
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// assert_eq!(cluster.server_resources("example.com", "v1").await.unwrap(), None);
    /// cluster.serve(&d);
    /// let served = cluster.server_resources("example.com", "v1").await.unwrap().unwrap();
    /// assert_eq!(served[0].kind, "Widget");
    /// # }
    /// ```
    pub fn serve(&self, d: &ResourceDescriptor) {
        self.lock().extras.serve(d);
    }

    /// Makes the authorizer answer `false` to `check` (everything else is allowed).
    ///
    /// ```
    /// use blue_kubernetes_client::{AccessCheck, Client};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let cluster = blue_testkit::FakeCluster::new();
    /// let check = AccessCheck::new("default", "create", "", "events");
    /// cluster.deny(check.clone());
    /// assert!(!cluster.can_i(&check).await.unwrap());
    /// # }
    /// ```
    pub fn deny(&self, check: AccessCheck) {
        self.lock().extras.denied.insert(check);
    }

    /// Every Event stored so far, in creation order, as last written.
    ///
    /// ```
    /// assert!(blue_testkit::FakeCluster::new().events().is_empty());
    /// ```
    pub fn events(&self) -> Vec<Value> {
        self.lock().extras.events.clone()
    }

    /// How many Event creates and updates reached the cluster (faulted ones included).
    ///
    /// ```
    /// assert_eq!(blue_testkit::FakeCluster::new().event_writes(), 0);
    /// ```
    pub fn event_writes(&self) -> usize {
        self.lock().extras.event_writes
    }

    /// Makes every Event write fail with `fault` until called with `None`.
    ///
    /// ```
    /// use blue_testkit::{Fault, FakeCluster};
    /// FakeCluster::new().fail_events(Some(Fault::Unavailable));
    /// ```
    pub fn fail_events(&self, fault: Option<Fault>) {
        self.lock().extras.event_fault = fault;
    }

    /// Makes every Event write wait, without failing, until
    /// [`release_events`](Self::release_events): to show that nothing
    /// waits for an Event.
    ///
    /// ```
    /// let cluster = blue_testkit::FakeCluster::new();
    /// cluster.hold_events();
    /// cluster.release_events();
    /// ```
    pub fn hold_events(&self) {
        self.lock().extras.events_held.send_replace(true);
    }

    /// Lets held Event writes (and later ones) through.
    pub fn release_events(&self) {
        self.lock().extras.events_held.send_replace(false);
    }

    /// Returns once Event writes are not held.
    pub(super) async fn events_released(&self) {
        let mut held = self.lock().extras.events_held.subscribe();
        // The sender lives as long as the cluster; an error cannot happen
        // while `self` is borrowed.
        let _ = held.wait_for(|held| !*held).await;
    }

    pub(super) fn discover(&self, group: &str, version: &str) -> Option<Vec<ApiResource>> {
        let state = self.lock();
        let served: Vec<ApiResource> = state
            .extras
            .served
            .iter()
            .filter(|d| d.group == group && d.version == version)
            .flat_map(|d| {
                let verbs = ["delete", "get", "list", "patch", "update", "watch"];
                [
                    ApiResource::new(&d.plural, &d.kind, true, verbs),
                    ApiResource::new(
                        format!("{}/status", d.plural),
                        &d.kind,
                        true,
                        ["get", "patch", "update"],
                    ),
                ]
            })
            .collect();
        (!served.is_empty()).then_some(served)
    }

    pub(super) fn authorize(&self, check: &AccessCheck) -> bool {
        !self.lock().extras.denied.contains(check)
    }

    pub(super) fn write_event(
        &self,
        namespace: &str,
        event: &Value,
        create: bool,
    ) -> Result<Value, Error> {
        let verb = if create { "create" } else { "replace" };
        let mut state = self.lock();
        let extras = &mut state.extras;
        extras.event_writes += 1;
        if let Some(fault) = extras.event_fault {
            return Err(Error::kubectl(verb, fault.kind()));
        }
        let name = event.pointer("/metadata/name").and_then(Value::as_str);
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return Err(Error::kubectl(verb, ErrorKind::Invalid));
        };
        let position = extras
            .events
            .iter()
            .position(|e| e["metadata"]["name"] == name && e["metadata"]["namespace"] == namespace);
        extras.event_revision += 1;
        let mut stored = event.clone();
        stored["metadata"]["namespace"] = json!(namespace);
        stored["metadata"]["resourceVersion"] = json!(extras.event_revision.to_string());
        match (create, position) {
            (true, Some(_)) => Err(Error::kubectl(verb, ErrorKind::Conflict)),
            (false, None) => Err(Error::kubectl(verb, ErrorKind::NotFound)),
            (true, None) => {
                extras.events.push(stored.clone());
                Ok(stored)
            }
            (false, Some(i)) => {
                extras.events[i] = stored.clone();
                Ok(stored)
            }
        }
    }
}
