//! The `LocalConfigMap` package: its resource type and the callbacks that
//! manage the ConfigMap, a typed k8s-openapi `ConfigMap` read and written
//! through the client's [`TypedApi`].
//!
//! Every callback shares one [`RawApi`], the same transport the controller
//! uses (per-call kubectl or the persistent proxy), so the context or
//! in-cluster credentials are decided once.

use crate::configmap::{self, ConvergePlan, DeletePlan};
use crate::desired::{self, Desired, LocalConfigMapConfig};
use crate::instrumentation::Instrumentation;
use crate::sightings::Sightings;
use blue_kubernetes::{
    CallbackResult, CrdOptions, Event, Names, Observation, Options, Package, PrinterColumn,
    Related, TypedPackageBuilder, UserFacingMessage, ValidationErrors, WorkflowOutcome,
};
use blue_kubernetes_client::typed::TypedApi;
use blue_kubernetes_client::{ErrorKind, RawApi, ResourceDescriptor};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;
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

/// An infrastructure effect, reported for logging. Names the resource by
/// its metadata only: no configuration value (not even the ConfigMap's
/// name, which comes from `spec.config`) and never data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// A ConfigMap was created.
    Created(Target),
    /// Our ConfigMap was replaced (new desired data, or drift repaired).
    Replaced(Target),
    /// Our ConfigMap was deleted.
    Deleted(Target),
    /// A ConfigMap with the desired name belongs to someone else.
    OwnershipConflict(Target),
}

/// The `LocalConfigMap` whose ConfigMap an [`Effect`] concerns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The resource's namespace.
    pub namespace: String,
    /// The resource's name.
    pub name: String,
}

impl Target {
    /// The resource in `opts`' snapshot.
    pub fn of(opts: &Options) -> Self {
        let meta = |k: &str| {
            opts.resource()["metadata"][k]
                .as_str()
                .unwrap_or("")
                .to_string()
        };
        Target {
            namespace: meta("namespace"),
            name: meta("name"),
        }
    }
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnershipConflict;

impl std::fmt::Display for OwnershipConflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the configmap exists and is owned by another resource (or by nobody)")
    }
}

impl std::error::Error for OwnershipConflict {}

/// Builds the `LocalConfigMap` package around a shared client. Its config
/// type is [`LocalConfigMapConfig`].
///
/// `validate` and `identity` are pure and synchronous; `observe`, `converge`
/// and `delete` are asynchronous API requests, so no blocking thread waits
/// on a subprocess.
pub fn package(
    client: Arc<dyn RawApi>,
    on_effect: EffectSink,
) -> Result<Package, blue_kubernetes::Error> {
    package_for(descriptor(), client, on_effect)
}

/// The package registered for another descriptor (tests use it to show
/// what a mistyped group or version does at startup).
pub fn package_for(
    descriptor: ResourceDescriptor,
    client: Arc<dyn RawApi>,
    on_effect: EffectSink,
) -> Result<Package, blue_kubernetes::Error> {
    instrumented(descriptor, client, on_effect, Instrumentation::default())
}

/// [`package_for`] with test aids around `converge` and `delete` (see
/// [`Instrumentation`]).
pub fn instrumented(
    descriptor: ResourceDescriptor,
    client: Arc<dyn RawApi>,
    on_effect: EffectSink,
    aids: Instrumentation,
) -> Result<Package, blue_kubernetes::Error> {
    let seen = Arc::new(Sightings::default());
    let (c1, c2, c3) = (client.clone(), client.clone(), client);
    let (s1, s2, s3) = (seen.clone(), seen.clone(), seen);
    let (e1, e2) = (on_effect.clone(), on_effect);
    let (a1, a2) = (aids.clone(), aids);
    declared(descriptor)
        // A deleted or edited ConfigMap asks for a check of its owner at
        // once, instead of at the next periodic check.
        .related(Related::annotated(
            config_map_kind(),
            configmap::OWNER_NAME_ANNOTATION,
        ))
        .validate(|config, opts| Ok(for_users(desired::validate(config, opts))))
        .identity(|config, opts| Ok(desired::identity(config, opts)))
        .observe_async(move |config, opts| {
            let (client, seen) = (c1.clone(), s1.clone());
            async move { observe(client.as_ref(), &seen, &config, &opts).await }
        })
        .converge_async(move |config, opts| {
            let (client, seen, sink, aids) = (c2.clone(), s2.clone(), e1.clone(), a1.clone());
            async move {
                let body = converge(client.as_ref(), &seen, &config, &opts, sink.as_ref());
                aids.around("converge", &config, &opts, body).await
            }
        })
        .delete_async(move |config, opts| {
            let (client, seen, sink, aids) = (c3.clone(), s3.clone(), e2.clone(), a2.clone());
            async move {
                let body = delete(client.as_ref(), &seen, &config, &opts, sink.as_ref());
                aids.around("delete", &config, &opts, body).await
            }
        })
        .build()
}

/// The package as far as its CRD goes: the resource type and its config
/// type, before any callback. [`crd`] is generated from it alone and
/// [`package_for`] adds the callbacks to it, so the two cannot disagree.
fn declared(descriptor: ResourceDescriptor) -> TypedPackageBuilder<LocalConfigMapConfig> {
    Package::builder(descriptor).config::<LocalConfigMapConfig>()
}

/// Every validation message, marked safe for the resource's users: each
/// names a field of their own config and never echoes a value, so they may
/// read it (in the `InvalidConfiguration` Warning Event; status stays
/// generic).
pub fn for_users(messages: Vec<String>) -> ValidationErrors {
    let mut errors = ValidationErrors::new();
    for message in messages {
        errors.push_user_facing(UserFacingMessage::new(message));
    }
    errors
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
/// It needs no client: only the descriptor and the config type.
pub fn crd(cel: bool) -> Result<serde_json::Value, blue_kubernetes::Error> {
    blue_kubernetes::crd(&declared(descriptor()), &crd_options(cel))
}

/// What [`crd`] adds beyond the types: names, CEL rules, short names,
/// category, immutable fields, columns.
pub fn crd_options(cel: bool) -> CrdOptions {
    CrdOptions::default()
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
    Ok(format!("{header}{}", blue_kubernetes::to_yaml(&crd(cel)?)))
}

/// `observe`: reads the ConfigMap; see [`configmap::observe`]. When an
/// effect will follow, the read is remembered in `seen` for the `converge`
/// or `delete` right after it.
pub async fn observe(
    client: &dyn RawApi,
    seen: &Sightings,
    config: &LocalConfigMapConfig,
    opts: &Options,
) -> CallbackResult<Observation> {
    let desired = desired::desired(config, opts)?;
    let existing = fetch(client, &desired).await?;
    let observation = configmap::observe(existing.as_ref(), &desired);
    // Only a read an effect will follow is worth keeping: a periodic check
    // that finds everything matching keeps nothing.
    let key = sighting_key(opts, &desired);
    let effect_follows = match opts.event() {
        Event::Delete => observation.exists,
        _ => !(observation.exists && observation.matches),
    };
    match effect_follows {
        true => seen.remember(key, existing),
        false => drop(seen.take(&key)),
    }
    Ok(observation)
}

/// `converge`: creates the ConfigMap, or replaces ours; a foreign one is an
/// [`OwnershipConflict`] error, so the resource goes `Failed` and retries
/// with backoff until someone removes or re-owns it. Acts on what `observe`
/// just read, if it did (see [`crate::sightings`]).
pub async fn converge(
    client: &dyn RawApi,
    seen: &Sightings,
    config: &LocalConfigMapConfig,
    opts: &Options,
    on_effect: &(dyn Fn(&Effect) + Send + Sync),
) -> CallbackResult<WorkflowOutcome> {
    let desired = desired::desired(config, opts)?;
    on_latest(Write::Converge, client, seen, opts, &desired, on_effect).await
}

/// One converge write planned from `existing`; the outer error is the
/// callback's, the inner one the write's.
async fn converge_from(
    client: &dyn RawApi,
    desired: &Desired,
    existing: Option<ConfigMap>,
    opts: &Options,
    on_effect: &(dyn Fn(&Effect) + Send + Sync),
) -> CallbackResult<Result<WorkflowOutcome, blue_kubernetes_client::Error>> {
    let target = Target::of(opts);
    let config_maps = config_maps(client, desired);
    // `create` fails if someone created it meanwhile and `replace` carries the
    // resourceVersion we read: neither can overwrite a concurrent change.
    let (operation, written, effect) = match configmap::plan_converge(existing.as_ref(), desired) {
        ConvergePlan::Create(m) => (
            "create",
            config_maps.create(&m).await,
            Effect::Created(target),
        ),
        ConvergePlan::Replace(m) => (
            "replace",
            config_maps.replace(&m).await,
            Effect::Replaced(target),
        ),
        ConvergePlan::OwnershipConflict => {
            on_effect(&Effect::OwnershipConflict(target));
            return Err(OwnershipConflict.into());
        }
    };
    Ok(written.map(|_| {
        on_effect(&effect);
        outcome(operation)
    }))
}

/// `delete`: deletes the ConfigMap only if it is ours, with uid and
/// resourceVersion preconditions; a ConfigMap already gone is success.
/// Acts on what `observe` just read, if it did (see [`crate::sightings`]).
pub async fn delete(
    client: &dyn RawApi,
    seen: &Sightings,
    config: &LocalConfigMapConfig,
    opts: &Options,
    on_effect: &(dyn Fn(&Effect) + Send + Sync),
) -> CallbackResult<WorkflowOutcome> {
    let desired = desired::desired(config, opts)?;
    on_latest(Write::Delete, client, seen, opts, &desired, on_effect).await
}

/// One delete planned from `existing`, errors as in [`converge_from`].
async fn delete_from(
    client: &dyn RawApi,
    desired: &Desired,
    existing: Option<ConfigMap>,
    opts: &Options,
    on_effect: &(dyn Fn(&Effect) + Send + Sync),
) -> CallbackResult<Result<WorkflowOutcome, blue_kubernetes_client::Error>> {
    let DeletePlan::Delete(exactly) = configmap::plan_delete(existing.as_ref(), desired) else {
        return Ok(Ok(outcome("none")));
    };
    match config_maps(client, desired)
        .delete(&desired.name, &exactly)
        .await
    {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Ok(Err(e)),
    }
    on_effect(&Effect::Deleted(Target::of(opts)));
    Ok(Ok(outcome("delete")))
}

/// The write a callback makes.
#[derive(Clone, Copy)]
enum Write {
    Converge,
    Delete,
}

/// Makes `write` from what `observe` just read of the ConfigMap, or else
/// from a fresh read; if what `observe` read is outdated by the time of the
/// write, once more from a fresh read.
async fn on_latest(
    write: Write,
    client: &dyn RawApi,
    seen: &Sightings,
    opts: &Options,
    desired: &Desired,
    on_effect: &(dyn Fn(&Effect) + Send + Sync),
) -> CallbackResult<WorkflowOutcome> {
    let act = async |existing| match write {
        Write::Converge => converge_from(client, desired, existing, opts, on_effect).await,
        Write::Delete => delete_from(client, desired, existing, opts, on_effect).await,
    };
    if let Some(existing) = seen.take(&sighting_key(opts, desired)) {
        match act(existing).await? {
            Err(e) if outdated(&e) => {}
            done => return Ok(done?),
        }
    }
    Ok(act(fetch(client, desired).await?).await??)
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

/// Whose read of which ConfigMap a sighting is.
fn sighting_key(opts: &Options, desired: &Desired) -> (String, String, String) {
    let uid = opts.resource()["metadata"]["uid"].as_str().unwrap_or("");
    (
        uid.to_string(),
        desired.namespace.clone(),
        desired.name.clone(),
    )
}

/// The ConfigMap at the desired name, if any.
async fn fetch(client: &dyn RawApi, desired: &Desired) -> CallbackResult<Option<ConfigMap>> {
    Ok(config_maps(client, desired).get_opt(&desired.name).await?)
}

/// The ConfigMaps of the desired namespace (a validated name).
fn config_maps<'a>(client: &'a dyn RawApi, desired: &Desired) -> TypedApi<'a, ConfigMap> {
    TypedApi::namespaced(client, &desired.namespace)
}

fn outcome(action: &str) -> WorkflowOutcome {
    let mut map = WorkflowOutcome::new();
    map.insert("action".into(), json!(action));
    map
}

#[cfg(test)]
mod tests;
