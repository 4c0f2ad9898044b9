//! The user-side API of [`FakeCluster`]: what a human applying YAML does.
//! Never counted, never faulted, never delayed.

use super::FakeCluster;
use blue_kubernetes_client::{ErrorKind, ResourceDescriptor};
use serde_json::{json, Value};

impl FakeCluster {
    /// Creates `namespace/name` with `spec`, as `kubectl apply` of a new
    /// object would. For a cluster-scoped type (see
    /// [`ResourceDescriptor::cluster_scoped`]) the namespace is ignored (pass
    /// `""`) and the object has none.
    ///
    /// # Panics
    /// If the object already exists or `name` is empty.
    ///
    /// ```
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// use serde_json::json;
    /// let cluster = blue_testkit::FakeCluster::new();
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// let a = cluster.create(&d, "dev", "a", json!({"state": "running"}));
    /// assert_eq!(a["apiVersion"], "example.com/v1");
    /// assert_eq!(a["kind"], "Widget");
    /// assert_eq!(a["metadata"]["namespace"], "dev");
    /// assert_eq!(a["metadata"]["generation"], 1);
    /// assert_eq!(a["metadata"]["resourceVersion"], "1");
    /// assert_eq!(a["spec"]["state"], "running");
    /// ```
    pub fn create(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
        name: &str,
        spec: Value,
    ) -> Value {
        self.create_with(
            d,
            json!({"metadata": {"name": name, "namespace": namespace}, "spec": spec}),
        )
    }

    /// Creates a full object: `metadata.name` (required), `metadata.namespace`
    /// (default `default`; none for a cluster-scoped type), annotations, labels, finalizers, `spec` (default
    /// `{}`). Server-owned metadata is assigned afresh. Unlike a real server, a
    /// given `status` is kept, so a test can start from any recorded state.
    ///
    /// # Panics
    /// If the object already exists or has no name.
    ///
    /// ```
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// use serde_json::json;
    /// let cluster = blue_testkit::FakeCluster::new();
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// let a = cluster.create_with(&d, json!({
    ///     "metadata": {"name": "a", "annotations": {"note": "x"}, "finalizers": ["other/keep"]},
    ///     "spec": {"size": 1},
    ///     "status": {"phase": "Ready"},
    /// }));
    /// assert_eq!(a["metadata"]["namespace"], "default");
    /// assert_eq!(a["metadata"]["finalizers"][0], "other/keep");
    /// assert_eq!(a["status"]["phase"], "Ready");
    /// ```
    pub fn create_with(&self, d: &ResourceDescriptor, object: Value) -> Value {
        let now = self.now();
        let mut state = self.lock();
        state.extras.serve(d);
        match state.store.create(d, object, &now) {
            Ok(created) => created,
            Err(ErrorKind::Invalid) if !state.store.last_rejection.is_empty() => {
                let errors = std::mem::take(&mut state.store.last_rejection);
                drop(state);
                panic!("FakeCluster::create_with: the CRD's schema refuses the object: {errors:?}")
            }
            Err(kind) => {
                drop(state);
                panic!("FakeCluster::create_with: refused ({kind}): exists or has no name")
            }
        }
    }

    /// Edits the whole object as `kubectl edit` would: changes to server-owned
    /// metadata (uid, resourceVersion, generation, timestamps, name) and to
    /// `status` are discarded; the generation bumps when anything outside
    /// `metadata` and `status` changed; the resourceVersion always bumps.
    /// Removing the last finalizer of a deleting object removes it; the final
    /// state is returned.
    ///
    /// # Panics
    /// If the object does not exist, or the edit adds a finalizer to a
    /// deleting object (the server forbids it).
    ///
    /// ```
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// use serde_json::json;
    /// let cluster = blue_testkit::FakeCluster::new();
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// cluster.create(&d, "default", "a", json!({}));
    /// let a = cluster.edit(&d, "default", "a", |o| o["metadata"]["labels"] = json!({"team": "x"}));
    /// assert_eq!(a["metadata"]["labels"]["team"], "x");
    /// assert_eq!(a["metadata"]["generation"], 1);
    /// ```
    pub fn edit(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
        name: &str,
        f: impl FnOnce(&mut Value),
    ) -> Value {
        let (edited, rejection) = {
            let mut state = self.lock();
            let edited = state.store.edit(d, namespace, name, f);
            (edited, std::mem::take(&mut state.store.last_rejection))
        };
        match edited {
            Some(Ok(object)) => object,
            Some(Err(_)) if !rejection.is_empty() => panic!(
                "FakeCluster::edit of {namespace}/{name}: the CRD's schema refuses it: {rejection:?}"
            ),
            Some(Err(kind)) => panic!("FakeCluster::edit of {namespace}/{name} refused ({kind})"),
            None => panic!("FakeCluster::edit: {namespace}/{name} does not exist"),
        }
    }

    /// Edits `spec` in place. The generation bumps only if the spec actually
    /// changed; the resourceVersion always bumps.
    ///
    /// # Panics
    /// If the object does not exist.
    ///
    /// ```
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// use serde_json::json;
    /// let cluster = blue_testkit::FakeCluster::new();
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// cluster.create(&d, "default", "a", json!({"size": 1}));
    /// let same = cluster.edit_spec(&d, "default", "a", |spec| spec["size"] = json!(1));
    /// assert_eq!(same["metadata"]["generation"], 1);
    /// let changed = cluster.edit_spec(&d, "default", "a", |spec| spec["size"] = json!(2));
    /// assert_eq!(changed["metadata"]["generation"], 2);
    /// assert_eq!(changed["metadata"]["resourceVersion"], "3");
    /// ```
    pub fn edit_spec(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
        name: &str,
        f: impl FnOnce(&mut Value),
    ) -> Value {
        self.edit(d, namespace, name, |object| {
            if object.get("spec").is_none() {
                object["spec"] = json!({});
            }
            f(&mut object["spec"]);
        })
    }

    /// Sets one annotation (no generation bump).
    ///
    /// # Panics
    /// If the object does not exist.
    ///
    /// ```
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// use serde_json::json;
    /// let cluster = blue_testkit::FakeCluster::new();
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// cluster.create(&d, "default", "a", json!({}));
    /// let key = "colors.getcolors.ai/reconcile-request";
    /// let a = cluster.set_annotation(&d, "default", "a", key, "1");
    /// assert_eq!(a["metadata"]["annotations"][key], "1");
    /// assert_eq!(a["metadata"]["generation"], 1);
    /// ```
    pub fn set_annotation(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
        name: &str,
        key: &str,
        value: &str,
    ) -> Value {
        self.edit(d, namespace, name, |object| {
            let meta = &mut object["metadata"];
            if !meta.get("annotations").is_some_and(Value::is_object) {
                meta["annotations"] = json!({});
            }
            meta["annotations"][key] = json!(value);
        })
    }

    /// Requests deletion, as `kubectl delete --wait=false` would. An object
    /// with finalizers gets `metadata.deletionTimestamp` (from the clock, once)
    /// and stays until its last finalizer is removed; one without is removed
    /// at once. Returns the object left behind, `None` when it is gone (or
    /// never existed).
    ///
    /// ```
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// use serde_json::json;
    /// let cluster = blue_testkit::FakeCluster::new();
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// cluster.create_with(&d, json!({"metadata": {"name": "kept", "finalizers": ["x/y"]}}));
    /// cluster.create(&d, "default", "gone", json!({}));
    /// let kept = cluster.delete(&d, "default", "kept").unwrap();
    /// assert_eq!(kept["metadata"]["deletionTimestamp"], "2024-01-01T00:00:00Z");
    /// assert!(cluster.delete(&d, "default", "gone").is_none());
    /// assert!(cluster.get(&d, "default", "gone").is_none());
    /// ```
    pub fn delete(&self, d: &ResourceDescriptor, namespace: &str, name: &str) -> Option<Value> {
        let now = self.now();
        self.lock().store.delete(d, namespace, name, &now)
    }

    /// Reads an object without counting a call.
    ///
    /// ```
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// let cluster = blue_testkit::FakeCluster::new();
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// assert!(cluster.get(&d, "default", "a").is_none());
    /// cluster.create(&d, "default", "a", serde_json::json!({}));
    /// assert!(cluster.get(&d, "default", "a").is_some());
    /// assert_eq!(cluster.calls().total(), 0);
    /// ```
    pub fn get(&self, d: &ResourceDescriptor, namespace: &str, name: &str) -> Option<Value> {
        self.lock().store.get(d, namespace, name)
    }

    /// Lists a namespace's objects of type `d` (`""`: every namespace),
    /// sorted by namespace and name, without counting a call.
    ///
    /// ```
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// use serde_json::json;
    /// let cluster = blue_testkit::FakeCluster::new();
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// cluster.create(&d, "default", "b", json!({}));
    /// cluster.create(&d, "default", "a", json!({}));
    /// cluster.create(&d, "other", "c", json!({}));
    /// let names: Vec<_> = cluster.list(&d, "default").iter()
    ///     .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned()).collect();
    /// assert_eq!(names, ["a", "b"]);
    /// ```
    pub fn list(&self, d: &ResourceDescriptor, namespace: &str) -> Vec<Value> {
        self.lock().store.list(d, namespace)
    }
}
