//! Older API versions as the API server serves them, without a server:
//! objects converted as the operator's conversion webhook converts them,
//! read and edited by a client of an older version.

use super::TestOperator;
use blue_kubernetes::versions::Conversion;
use serde_json::{json, Value};

impl TestOperator {
    /// The current controller's conversions: what its webhook server
    /// answers at [`Conversion::PATH`].
    pub fn conversion(&self) -> Conversion {
        Conversion::of(self.controller())
    }

    /// `object` (of any package's kind, at any version it serves) at
    /// `version` of its group, as the webhook converts it; the review's
    /// failure message when it refuses.
    pub fn convert(&self, object: &Value, version: &str) -> Result<Value, String> {
        let group = object["apiVersion"]
            .as_str()
            .and_then(|v| v.rsplit_once('/'))
            .map_or("", |(group, _)| group);
        let review = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {
                "uid": "test-conversion",
                "desiredAPIVersion": format!("{group}/{version}"),
                "objects": [object],
            },
        });
        let mut answer = self.conversion().review(review.to_string().as_bytes());
        let response = answer["response"].take();
        match response["result"]["status"].as_str() {
            Some("Success") => Ok(response["convertedObjects"][0].clone()),
            _ => Err(response["result"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string()),
        }
    }

    /// Resource `name` as a client of `version` reads it.
    ///
    /// # Panics
    /// If the conversion fails (a conversion never fails on an object the
    /// API server accepted).
    pub fn get_at(&self, name: &str, version: &str) -> Option<Value> {
        let stored = self.get(name)?;
        Some(self.convert(&stored, version).expect("a conversion"))
    }

    /// Edits resource `name` as a client of `version` does: it reads the
    /// object at `version`, `f` changes it, and the API server converts the
    /// write back to the stored version (only what conversion may change is
    /// taken: `spec` and the annotations). Returns the stored object.
    ///
    /// ```
    /// # use blue_kubernetes::{async_trait, package::NoOutputs, versions::Versions, *};
    /// # use blue_kubernetes_client::ResourceDescriptor;
    /// use blue_testkit::TestOperator;
    /// use serde_json::json;
    /// /// v1: `replicas` (was `size`) and a new `zone`.
    /// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// struct V1 { replicas: u32, #[serde(skip_serializing_if = "Option::is_none")] zone: Option<String> }
    /// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// struct V1alpha1 { size: u32 }
    /// impl From<&V1> for V1alpha1 { fn from(v: &V1) -> Self { Self { size: v.replicas } } }
    /// impl From<V1alpha1> for V1 { fn from(o: V1alpha1) -> Self { Self { replicas: o.size, zone: None } } }
    /// struct Widgets;
    /// #[async_trait]
    /// impl Infrastructure for Widgets {
    ///     type Config = V1;
    ///     type Outputs = NoOutputs;
    ///     fn schema() -> ResourceSchema {
    ///         ResourceSchema::new(ResourceDescriptor::new("example.com", "v1", "widgets", "Widget"))
    ///     }
    ///     fn versions() -> Versions<V1> { Versions::stored().served::<V1alpha1>("v1alpha1") }
    /// #   async fn observe(&self, _: &Context<V1>) -> CallbackResult<Observation<NoOutputs>> { Ok(Observation::ABSENT) }
    /// #   async fn converge(&self, _: &Context<V1>) -> CallbackResult<Outcome<NoOutputs>> { Ok(Outcome::done()) }
    /// #   async fn delete(&self, _: &Context<V1>) -> CallbackResult<Outcome<NoOutputs>> { Ok(Outcome::done()) }
    /// }
    /// let op = TestOperator::new(Package::new(Widgets).unwrap());
    /// op.create("w", json!({"config": {"replicas": 2, "zone": "eu-1"}}));
    /// assert_eq!(op.get_at("w", "v1alpha1").unwrap()["spec"]["config"], json!({"size": 2}));
    /// // An old client scales up; the zone it cannot see is kept.
    /// let stored = op.edit_at("w", "v1alpha1", |w| w["spec"]["config"]["size"] = json!(5));
    /// assert_eq!(stored["spec"]["config"], json!({"replicas": 5, "zone": "eu-1"}));
    /// ```
    ///
    /// # Panics
    /// If the resource does not exist or a conversion fails.
    pub fn edit_at(&self, name: &str, version: &str, f: impl FnOnce(&mut Value)) -> Value {
        let stored_version = self.descriptor().version.clone();
        let (d, namespace) = (self.descriptor(), self.namespace());
        self.cluster().edit(d, namespace, name, |stored| {
            let mut old = self.convert(stored, version).expect("a conversion");
            f(&mut old);
            let back = self.convert(&old, &stored_version).expect("a conversion");
            stored["spec"] = back["spec"].clone();
            match &back["metadata"]["annotations"] {
                Value::Object(annotations) if !annotations.is_empty() => {
                    stored["metadata"]["annotations"] = json!(annotations);
                }
                _ => {
                    if let Some(metadata) = stored["metadata"].as_object_mut() {
                        metadata.remove("annotations");
                    }
                }
            }
        })
    }
}
