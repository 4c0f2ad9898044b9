//! Admission requests judged as the webhook would, without a server.

use super::TestOperator;
use blue_kubernetes::admission::{Admission, AdmissionRequest, Verdict};
use serde_json::Value;

impl TestOperator {
    /// The current controller's admission webhook, to judge requests
    /// without a server.
    pub fn admission(&self) -> Admission {
        Admission::new(&self.controller)
    }

    /// What the admission webhook answers to creating the first package's
    /// resource `name` with `spec` (nothing is created).
    ///
    /// ```
    /// # use blue_kubernetes::package::{UserFacingMessage, ValidationErrors, WorkflowOutcome};
    /// # use blue_kubernetes::{Observation, Package};
    /// # use blue_kubernetes_client::ResourceDescriptor;
    /// use blue_testkit::TestOperator;
    /// use serde_json::json;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// let package = Package::builder(d)
    ///     .validate(|opts| Ok(match opts.get("size").and_then(|s| s.as_u64()) {
    ///         Some(1..=64) => ValidationErrors::new(),
    ///         _ => UserFacingMessage::new("must be 1..=64").with_field("spec.config.size").into(),
    ///     }))
    /// #   .identity(|opts| Ok(vec![Some(opts.profile().to_string())]))
    /// #   .observe(|_| Ok(Observation::ABSENT))
    /// #   .converge(|_| Ok(WorkflowOutcome::new()))
    /// #   .delete(|_| Ok(WorkflowOutcome::new()))
    ///     .build()
    ///     .unwrap();
    /// let op = TestOperator::new(package);
    /// let verdict = op.admit_create("web", json!({"config": {"size": 99}})).await;
    /// assert_eq!(verdict.message(), "spec.config.size: must be 1..=64");
    /// assert!(op.get("web").is_none());
    /// # }
    /// ```
    pub async fn admit_create(&self, name: &str, spec: Value) -> Verdict {
        let d = self.descriptor();
        let object = serde_json::json!({
            "apiVersion": d.api_version(),
            "kind": d.kind,
            "metadata": {"name": name, "namespace": self.setup.namespace},
            "spec": spec,
        });
        self.admission()
            .judge(&AdmissionRequest::create(object))
            .await
    }

    /// What the admission webhook answers to editing resource `name`'s
    /// spec with `f` (the stored object is the old one; nothing changes).
    /// A resource that does not exist is a bad request.
    pub async fn admit_edit(&self, name: &str, f: impl FnOnce(&mut Value)) -> Verdict {
        let Some(old) = self.get(name) else {
            return Verdict::BadRequest(format!("no resource {name}"));
        };
        let mut new = old.clone();
        f(&mut new["spec"]);
        self.admission()
            .judge(&AdmissionRequest::update(old, new))
            .await
    }
}
