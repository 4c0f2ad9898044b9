//! The `LocalConfigMap` package, [`LocalConfigMaps`]: one ConfigMap per
//! resource, a typed k8s-openapi `ConfigMap` read and written through the
//! pass's API handle (the controller's own transport, behind its fence).

use crate::configmap::{self, ConvergePlan, DeletePlan};
use crate::desired::{self, Desired, LocalConfigMapConfig};
use crate::instrumentation::Instrumentation;
use crate::sightings::Sightings;
use blue_kubernetes::config::Names;
use blue_kubernetes::crd::{CrdConfig, PrinterColumn};
use blue_kubernetes::package::{NoOutputs, UserFacingMessage, ValidationErrors};
use blue_kubernetes::related::{ObjectRef, Related};
use blue_kubernetes::resource::Intent;
use blue_kubernetes::{
    async_trait, CallbackResult, Context, Infrastructure, Observation, Outcome, ResourceSchema,
};
use blue_kubernetes_client::typed::TypedApi;
use blue_kubernetes_client::{ErrorKind, ResourceDescriptor};
use k8s_openapi::api::core::v1::ConfigMap;
use std::sync::Arc;

/// API group of `LocalConfigMap`.
pub const GROUP: &str = "examples.blue.dev";
/// API version of `LocalConfigMap`.
pub const VERSION: &str = "v1alpha1";
/// Plural resource name.
pub const PLURAL: &str = "localconfigmaps";
/// Kind.
pub const KIND: &str = "LocalConfigMap";
/// The finalizer this operator puts on its resources.
pub const FINALIZER: &str = "examples.blue.dev/infrastructure";
/// The annotation whose changed value asks for an early check.
pub const REQUEST_ANNOTATION: &str = "examples.blue.dev/reconcile-request";
/// The `spec.config` key that, when true, blocks destruction.
pub const DESTROY_PROTECTION_KEY: &str = "prevent-destroy";

/// The `LocalConfigMap` resource type.
pub fn descriptor() -> ResourceDescriptor {
    ResourceDescriptor::new(GROUP, VERSION, PLURAL, KIND)
}

/// ConfigMaps: the infrastructure, watched as a related kind.
pub fn config_map_kind() -> ResourceDescriptor {
    ResourceDescriptor::new("", "v1", "configmaps", "ConfigMap")
}

/// An infrastructure effect, reported for logging: what happened to the
/// ConfigMap of which `LocalConfigMap`. Names the resource by its metadata
/// only: no configuration value (not even the ConfigMap's name, which
/// comes from `spec.config`) and never data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// A ConfigMap was created.
    Created(ObjectRef),
    /// Our ConfigMap was replaced (new desired data, or drift repaired).
    Replaced(ObjectRef),
    /// Our ConfigMap was deleted.
    Deleted(ObjectRef),
    /// A ConfigMap with the desired name belongs to someone else.
    OwnershipConflict(ObjectRef),
}

impl std::fmt::Display for Effect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (what, t) = match self {
            Effect::Created(t) => ("configmap created", t),
            Effect::Replaced(t) => ("configmap updated", t),
            Effect::Deleted(t) => ("configmap deleted", t),
            Effect::OwnershipConflict(t) => ("configmap belongs to someone else; not touched", t),
        };
        write!(f, "localconfigmap {}/{}: {what}", t.namespace, t.name)
    }
}

/// Receives every [`Effect`].
pub type EffectSink = Arc<dyn Fn(&Effect) + Send + Sync>;

/// A ConfigMap with the desired name exists and is not ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the configmap exists and is owned by another resource (or by nobody)")]
pub struct OwnershipConflict;

/// What every callback gets: the typed config, the resource's metadata,
/// the API handle.
pub type Cx = Context<LocalConfigMapConfig>;

/// The `LocalConfigMap` package. `validate` and `identity` are pure;
/// `observe`, `converge` and `delete` are API requests, so no thread waits
/// on a subprocess.
pub struct LocalConfigMaps {
    descriptor: ResourceDescriptor,
    on_effect: EffectSink,
    aids: Instrumentation,
    seen: Sightings,
}

impl LocalConfigMaps {
    /// The package, telling `on_effect` every effect.
    pub fn new(on_effect: EffectSink) -> Self {
        Self {
            descriptor: descriptor(),
            on_effect,
            aids: Instrumentation::default(),
            seen: Sightings::default(),
        }
    }

    /// Registered for another descriptor (the binary's hidden test flags:
    /// what a mistyped group or version does at startup).
    pub fn on(self, descriptor: ResourceDescriptor) -> Self {
        Self { descriptor, ..self }
    }

    /// With test aids around `converge` and `delete` (see [`Instrumentation`]).
    pub fn with_aids(self, aids: Instrumentation) -> Self {
        Self { aids, ..self }
    }
}

impl Default for LocalConfigMaps {
    /// Effects go nowhere.
    fn default() -> Self {
        Self::new(Arc::new(|_: &Effect| {}))
    }
}

#[async_trait]
impl Infrastructure for LocalConfigMaps {
    type Config = LocalConfigMapConfig;
    type Outputs = NoOutputs;

    /// ConfigMaps are related: a deleted or edited one asks for a check of
    /// its owner at once, instead of at the next periodic check.
    fn schema(&self) -> ResourceSchema {
        let owned = Related::annotated(config_map_kind(), configmap::OWNER_NAME_ANNOTATION);
        ResourceSchema::new(self.descriptor.clone()).related(owned)
    }

    /// Every message is safe for the resource's users: each names a field
    /// of their own config and never echoes a value (they read it in the
    /// `InvalidConfiguration` Warning Event; status stays generic).
    async fn validate(&self, cx: &Cx) -> CallbackResult<ValidationErrors> {
        let messages = desired::validate(cx).into_iter();
        Ok(messages.map(UserFacingMessage::new).collect())
    }

    async fn identity(&self, cx: &Cx) -> CallbackResult<Vec<Option<String>>> {
        Ok(desired::identity(cx))
    }

    /// Reads the ConfigMap; see [`configmap::observe`]. When an effect will
    /// follow, the read is remembered for the `converge` or `delete` right
    /// after it.
    async fn observe(&self, cx: &Cx) -> CallbackResult<Observation<NoOutputs>> {
        let desired = desired::desired(cx)?;
        let existing = fetch(cx, &desired).await?;
        let observation = configmap::observe(existing.as_ref(), &desired);
        // Only a read an effect will follow is worth keeping: a periodic
        // check that finds everything matching keeps nothing.
        let effect_follows = match cx.intent() {
            Intent::Delete => observation.exists,
            _ => !(observation.exists && observation.matches),
        };
        match effect_follows {
            true => self.seen.remember(&desired, existing),
            false => drop(self.seen.take(&desired)),
        }
        Ok(observation)
    }

    /// Creates the ConfigMap, or replaces ours; a foreign one is an
    /// [`OwnershipConflict`] error, so the resource goes `Failed` and
    /// retries with backoff until someone removes or re-owns it.
    async fn converge(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        let body = self.on_latest(Write::Converge, cx);
        self.aids.around("converge", cx, body).await
    }

    /// Deletes the ConfigMap only if it is ours, with uid and
    /// resourceVersion preconditions; one already gone is success.
    async fn delete(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        let body = self.on_latest(Write::Delete, cx);
        self.aids.around("delete", cx, body).await
    }
}

/// The write a callback makes.
#[derive(Clone, Copy)]
enum Write {
    Converge,
    Delete,
}

impl LocalConfigMaps {
    /// Makes `write` from what `observe` just read of the ConfigMap, or else
    /// from a fresh read; if what `observe` read is outdated by the time of
    /// the write, once more from a fresh read (see [`crate::sightings`]).
    async fn on_latest(&self, write: Write, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        let desired = desired::desired(cx)?;
        if let Some(existing) = self.seen.take(&desired) {
            match self.write(write, cx, &desired, existing).await? {
                Err(e) if outdated(&e) => {}
                written => return Ok(written.map(|()| Outcome::done())?),
            }
        }
        let existing = fetch(cx, &desired).await?;
        self.write(write, cx, &desired, existing).await??;
        Ok(Outcome::done())
    }

    /// One write planned from `existing`; the outer error is the callback's,
    /// the inner one the write's. `create` fails if someone created the
    /// ConfigMap meanwhile, `replace` and `delete` carry what was read:
    /// none can overwrite a concurrent change.
    async fn write(
        &self,
        write: Write,
        cx: &Cx,
        desired: &Desired,
        existing: Option<ConfigMap>,
    ) -> CallbackResult<Result<(), blue_kubernetes_client::Error>> {
        let (metadata, config_maps) = (cx.metadata(), config_maps(cx, desired)?);
        let target = ObjectRef::new(&metadata.namespace, &metadata.name);
        let (written, effect) = match write {
            Write::Converge => match configmap::plan_converge(existing.as_ref(), desired) {
                ConvergePlan::Create(m) => (
                    config_maps.create(&m).await.map(drop),
                    Effect::Created(target),
                ),
                ConvergePlan::Replace(m) => (
                    config_maps.replace(&m).await.map(drop),
                    Effect::Replaced(target),
                ),
                ConvergePlan::OwnershipConflict => {
                    (self.on_effect)(&Effect::OwnershipConflict(target));
                    return Err(OwnershipConflict.into());
                }
            },
            Write::Delete => {
                let DeletePlan::Delete(exactly) =
                    configmap::plan_delete(existing.as_ref(), desired)
                else {
                    return Ok(Ok(()));
                };
                let deleted = match config_maps.delete(&desired.name, &exactly).await {
                    Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
                    deleted => deleted,
                };
                (deleted, Effect::Deleted(target))
            }
        };
        Ok(written.map(|()| (self.on_effect)(&effect)))
    }
}

/// A write planned from a sighting failed because the ConfigMap changed
/// since (409 Conflict; AlreadyExists, which is also a 409 but classified
/// `Other`; or NotFound for a replace): worth one fresh read.
fn outdated(e: &blue_kubernetes_client::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::Conflict | ErrorKind::NotFound | ErrorKind::Other
    )
}

/// The ConfigMap at the desired name, if any.
async fn fetch(cx: &Cx, desired: &Desired) -> CallbackResult<Option<ConfigMap>> {
    Ok(config_maps(cx, desired)?.get_opt(&desired.name).await?)
}

/// The ConfigMaps of the desired namespace (a validated name), through the
/// pass's API handle.
fn config_maps<'a>(cx: &'a Cx, desired: &Desired) -> CallbackResult<TypedApi<'a, ConfigMap>> {
    let api = cx.api().ok_or("no API handle (only identity has none)")?;
    Ok(TypedApi::namespaced(api, &desired.namespace))
}

/// The controller's names for this operator, in its own domain (the
/// API group): the finalizer [`FINALIZER`], the request annotation
/// [`REQUEST_ANNOTATION`] and the destroy-protection key
/// [`DESTROY_PROTECTION_KEY`], so it never releases another operator's
/// resources and a user reading `metadata.finalizers` sees whose it is.
pub fn names() -> Names {
    Names::for_domain(GROUP)
}

/// The `LocalConfigMap` CRD, as `local-configmap-operator crd` prints it and
/// `manifests/crd.yaml` holds it. `cel: false` leaves out the CEL
/// immutability rules, for Kubernetes before 1.25.
///
/// It needs no client: only the package's declaration and config type.
pub fn crd(cel: bool) -> Result<serde_json::Value, blue_kubernetes::Error> {
    let schema = ResourceSchema::of(&LocalConfigMaps::default());
    blue_kubernetes::crd::generate(&schema, &crd_options(cel))
}

/// What [`crd`] adds beyond the types: names, CEL rules, short names,
/// category, immutable fields, columns.
pub fn crd_options(cel: bool) -> CrdConfig {
    CrdConfig::default()
        .with_names(names())
        .with_cel(cel)
        .with_short_names(vec!["lcm".into()])
        .with_categories(vec!["infrastructure".into()])
        .with_immutable_config(vec!["configMapName".into()])
        .with_printer_columns(vec![PrinterColumn::wide(
            "ConfigMap",
            ".spec.config.configMapName",
        )])
}

/// [`crd`] as the YAML document `manifests/crd.yaml` holds.
pub fn crd_yaml(cel: bool) -> Result<String, blue_kubernetes::Error> {
    let header = "# Generated by `local-configmap-operator crd`: do not edit.\n\
                  # `crd --no-cel` leaves out the CEL rules (Kubernetes < 1.25).\n";
    Ok(format!(
        "{header}{}",
        blue_kubernetes::crd::to_yaml(&crd(cel)?)
    ))
}

#[cfg(test)]
mod tests;
