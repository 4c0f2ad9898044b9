//! A package as the pass calls it: bound to one resource's config, which
//! is decoded once, where the pass learns whether it decodes at all, and
//! then handed typed to every callback of that pass.

use crate::package::result::{Answer, CallbackResult};
use crate::package::typed::ConfigError;
use crate::package::{options::CallbackInput, validation::ValidationErrors};
use crate::{
    package::context::Context, package::identity_context::IdentityContext,
    package::infrastructure::Infrastructure, package::observation::Observation,
};
use async_trait::async_trait;
use std::sync::Arc;

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
