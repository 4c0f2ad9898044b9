//! The recording package as users write packages: an [`Infrastructure`],
//! its config and outputs any JSON objects (`spec.config` and
//! `status.outputs` keep unknown fields, as the closure form's do).

use super::{Call, Callback, Ended, FakeInfra, PLANTED_SECRET};
use blue_kubernetes::package::{CallbackError, ValidationErrors};
use blue_kubernetes::{
    async_trait, CallbackResult, Context, IdentityContext, Infrastructure, Observation, Outcome,
    Package, ResourceSchema,
};
use blue_kubernetes_client::ResourceDescriptor;
use serde_json::{Map, Value};

/// Any JSON object: the recording package's config and outputs.
type Fields = Map<String, Value>;

impl FakeInfra {
    /// A package for `descriptor` over this infrastructure.
    pub fn package(&self, descriptor: ResourceDescriptor) -> Package {
        self.package_with(descriptor, |schema| schema)
    }

    /// The package, declared by `declare` applied to its schema: related
    /// kinds, references, a connection Secret.
    ///
    /// ```
    /// use blue_kubernetes::related::Related;
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// let infra = blue_testkit::FakeInfra::new();
    /// let config_maps = ResourceDescriptor::new("", "v1", "configmaps", "ConfigMap");
    /// let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// let package = infra.package_with(widgets, |s| s.related(Related::owned(config_maps)));
    /// # let _ = package;
    /// ```
    pub fn package_with(
        &self,
        descriptor: ResourceDescriptor,
        declare: impl FnOnce(ResourceSchema) -> ResourceSchema,
    ) -> Package {
        self.typed(declare(ResourceSchema::new(descriptor)), false)
    }

    /// A package whose `converge` runs [`CONVERGE_STEPS`](crate::CONVERGE_STEPS)
    /// and whose `delete` runs [`DELETE_STEPS`](crate::DELETE_STEPS) as
    /// durable steps.
    pub fn stepped_package(&self, descriptor: ResourceDescriptor) -> Package {
        self.typed(ResourceSchema::new(descriptor).steps(), true)
    }

    fn typed(&self, schema: ResourceSchema, stepped: bool) -> Package {
        let recording = Recording {
            infra: self.clone(),
            stepped,
        };
        Package::with_schema(recording, schema).expect("a map is structural")
    }
}

/// The recording callbacks over a [`FakeInfra`].
struct Recording {
    infra: FakeInfra,
    stepped: bool,
}

type Cx = Context<Fields>;

#[async_trait]
impl Infrastructure for Recording {
    type Config = Fields;
    type Outputs = Fields;

    /// Never read: each package is built with the schema it is given.
    fn schema() -> ResourceSchema {
        let d =
            ResourceDescriptor::new("blue-testkit.example.com", "v1", "recordings", "Recording");
        ResourceSchema::new(d)
    }

    async fn validate(&self, cx: &Cx) -> CallbackResult<ValidationErrors> {
        Ok(self.infra.validate(&Call::typed(cx))?.into())
    }

    async fn identity(&self, cx: &IdentityContext<Fields>) -> CallbackResult<Vec<Option<String>>> {
        self.infra.identity_of(cx.profile(), "")
    }

    async fn observe(&self, cx: &Cx) -> CallbackResult<Observation<Fields>> {
        let (observed, outputs) = self.infra.observe(&Call::typed(cx), self.stepped)?;
        Ok(match outputs {
            Some(Value::Object(outputs)) => observed.with(outputs),
            _ => observed,
        })
    }

    async fn converge(&self, cx: &Cx) -> CallbackResult<Outcome<Fields>> {
        let call = Call::typed(cx);
        outcome(match self.stepped {
            true => self.infra.converge_steps(&call, cx.steps()).await,
            false => self.infra.run_effect(Callback::Converge, &call).await,
        })
    }

    async fn delete(&self, cx: &Cx) -> CallbackResult<Outcome<Fields>> {
        let call = Call::typed(cx);
        outcome(match self.stepped {
            true => self.infra.delete_steps(&call, cx.steps()).await,
            false => self.infra.run_effect(Callback::Delete, &call).await,
        })
    }
}

impl<'a> Call<'a> {
    /// What a trait package reads: its context.
    fn typed(cx: &'a Cx) -> Self {
        let config = cx.config();
        Self {
            profile: cx.profile(),
            event: cx.intent().as_str(),
            uid: &cx.metadata().uid,
            generation: cx.metadata().generation,
            desired: config.get("value").cloned().unwrap_or(Value::Null),
            invalid: config.get("invalid") == Some(&Value::Bool(true)),
        }
    }
}

/// An ended effect as a trait package returns it: with no exit code, a
/// scripted non-zero exit is a failure.
fn outcome(ended: Result<Ended, CallbackError>) -> CallbackResult<Outcome<Fields>> {
    match ended? {
        Ended::Exit(code) if code != 0 => {
            Err(format!("exited with {code}: {PLANTED_SECRET}").into())
        }
        _ => Ok(Outcome::done()),
    }
}
