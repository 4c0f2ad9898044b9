//! A package of either form behind one type: what the controller holds
//! (and the graph of kinds its packages' references make); and a package
//! as the pass calls it ([`Callbacks`]): bound to one resource's config,
//! which is decoded once, where the pass learns whether it decodes at
//! all, and then handed typed to every callback of that pass.

use super::context::{Context, IdentityContext};
use super::infrastructure::Infrastructure;
use super::observation::Observation;
use super::options::CallbackInput;
use super::result::{Answer, CallbackResult};
use super::schema::ResourceSchema;
use super::typed::ConfigError;
use super::validation::ValidationErrors;
use crate::Error;
use async_trait::async_trait;
use blue_kubernetes_client::ResourceDescriptor;
use std::sync::Arc;

/// One resource kind and its callbacks, as the controller runs it. Cheap
/// to clone.
///
/// Made from an [`Infrastructure`] with [`Package::new`], or from closures
/// receiving the [`CallbackInput`] map with [`Package::builder`] (the closure
/// form, called by the pass exactly as a trait package is). A panicking callback counts as a
/// failed attempt.
#[derive(Clone)]
pub struct Package {
    inner: Arc<PackageInner>,
}

struct PackageInner {
    schema: ResourceSchema,
    /// The package's callbacks, before a resource's config is decoded.
    unbound: Box<dyn Bind>,
}

impl Package {
    /// The package of an [`Infrastructure`]: its declared schema, with the
    /// config and outputs types its associated types name. Fails with
    /// [`Error::NotStructural`] naming the field of either type that no
    /// CRD can describe.
    pub fn new<T: Infrastructure>(infrastructure: T) -> Result<Package, Error> {
        Self::with_schema(infrastructure, T::schema())
    }

    /// The package of an [`Infrastructure`] declared by `schema` instead
    /// of its type's [`Infrastructure::schema`], with the config and
    /// outputs types its associated types name: for a declaration only
    /// known at run time (a resource group chosen by a flag, a related
    /// mapping over the package's own state). Its CRD is generated from
    /// the package itself (`crd::generate(&package, ..)`), as
    /// [`ResourceSchema::of`] knows only the type's.
    ///
    /// ```
    /// # use blue_kubernetes::*;
    /// # use blue_kubernetes::package::NoOutputs;
    /// # use blue_kubernetes_client::ResourceDescriptor;
    /// # #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// # struct WidgetConfig {}
    /// struct Widgets;
    /// #[async_trait]
    /// impl Infrastructure for Widgets {
    ///     type Config = WidgetConfig;
    ///     type Outputs = NoOutputs;
    ///     fn schema() -> ResourceSchema {
    ///         ResourceSchema::new(ResourceDescriptor::new("example.com", "v1", "widgets", "Widget"))
    ///     }
    /// #   async fn observe(&self, _: &Context<WidgetConfig>) -> CallbackResult<Observation<NoOutputs>> { Ok(Observation::ABSENT) }
    /// #   async fn converge(&self, _: &Context<WidgetConfig>) -> CallbackResult<Outcome<NoOutputs>> { Ok(Outcome::done()) }
    /// #   async fn delete(&self, _: &Context<WidgetConfig>) -> CallbackResult<Outcome<NoOutputs>> { Ok(Outcome::done()) }
    /// }
    /// let group = "staging.example.com"; // from a flag
    /// let schema = ResourceSchema::new(ResourceDescriptor::new(group, "v1", "widgets", "Widget"));
    /// let package = Package::with_schema(Widgets, schema).unwrap();
    /// assert_eq!(package.descriptor().group, group);
    /// ```
    pub fn with_schema<T: Infrastructure>(
        infrastructure: T,
        schema: ResourceSchema,
    ) -> Result<Package, Error> {
        let decode: Decode<T::Config> = crate::package::typed::decode_config_at::<T::Config>;
        let unbound = Unbound {
            infrastructure: Arc::new(infrastructure),
            decode,
        };
        Self::assemble(schema.with_types_of::<T>(), Box::new(unbound))
    }

    /// Every package, of either form, is made here.
    pub(crate) fn assemble(schema: ResourceSchema, unbound: Box<dyn Bind>) -> Result<Self, Error> {
        crate::crd::check(&schema)?;
        Ok(Package {
            inner: Arc::new(PackageInner { schema, unbound }),
        })
    }

    /// The resource type this package manages.
    pub fn descriptor(&self) -> &ResourceDescriptor {
        &self.inner.schema.descriptor
    }

    /// The schema the package was built with: what its CRD describes.
    pub(crate) fn schema(&self) -> &ResourceSchema {
        &self.inner.schema
    }

    /// The package bound to the config of the resource `options` are for;
    /// for a config that does not decode, callbacks that fail saying why,
    /// and why (values removed).
    pub(crate) fn bind(&self, options: &CallbackInput) -> (Arc<dyn Callbacks>, Option<String>) {
        match self.bind_typed(options) {
            Ok(bound) => (bound, None),
            Err(e) => {
                let why = crate::package::typed::redact(&crate::error::error_chain(&e));
                (Arc::new(Refused(why.clone())), Some(why))
            }
        }
    }

    /// The package bound to the config of the resource `options` are for,
    /// or where and why that config does not decode (values not removed:
    /// [`redact`](crate::package::typed::redact) before showing it).
    pub(crate) fn bind_typed(
        &self,
        options: &CallbackInput,
    ) -> Result<Arc<dyn Callbacks>, crate::package::typed::ConfigError> {
        self.inner.unbound.bind(options)
    }
}

impl AsRef<ResourceSchema> for Package {
    fn as_ref(&self) -> &ResourceSchema {
        self.schema()
    }
}

impl std::fmt::Debug for Package {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Package")
            .field("descriptor", self.descriptor())
            .finish_non_exhaustive()
    }
}

/// The index of the package managing `kind`, if any.
pub(crate) fn package_of(packages: &[Package], kind: &ResourceDescriptor) -> Option<usize> {
    packages.iter().position(|p| {
        let d = p.descriptor();
        d.group == kind.group && d.plural == kind.plural
    })
}

/// Whether a chain of references can lead from package `from` back to
/// package `to`: only then can a cycle pass through both, and only then
/// is a chain worth following.
pub(crate) fn reaches(packages: &[Package], from: usize, to: usize) -> bool {
    let mut seen = vec![false; packages.len()];
    let mut stack = vec![from];
    while let Some(at) = stack.pop() {
        if at == to {
            return true;
        }
        if std::mem::replace(&mut seen[at], true) {
            continue;
        }
        for r in &packages[at].schema().references {
            stack.extend(package_of(packages, &r.kind));
        }
    }
    false
}

/// The packages some package refers to: only their changes can concern a
/// referrer.
pub(crate) fn referenced_packages(packages: &[Package]) -> Vec<bool> {
    let mut referenced = vec![false; packages.len()];
    for package in packages {
        for r in &package.schema().references {
            if let Some(index) = package_of(packages, &r.kind) {
                referenced[index] = true;
            }
        }
    }
    referenced
}

/// The callbacks as the pass calls them: over [`CallbackInput`], whatever the
/// package's types, answering typed values.
#[async_trait]
pub(crate) trait Callbacks: Send + Sync {
    async fn validate(&self, options: &CallbackInput) -> CallbackResult<ValidationErrors>;
    async fn identity(&self, options: &CallbackInput) -> CallbackResult<Vec<Option<String>>>;
    async fn observe(&self, options: &CallbackInput) -> CallbackResult<Observation>;
    async fn converge(&self, options: &CallbackInput) -> CallbackResult<Answer>;
    async fn delete(&self, options: &CallbackInput) -> CallbackResult<Answer>;
}

/// A package not yet bound to a resource.
pub(crate) trait Bind: Send + Sync {
    /// The package's callbacks over the config of the resource `options`
    /// are for; the error is why that config does not decode.
    fn bind(&self, options: &CallbackInput) -> Result<Arc<dyn Callbacks>, ConfigError>;
}

/// How a package's config is decoded from the options.
pub(crate) type Decode<C> = fn(&CallbackInput) -> Result<C, ConfigError>;

/// An [`Infrastructure`] and how its config decodes.
pub(crate) struct Unbound<T: Infrastructure> {
    pub(crate) infrastructure: Arc<T>,
    pub(crate) decode: Decode<T::Config>,
}

impl<T: Infrastructure> Bind for Unbound<T> {
    fn bind(&self, options: &CallbackInput) -> Result<Arc<dyn Callbacks>, ConfigError> {
        let config = Arc::new((self.decode)(options)?);
        Ok(Arc::new(Bound {
            infrastructure: self.infrastructure.clone(),
            config,
        }))
    }
}

/// An [`Infrastructure`] with the config it was bound to: every callback
/// gets it as it was decoded, never decoding again.
struct Bound<T: Infrastructure> {
    infrastructure: Arc<T>,
    config: Arc<T::Config>,
}

impl<T: Infrastructure> Bound<T> {
    fn context(&self, options: &CallbackInput) -> Context<T::Config> {
        Context::new(self.config.clone(), options.clone())
    }
}

#[async_trait]
impl<T: Infrastructure> Callbacks for Bound<T> {
    async fn validate(&self, options: &CallbackInput) -> CallbackResult<ValidationErrors> {
        self.infrastructure.validate(&self.context(options)).await
    }

    async fn identity(&self, options: &CallbackInput) -> CallbackResult<Vec<Option<String>>> {
        // Without the references' outputs, which the pass adds later.
        let cx = IdentityContext::from(self.context(options));
        self.infrastructure.identity(&cx).await
    }

    async fn observe(&self, options: &CallbackInput) -> CallbackResult<Observation> {
        let seen = self.infrastructure.observe(&self.context(options)).await?;
        Ok(seen.erase())
    }

    async fn converge(&self, options: &CallbackInput) -> CallbackResult<Answer> {
        let done = self.infrastructure.converge(&self.context(options)).await?;
        done.answer()
    }

    async fn delete(&self, options: &CallbackInput) -> CallbackResult<Answer> {
        let done = self.infrastructure.delete(&self.context(options)).await?;
        done.answer()
    }
}

/// A package bound to a config that does not decode: no callback of it
/// can run, and each fails saying why (values removed). The pass makes
/// such a resource `Invalid` before its callbacks; only `identity`, which
/// comes before the rules, meets this.
pub(crate) struct Refused(pub(crate) String);

impl Refused {
    fn fail<T>(&self) -> CallbackResult<T> {
        Err(format!("spec.config does not decode: {}", self.0).into())
    }
}

#[async_trait]
impl Callbacks for Refused {
    async fn validate(&self, _: &CallbackInput) -> CallbackResult<ValidationErrors> {
        self.fail()
    }

    async fn identity(&self, _: &CallbackInput) -> CallbackResult<Vec<Option<String>>> {
        self.fail()
    }

    async fn observe(&self, _: &CallbackInput) -> CallbackResult<Observation> {
        self.fail()
    }

    async fn converge(&self, _: &CallbackInput) -> CallbackResult<Answer> {
        self.fail()
    }

    async fn delete(&self, _: &CallbackInput) -> CallbackResult<Answer> {
        self.fail()
    }
}
