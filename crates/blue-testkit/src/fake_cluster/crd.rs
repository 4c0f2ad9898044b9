//! Installing a CRD into [`FakeCluster`]: from then on every write of its
//! type is pruned, defaulted and validated as the API server would.

mod rules;

use super::{schema, FakeCluster};
use blue_kubernetes_client::ResourceDescriptor;
use serde_json::Value;

impl FakeCluster {
    /// Installs `crd` (an `apiextensions.k8s.io/v1` CustomResourceDefinition
    /// such as [`blue_kubernetes::crd::generate`] makes) for `version`.
    /// Every later write of that type, by the code under test or by the user-side API,
    /// goes through its structural schema like on a real API server:
    ///
    /// - fields the schema does not declare are **pruned** (in `spec` *and*
    ///   `status`: a status field missing from the CRD silently disappears);
    /// - `default`s are filled in;
    /// - `type`, `enum`, `pattern`, lengths, bounds, `required`,
    ///   `date-time` formats, int-or-string and `anyOf`/`oneOf`/`allOf`/`not`
    ///   are checked: a client write that fails them is refused as
    ///   `Invalid`, a user-side write panics with the fields;
    /// - numbers are stored as the server decodes them: `2.0` as `2`, and
    ///   an integer beyond int64 is no `integer`.
    ///
    /// Where kube-apiserver 1.20 is stricter than later releases, it
    /// judges as 1.20 does: `""` is refused where the node has a type and
    /// is not `nullable` (1.20 built with a recent Go reads it as null),
    /// and a `null` missing from an enum is refused even where `nullable`.
    ///
    /// Not emulated: CEL rules (`x-kubernetes-validations`, which 1.20
    /// does not know), conversion, `metadata` validation.
    ///
    /// # Panics
    /// If `crd` has no group, plural or `openAPIV3Schema` for `version`, or
    /// the API server would refuse it (see
    /// [`try_install_crd`](Self::try_install_crd)).
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
        if let Err(why) = self.try_install_crd(crd, version) {
            panic!("FakeCluster::install_crd: {why:?}");
        }
    }

    /// Installs `crd` like [`install_crd`](Self::install_crd), or returns
    /// every reason kube-apiserver 1.20 would refuse it (the schema node
    /// and the rule, never a value): a schema that is not structural (a
    /// node without a type, `properties` beside `additionalProperties`,
    /// `uniqueItems`, `$ref`, types inside `anyOf`...) or a `default` the
    /// server would prune or that fails its own node (an empty string
    /// where the node is not nullable, as 1.20 reads it as null).
    ///
    /// ```
    /// use blue_testkit::FakeCluster;
    /// use serde_json::json;
    /// let crd = |comment: serde_json::Value| json!({
    ///     "spec": {"group": "example.com", "names": {"plural": "widgets"}, "versions": [{
    ///         "name": "v1",
    ///         "schema": {"openAPIV3Schema": {"type": "object", "properties": {
    ///             "spec": {"type": "object", "properties": {"comment": comment}},
    ///         }}},
    ///     }]},
    /// });
    /// let cluster = FakeCluster::new();
    /// let refused = cluster.try_install_crd(&crd(json!({"type": "string", "default": ""})), "v1");
    /// assert!(refused.unwrap_err()[0].contains("properties[comment].default"));
    /// let nullable = json!({"type": "string", "nullable": true, "default": ""});
    /// assert_eq!(cluster.try_install_crd(&crd(nullable), "v1"), Ok(()));
    /// ```
    pub fn try_install_crd(&self, crd: &Value, version: &str) -> Result<(), Vec<String>> {
        let (group, plural, schema) = schema::from_crd(crd, version).map_err(|why| vec![why])?;
        let errors = rules::check(schema.root());
        if !errors.is_empty() {
            return Err(errors);
        }
        self.lock().store.install(group, plural, schema);
        Ok(())
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
