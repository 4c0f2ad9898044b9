//! The user side of raw objects: what a test (or a human with kubectl) sees
//! and does to a package's Secrets and ConfigMaps. Never counted, never
//! faulted, never delayed.

use super::objects::answer;
use super::paths::Target;
use super::Refused;
use crate::FakeCluster;
use blue_kubernetes_client::Method;
use serde_json::Value;

impl FakeCluster {
    fn user_request(
        &self,
        what: &str,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, Refused> {
        let target = Target::parse(path)
            .unwrap_or_else(|_| panic!("FakeCluster::{what}: {path:?} is not an object path"));
        assert!(
            !target.is_event_or_lease(),
            "FakeCluster::{what}: use events() and lease() for Events and Leases"
        );
        let now = self.now();
        let mut state = self.lock();
        let answered = answer(&mut state, method, &target, body, &now);
        state.store.last_rejection.clear();
        answered.map(|(_, object)| object)
    }

    /// The objects at a collection path (`/api/v1/namespaces/NS/secrets`;
    /// without `namespaces/NS`, every namespace), sorted by namespace and
    /// name; a `labelSelector` query applies.
    ///
    /// # Panics
    /// If `path` is not a collection path.
    ///
    /// ```
    /// let cluster = blue_testkit::FakeCluster::new();
    /// assert!(cluster.objects("/api/v1/namespaces/dev/secrets").is_empty());
    /// ```
    pub fn objects(&self, path: &str) -> Vec<Value> {
        match self.user_request("objects", Method::Get, path, None) {
            Ok(list) => list["items"].as_array().cloned().unwrap_or_default(),
            Err(_) => panic!("FakeCluster::objects: {path:?} is not a collection path"),
        }
    }

    /// The object at `path` (e.g. `/api/v1/namespaces/dev/secrets/db`), if
    /// it exists.
    ///
    /// ```
    /// let cluster = blue_testkit::FakeCluster::new();
    /// assert!(cluster.get_object("/api/v1/namespaces/dev/secrets/db").is_none());
    /// ```
    pub fn get_object(&self, path: &str) -> Option<Value> {
        self.user_request("get_object", Method::Get, path, None)
            .ok()
    }

    /// Creates `object` at the collection `path`, as `kubectl create` does:
    /// server-owned metadata is assigned, a Secret's `stringData` is merged
    /// into `data`.
    ///
    /// # Panics
    /// If the server would refuse it (it exists, has no name...).
    ///
    /// ```
    /// use serde_json::json;
    /// let cluster = blue_testkit::FakeCluster::new();
    /// let s = cluster.create_object(
    ///     "/api/v1/namespaces/dev/secrets",
    ///     json!({"metadata": {"name": "db"}, "stringData": {"password": "foo"}}),
    /// );
    /// assert_eq!(s["data"]["password"], "Zm9v");
    /// assert_eq!(s["metadata"]["namespace"], "dev");
    /// ```
    pub fn create_object(&self, path: &str, object: Value) -> Value {
        self.user_request("create_object", Method::Post, path, Some(&object))
            .unwrap_or_else(|r| panic!("FakeCluster::create_object at {path:?}: refused ({r:?})"))
    }

    /// Edits the object at `path` as `kubectl edit` does: server-owned
    /// metadata is kept, the resourceVersion bumps, a Secret's `stringData`
    /// is merged into `data`.
    ///
    /// # Panics
    /// If the object does not exist or the server would refuse the edit.
    ///
    /// ```
    /// use serde_json::json;
    /// let cluster = blue_testkit::FakeCluster::new();
    /// let path = "/api/v1/namespaces/dev/configmaps/app";
    /// cluster.create_object("/api/v1/namespaces/dev/configmaps", json!({"metadata": {"name": "app"}}));
    /// let edited = cluster.edit_object(path, |o| o["data"] = json!({"k": "v"}));
    /// assert_eq!(edited["data"]["k"], "v");
    /// ```
    pub fn edit_object(&self, path: &str, f: impl FnOnce(&mut Value)) -> Value {
        let mut object = self
            .get_object(path)
            .unwrap_or_else(|| panic!("FakeCluster::edit_object: {path:?} does not exist"));
        f(&mut object);
        if let Some(meta) = object["metadata"].as_object_mut() {
            // The edit is unconditional, as `kubectl edit` retries its own.
            meta.remove("resourceVersion");
        }
        self.user_request("edit_object", Method::Put, path, Some(&object))
            .unwrap_or_else(|r| panic!("FakeCluster::edit_object of {path:?}: refused ({r:?})"))
    }

    /// Deletes the object at `path` as a user would (`kubectl delete
    /// --wait=false`): one without finalizers goes at once, one with gets a
    /// `deletionTimestamp`. Returns what is left, `None` when it is gone or
    /// never existed. Nothing is garbage-collected: objects it owned stay.
    ///
    /// ```
    /// use serde_json::json;
    /// let cluster = blue_testkit::FakeCluster::new();
    /// cluster.create_object("/api/v1/namespaces/dev/secrets", json!({"metadata": {"name": "db"}}));
    /// assert!(cluster.delete_object("/api/v1/namespaces/dev/secrets/db").is_none());
    /// assert!(cluster.get_object("/api/v1/namespaces/dev/secrets/db").is_none());
    /// ```
    pub fn delete_object(&self, path: &str) -> Option<Value> {
        self.user_request("delete_object", Method::Delete, path, None)
            .ok()?;
        self.get_object(path)
    }
}
