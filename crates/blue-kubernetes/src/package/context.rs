//! What every callback of an [`Infrastructure`](crate::Infrastructure) is
//! handed: the typed config and everything else a pass knows about the
//! resource, without raw JSON; and what `identity` is handed
//! ([`IdentityContext`]): the part of that context that says which
//! infrastructure the resource is, and nothing that can change under it.

use crate::connection::Connection;
use crate::domain::names::Names;
use crate::domain::resource;
use crate::domain::resource::management_policy;
use crate::package::api::Api;
use crate::package::options::CallbackInput;
use crate::replicas::FencingToken;
use crate::resource::ManagementPolicy;
use crate::steps::Steps;
use blue_kubernetes_client::Client;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// The context of one callback: the resource's typed config `C`, its
/// metadata and management policy, the controller's clock, the
/// connection, the durable steps, the references' outputs, the fencing
/// token, a fenced Kubernetes API handle and the external name.
///
/// Cheap to clone (shared parts), so a callback may move a copy into
/// [`blocking`](crate::package::blocking) or a spawned task.
///
/// ```
/// # use blue_kubernetes::{resource::ManagementPolicy, Context};
/// # fn demo(cx: &Context<u32>) {
/// let size: &u32 = cx.config();
/// let name = cx.metadata().name.as_str();
/// let importing = cx.management_policy() == ManagementPolicy::Observe;
/// let now_ms = cx.now_ms();
/// let id = cx.external_name();
/// # let _ = (size, name, importing, now_ms, id);
/// # }
/// ```
pub struct Context<C> {
    config: Arc<C>,
    options: CallbackInput,
    /// Read from the snapshot on first use: the closure form never asks.
    metadata: Arc<OnceLock<Metadata>>,
}

impl<C> Clone for Context<C> {
    fn clone(&self) -> Self {
        Self {
            config: self.config.clone(),
            options: self.options.clone(),
            metadata: self.metadata.clone(),
        }
    }
}

impl<C> std::fmt::Debug for Context<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Neither the config nor the options: they may hold credentials.
        f.debug_struct("Context")
            .field("namespace", &self.metadata().namespace)
            .field("name", &self.metadata().name)
            .finish_non_exhaustive()
    }
}

/// The resource's metadata, as of the snapshot the pass acts on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metadata {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace` (empty for a cluster-scoped resource).
    pub namespace: String,
    /// `metadata.uid`.
    pub uid: String,
    /// `metadata.generation` (1 when absent).
    pub generation: i64,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
    /// `metadata.creationTimestamp` in milliseconds since the epoch, when set.
    pub created_ms: Option<u64>,
}

impl Metadata {
    fn of(resource: &Value) -> Self {
        let strings = |key: &str| -> BTreeMap<String, String> {
            resource::at(resource, &["metadata", key])
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                        .collect()
                })
                .unwrap_or_default()
        };
        Self {
            name: resource::name(resource).to_string(),
            namespace: resource::namespace(resource).to_string(),
            uid: resource::uid(resource).unwrap_or_default().to_string(),
            generation: resource::generation(resource),
            labels: strings("labels"),
            annotations: strings("annotations"),
            created_ms: resource::str_at(resource, &["metadata", "creationTimestamp"])
                .and_then(crate::domain::due::parse_ms),
        }
    }
}

impl<C: serde::de::DeserializeOwned> Context<C> {
    /// A context outside a controller, for testing a package's methods
    /// without one: the config decoded from `resource`'s `spec.config` (an
    /// error when it does not decode, where the controller would make the
    /// resource Invalid), the system clock, the given names, no connection,
    /// no steps (their `run` fails with
    /// [`StepError::Unavailable`](crate::steps::StepError::Unavailable)) and no
    /// API handle until [`with_api`](Self::with_api) gives one.
    ///
    /// ```
    /// use blue_kubernetes::{config::Names, Context};
    /// #[derive(serde::Deserialize)]
    /// struct WidgetConfig { size: u32 }
    /// let resource = serde_json::json!({
    ///     "metadata": {"name": "w", "namespace": "dev", "uid": "u-1"},
    ///     "spec": {"config": {"size": 3}},
    /// });
    /// let cx = Context::<WidgetConfig>::from_resource(&resource, Names::default()).unwrap();
    /// assert_eq!((cx.config().size, cx.metadata().uid.as_str()), (3, "u-1"));
    /// ```
    pub fn from_resource(resource: &Value, names: Names) -> Result<Self, serde_json::Error> {
        let options =
            CallbackInput::from_resource(resource).with_env(crate::clock::system_clock(), names);
        let config = crate::package::typed::decode_config::<C>(&options)?;
        Ok(Self::new(Arc::new(config), options))
    }
}

impl<C> Context<C> {
    pub(crate) fn new(config: Arc<C>, options: CallbackInput) -> Self {
        Self {
            config,
            options,
            metadata: Arc::default(),
        }
    }

    /// The same context with `client` as its API handle, as it is (no
    /// fence): for tests that call a package's methods over a fake
    /// client. In a controller, the handle is the pass's, fenced.
    pub fn with_api(self, client: Arc<dyn Client>) -> Self {
        Self::new(self.config, self.options.with_api(Api::new(client)))
    }

    /// The resource's `spec.config`, decoded into the package's config type.
    pub fn config(&self) -> &C {
        &self.config
    }

    /// The config, shared: for moving into a task or blocking thread.
    pub fn config_arc(&self) -> Arc<C> {
        self.config.clone()
    }

    /// The resource's metadata.
    pub fn metadata(&self) -> &Metadata {
        self.metadata
            .get_or_init(|| Metadata::of(self.options.resource()))
    }

    /// `spec.managementPolicy`: under [`ManagementPolicy::Observe`] only
    /// `observe` runs (import of existing infrastructure).
    pub fn management_policy(&self) -> ManagementPolicy {
        // Callbacks past `identity` run only once the common fields are
        // valid; `identity` may see a malformed one, read as the default.
        management_policy(self.options.resource()).unwrap_or(ManagementPolicy::Full)
    }

    /// The controller's clock, in milliseconds since the epoch
    /// ([`Config::now`](crate::Config::now): a test's fake clock reaches
    /// package code through it).
    pub fn now_ms(&self) -> u64 {
        self.options.now_ms()
    }

    /// What the resource asks for: create (or update), stop or delete.
    pub fn intent(&self) -> crate::resource::Intent {
        self.options.intent()
    }

    /// The profile (`spec.config.profile`, default `<namespace>--<name>`).
    pub fn profile(&self) -> &str {
        self.options.profile()
    }

    /// The resource's connection Secret, for a package that declares one
    /// ([`ResourceSchema::connection_secret`](crate::ResourceSchema::connection_secret)).
    pub fn connection(&self) -> Option<&Connection> {
        self.options.connection()
    }

    /// The durable steps of `converge` and `delete`; see
    /// [`CallbackInput::steps`].
    pub fn steps(&self) -> &Steps {
        self.options.steps()
    }

    /// The outputs of the Ready resource that reference field `field`
    /// names, decoded into that package's outputs type `O`; an error when
    /// the field names nothing Ready or the outputs are not an `O`.
    pub fn referenced<O: serde::de::DeserializeOwned>(
        &self,
        field: &str,
    ) -> Result<O, crate::package::result::CallbackError> {
        self.options.referenced_as(field)
    }

    /// The fencing token of the Lease this pass runs under; see
    /// [`CallbackInput::fencing_token`].
    pub fn fencing_token(&self) -> Option<FencingToken> {
        self.options.fencing_token()
    }

    /// The package's Kubernetes API handle, behind the pass's fence.
    /// `None` only in a context made outside a controller
    /// ([`from_resource`](Self::from_resource)) without
    /// [`with_api`](Self::with_api).
    pub fn api(&self) -> Option<&Api> {
        self.options.api()
    }

    /// The infrastructure's own ID: what a callback reported earlier
    /// (recorded by the controller as the resource's
    /// `<domain>/external-name` annotation), or what a user set there to
    /// import existing infrastructure. `None` until either happened.
    pub fn external_name(&self) -> Option<&str> {
        self.options.external_name()
    }
}

/// The context of [`Infrastructure::identity`](crate::Infrastructure::identity):
/// the resource's typed config `C`, its metadata, its profile and its
/// external name: what the resource itself says. Nothing else: not the outputs of the resources it references, nor the
/// connection, the steps, the clock, the external name or the API. An
/// identity is compared with the one recorded on every pass; computed
/// from something that changes while the resource lives (a referenced
/// resource's outputs are gone while that resource is deleted), it would
/// make the resource `Invalid` and hold its deletion.
///
/// ```
/// use blue_kubernetes::{config::Names, Context, IdentityContext};
/// #[derive(serde::Deserialize)]
/// struct RecordConfig { zone: String }
/// let resource = serde_json::json!({
///     "metadata": {"name": "www", "namespace": "dns"},
///     "spec": {"config": {"zone": "example.org"}},
/// });
/// let cx: IdentityContext<RecordConfig> =
///     Context::from_resource(&resource, Names::default()).unwrap().into();
/// assert_eq!((cx.config().zone.as_str(), cx.profile()), ("example.org", "dns--www"));
/// ```
///
/// What a referenced resource reports is not there to read, so an identity
/// cannot be computed from it:
///
/// ```compile_fail,E0599
/// use blue_kubernetes::IdentityContext;
/// #[derive(serde::Deserialize)]
/// struct ZoneOutputs { id: String }
/// fn identity(cx: &IdentityContext<()>) -> Vec<Option<String>> {
///     let zone: ZoneOutputs = cx.referenced("zoneRef").unwrap();
///     vec![Some(zone.id)]
/// }
/// ```
pub struct IdentityContext<C> {
    cx: Context<C>,
}

impl<C> IdentityContext<C> {
    /// The resource's `spec.config`, decoded into the package's config type.
    pub fn config(&self) -> &C {
        self.cx.config()
    }

    /// The resource's metadata (name, namespace, uid, ...).
    pub fn metadata(&self) -> &Metadata {
        self.cx.metadata()
    }

    /// The profile (`spec.config.profile`, default `<namespace>--<name>`).
    pub fn profile(&self) -> &str {
        self.cx.profile()
    }

    /// The external name (see [`Context::external_name`]): what a user set
    /// to import, or what the package reported. An identity that reads it
    /// must come out the same before and after the package reports it
    /// (name the thing by it only where the package would name it so
    /// anyway), or the first report makes the resource `Invalid`.
    pub fn external_name(&self) -> Option<&str> {
        self.cx.external_name()
    }
}

/// The identity's part of a full context: for a unit test that calls a
/// package's `identity` with a context made by
/// [`Context::from_resource`].
impl<C> From<Context<C>> for IdentityContext<C> {
    fn from(cx: Context<C>) -> Self {
        Self { cx }
    }
}

impl<C> std::fmt::Debug for IdentityContext<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("IdentityContext").field(&self.cx).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metadata_is_read_from_the_snapshot_with_defaults_for_what_is_absent() {
        let full = Metadata::of(&json!({"metadata": {
            "name": "a", "namespace": "dev", "uid": "u-1", "generation": 3,
            "labels": {"team": "db", "odd": 1},
            "annotations": {"note": "x"},
            "creationTimestamp": "2026-01-02T03:04:05Z",
        }}));
        assert_eq!((full.name.as_str(), full.namespace.as_str()), ("a", "dev"));
        assert_eq!((full.uid.as_str(), full.generation), ("u-1", 3));
        assert_eq!(full.labels.len(), 1, "a non-string label is no label");
        assert_eq!(full.annotations["note"], "x");
        assert_eq!(full.created_ms, Some(1_767_323_045_000));
        let bare = Metadata::of(&json!({}));
        assert_eq!((bare.generation, bare.created_ms), (1, None));
    }

    #[test]
    fn the_external_name_is_the_annotation_in_the_names_domain_and_empty_is_none() {
        let names = Names::for_domain("db.example.com");
        let with = |value: &str| {
            let resource =
                json!({"metadata": {"annotations": {"db.example.com/external-name": value}}});
            let options = CallbackInput::from_resource(&resource)
                .with_env(crate::clock::system_clock(), names.clone());
            Context::new(Arc::new(()), options)
        };
        assert_eq!(with("16384").external_name(), Some("16384"));
        assert_eq!(with("").external_name(), None);
        let reported = with("").options.clone().with_external_name("7");
        assert_eq!(
            Context::new(Arc::new(()), reported).external_name(),
            Some("7")
        );
    }
}
