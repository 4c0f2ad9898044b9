//! The `LocalConfigMap` package, [`LocalConfigMaps`]: one ConfigMap per
//! resource, a typed k8s-openapi `ConfigMap` written through the pass's API
//! handle (the controller's own transport, behind its fence) and read from
//! the controller's cache of our ConfigMaps, which sees our own writes: a
//! healthy periodic check makes no request at all.

use crate::configmap::{self, ConvergePlan, DeletePlan};
use crate::desired::{self, ConfigMapSpec, Desired, LocalConfigMapConfig};
use crate::test_hooks::TestHooks;
use blue_kubernetes::config::Names;
use blue_kubernetes::crd::{CrdConfig, PrinterColumn};
use blue_kubernetes::package::{NoOutputs, UserFacingMessage, ValidationErrors};
use blue_kubernetes::related::Related;
use blue_kubernetes::versions::Versions;
use blue_kubernetes::{
    async_trait, CallbackResult, Context, IdentityContext, Infrastructure, Observation, Outcome,
    Package, ResourceSchema,
};
use blue_kubernetes_client::typed::TypedApi;
use blue_kubernetes_client::{Error, ErrorKind, ResourceDescriptor};
use k8s_openapi::api::core::v1::ConfigMap;
use std::marker::PhantomData;

/// The API group of `LocalConfigMap`, and the domain of this operator's
/// names.
pub const GROUP: &str = "examples.blue.dev";

/// The `LocalConfigMap` resource type (at `v1alpha1`, this release's
/// stored version).
pub fn descriptor() -> ResourceDescriptor {
    descriptor_at(LocalConfigMapConfig::VERSION)
}

/// The `LocalConfigMap` resource type at `version`.
pub fn descriptor_at(version: &str) -> ResourceDescriptor {
    ResourceDescriptor::new(GROUP, version, "localconfigmaps", "LocalConfigMap")
}

/// The controller's names in this operator's own domain (the finalizer
/// `examples.blue.dev/infrastructure`, the request annotation
/// `examples.blue.dev/reconcile-request`, the destroy-protection key
/// `prevent-destroy`), so it never releases another operator's resources
/// and a user reading `metadata.finalizers` sees whose it is.
pub fn names() -> Names {
    Names::for_domain(GROUP)
}

/// What the CRD adds beyond the types: names, short name, category, a
/// column (`crd --no-cel` turns the CEL rules of the schema's immutable
/// fields off; the controller enforces them either way).
pub fn crd_options() -> CrdConfig {
    crd_options_of::<LocalConfigMapConfig>()
}

/// [`crd_options`] for the config `C` is stored as (its ConfigMap column
/// reads `C`'s name field).
pub fn crd_options_of<C: ConfigMapSpec>() -> CrdConfig {
    CrdConfig::default()
        .with_names(names())
        .with_short_names(vec!["lcm".into()])
        .with_categories(vec!["infrastructure".into()])
        .with_printer_columns(vec![PrinterColumn::wide(
            "ConfigMap",
            &format!(".spec.config.{}", C::NAME_FIELD),
        )])
}

/// A ConfigMap with the desired name exists and is not ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the configmap exists and is owned by another resource (or by nobody)")]
pub struct OwnershipConflict;

/// What every callback gets: the typed config, the resource's metadata,
/// the API handle.
pub type Cx<C = LocalConfigMapConfig> = Context<C>;

/// The `LocalConfigMap` package with its config stored as `C`. `validate`
/// and `identity` are pure; `observe`, `converge` and `delete` are API
/// requests, so no thread waits on a subprocess.
pub struct ConfigMaps<C> {
    hooks: TestHooks,
    config: PhantomData<fn() -> C>,
}

/// This release's package: stored at `v1alpha1`, the only version.
pub type LocalConfigMaps = ConfigMaps<LocalConfigMapConfig>;

/// The next release's package: stored at `v1beta1`, serving `v1alpha1`
/// too (see [`crate::v1beta1`]).
pub type LocalConfigMapsV1beta1 = ConfigMaps<crate::v1beta1::LocalConfigMapConfigV1beta1>;

impl<C> Default for ConfigMaps<C> {
    fn default() -> Self {
        Self {
            hooks: TestHooks::default(),
            config: PhantomData,
        }
    }
}

impl<C: ConfigMapSpec> ConfigMaps<C> {
    /// The package with the project's own [`TestHooks`] on, registered
    /// for the hooks' group and version (the type's schema, the CRD's,
    /// keeps the default ones).
    pub fn with_test_hooks(hooks: TestHooks) -> Result<Package, blue_kubernetes::Error> {
        let schema = declared::<C>(hooks.descriptor(descriptor_at(C::VERSION)));
        let package = Self {
            hooks,
            config: PhantomData,
        };
        Package::with_schema(package, schema)
    }
}

/// The package's declaration for resources of type `resource`.
fn declared<C: ConfigMapSpec>(resource: ResourceDescriptor) -> ResourceSchema {
    let ours = format!("{}={}", configmap::MANAGED_BY_LABEL, configmap::MANAGED_BY);
    let owned = Related::annotated(config_maps(), configmap::OWNER_NAME_ANNOTATION);
    let owned = owned.selector(ours).cached();
    ResourceSchema::new(resource)
        .related(owned)
        // Enforced by the controller on every server, and by a CEL rule
        // where the server has CEL.
        .immutable(C::NAME_FIELD)
}

#[async_trait]
impl<C: ConfigMapSpec> Infrastructure for ConfigMaps<C> {
    type Config = C;
    type Outputs = NoOutputs;

    /// Our ConfigMaps (labelled as ours) are related and cached: a deleted
    /// or edited one asks for a check of its owner at once, and callbacks
    /// read them from the controller's cache.
    fn schema() -> ResourceSchema {
        declared::<C>(descriptor_at(C::VERSION))
    }

    /// Whatever `C` serves besides itself.
    fn versions() -> Versions<C> {
        C::versions()
    }

    /// Every message is safe for the resource's users: each names a field
    /// of their own config and never echoes a value (they read it in the
    /// `InvalidConfiguration` Warning Event; status stays generic).
    async fn validate(&self, cx: &Cx<C>) -> CallbackResult<ValidationErrors> {
        let messages = desired::validate(cx).into_iter();
        Ok(messages.map(UserFacingMessage::new).collect())
    }

    async fn identity(&self, cx: &IdentityContext<C>) -> CallbackResult<Vec<Option<String>>> {
        Ok(desired::identity(cx))
    }

    /// Reads the ConfigMap from the cache; see [`configmap::observe`].
    async fn observe(&self, cx: &Cx<C>) -> CallbackResult<Observation<NoOutputs>> {
        let desired = desired::desired(cx)?;
        let existing = cached(cx, &desired).await?;
        Ok(configmap::observe(existing.as_ref(), &desired))
    }

    /// Creates the ConfigMap, or replaces ours; a foreign one is an
    /// [`OwnershipConflict`] error, so the resource goes `Failed` and
    /// retries with backoff until someone removes or re-owns it.
    async fn converge(&self, cx: &Cx<C>) -> CallbackResult<Outcome<NoOutputs>> {
        let body = self.on_latest(Write::Converge, cx);
        self.hooks.around("converge", cx, body).await
    }

    /// Deletes the ConfigMap only if it is ours, with uid and
    /// resourceVersion preconditions; one already gone is success.
    async fn delete(&self, cx: &Cx<C>) -> CallbackResult<Outcome<NoOutputs>> {
        let body = self.on_latest(Write::Delete, cx);
        self.hooks.around("delete", cx, body).await
    }
}

/// The write a callback makes.
#[derive(Clone, Copy)]
enum Write {
    Converge,
    Delete,
}

impl<C: ConfigMapSpec> ConfigMaps<C> {
    /// Makes `write` from the cached ConfigMap; if that is outdated by the
    /// time of the write (someone else's change still on its way), once
    /// more from a read of the API server. The write is guarded by what it
    /// was planned from, so an outdated plan never overwrites anything.
    async fn on_latest(&self, write: Write, cx: &Cx<C>) -> CallbackResult<Outcome<NoOutputs>> {
        let desired = desired::desired(cx)?;
        let existing = cached(cx, &desired).await?;
        if let Err(e) = self.write(write, cx, &desired, existing).await? {
            if !outdated(&e) {
                return Err(e.into());
            }
            let existing = typed(cx, &desired)?.get_opt(&desired.name).await?;
            self.write(write, cx, &desired, existing).await??;
        }
        Ok(Outcome::done())
    }

    /// One write planned from `existing`; the outer error is the callback's,
    /// the inner one the write's. `create` fails if someone created the
    /// ConfigMap meanwhile, `replace` and `delete` carry what was read:
    /// none can overwrite a concurrent change.
    async fn write(
        &self,
        write: Write,
        cx: &Cx<C>,
        desired: &Desired,
        existing: Option<ConfigMap>,
    ) -> CallbackResult<Result<(), blue_kubernetes_client::Error>> {
        let config_maps = typed(cx, desired)?;
        let (written, effect) = match write {
            Write::Converge => match configmap::plan_converge(existing.as_ref(), desired) {
                ConvergePlan::Create(m) => (config_maps.create(&m).await.map(drop), "created"),
                ConvergePlan::Replace(m) => (config_maps.replace(&m).await.map(drop), "updated"),
                ConvergePlan::OwnershipConflict => {
                    log_effect(cx, "belongs to someone else; not touched");
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
                (deleted, "deleted")
            }
        };
        Ok(written.map(|()| log_effect(cx, effect)))
    }
}

/// Logs what happened to the ConfigMap, naming the resource by its
/// metadata only: no configuration value (not even the ConfigMap's name,
/// which comes from `spec.config`) and never data.
fn log_effect<C>(cx: &Cx<C>, what: &str) {
    let metadata = cx.metadata();
    let (namespace, name) = (&metadata.namespace, &metadata.name);
    tracing::info!("localconfigmap {namespace}/{name}: configmap {what}");
}

/// A write planned from the cache failed because the ConfigMap changed
/// since (409 Conflict; AlreadyExists, which is also a 409 but classified
/// `Other`; or NotFound for a replace): worth one read of the API server.
fn outdated(e: &Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::Conflict | ErrorKind::NotFound | ErrorKind::Other
    )
}

fn config_maps() -> ResourceDescriptor {
    ResourceDescriptor::new("", "v1", "configmaps", "ConfigMap")
}

/// The ConfigMap at the desired name, if any, from the controller's cache
/// (one of someone else's, not labelled as ours, is not there: creating
/// ours then fails and the read after it finds theirs).
async fn cached<C>(cx: &Cx<C>, desired: &Desired) -> CallbackResult<Option<ConfigMap>> {
    let api = cx.api().ok_or("no API handle (only identity has none)")?;
    let found = api
        .cached(&config_maps(), &desired.namespace, &desired.name)
        .await?;
    Ok(found.map(serde_json::from_value).transpose()?)
}

/// The ConfigMaps of the desired namespace (a validated name), through the
/// pass's API handle.
fn typed<'a, C>(cx: &'a Cx<C>, desired: &Desired) -> CallbackResult<TypedApi<'a, ConfigMap>> {
    let api = cx.api().ok_or("no API handle (only identity has none)")?;
    Ok(TypedApi::namespaced(api, &desired.namespace))
}

#[cfg(test)]
mod tests;
