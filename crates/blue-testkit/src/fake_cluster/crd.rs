//! Installing a CRD into [`FakeCluster`]: from then on every write of its
//! type is pruned, defaulted and validated as the API server would.

use super::{schema, FakeCluster};
use blue_kubernetes_client::ResourceDescriptor;
use serde_json::Value;

impl FakeCluster {
    /// Installs `crd` (an `apiextensions.k8s.io/v1` CustomResourceDefinition
    /// such as [`blue_kubernetes::crd`] generates) for `version`. Every later
    /// write of that type, by the code under test or by the user-side API,
    /// goes through its structural schema like on a real API server:
    ///
    /// - fields the schema does not declare are **pruned** (in `spec` *and*
    ///   `status`: a status field missing from the CRD silently disappears);
    /// - `default`s are filled in;
    /// - `type`, `enum`, `pattern`, lengths, bounds, `required` and
    ///   `date-time` formats are checked: a client write that fails them is
    ///   refused as `Invalid`, a user-side write panics with the fields.
    ///
    /// Not emulated: CEL rules (`x-kubernetes-validations`), conversion,
    /// `metadata` validation.
    ///
    /// # Panics
    /// If `crd` has no group, plural or `openAPIV3Schema` for `version`.
    ///
    /// ```
    /// use blue_kubernetes_client::{Client, ResourceDescriptor};
    /// use blue_testkit::FakeCluster;
    /// use serde_json::json;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// let crd = json!({
    ///     "spec": {"group": "example.com", "names": {"plural": "widgets"}, "versions": [{
    ///         "name": "v1",
    ///         "schema": {"openAPIV3Schema": {"type": "object", "properties": {
    ///             "spec": {"type": "object", "properties": {
    ///                 "size": {"type": "integer", "default": 1},
    ///             }},
    ///             "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
    ///         }}},
    ///     }]},
    /// });
    /// let cluster = FakeCluster::new();
    /// cluster.install_crd(&crd, "v1");
    /// let a = cluster.create(&d, "default", "a", json!({"typo": true}));
    /// assert_eq!(a["spec"], json!({"size": 1}));
    ///
    /// let written = cluster
    ///     .update_status(&d, &a, &json!({"phase": "Ready", "undeclared": 1}))
    ///     .await
    ///     .unwrap();
    /// assert_eq!(written["status"], json!({"phase": "Ready"}));
    /// # }
    /// ```
    pub fn install_crd(&self, crd: &Value, version: &str) {
        match schema::from_crd(crd, version) {
            Ok((group, plural, schema)) => self.lock().store.install(group, plural, schema),
            Err(why) => panic!("FakeCluster::install_crd: {why}"),
        }
    }

    /// What the API server would store for `object` of type `d`: pruned and
    /// defaulted, or the list of fields that fail the installed schema.
    /// Writes nothing; without an installed CRD, `object` is returned as is.
    ///
    /// ```
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// use serde_json::json;
    /// let cluster = blue_testkit::FakeCluster::new();
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// let object = json!({"spec": {"size": "big"}});
    /// assert_eq!(cluster.admit(&d, object.clone()), Ok(object));
    /// ```
    pub fn admit(&self, d: &ResourceDescriptor, mut object: Value) -> Result<Value, Vec<String>> {
        let mut state = self.lock();
        match state.store.admit(d, &mut object) {
            Ok(()) => Ok(object),
            Err(_) => Err(std::mem::take(&mut state.store.last_rejection)),
        }
    }
}
