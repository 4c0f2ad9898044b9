//! What `identity` is handed: the part of a callback's context that says
//! which infrastructure the resource is, and nothing that can change
//! under it.

use crate::package::context::{Context, Metadata};

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
