//! The validated controller handle.

use crate::{Config, Error};
use std::sync::Arc;

/// A validated controller configuration; nothing runs until [`start`](crate::start).
/// Cheap to clone.
#[derive(Clone, Debug)]
pub struct Controller {
    pub(crate) config: Arc<Config>,
}

/// Validates `config` and builds a controller without starting anything.
///
/// Fails with [`Error::InvalidConfig`] naming the first unusable field.
///
/// ```
/// # use blue_kubernetes::{controller, Config, Error, Package};
/// # fn demo(client: std::sync::Arc<dyn blue_kubernetes_client::Client>, package: Package) {
/// let mut config = Config::new(client, vec![package]);
/// config.workers = 0;
/// let err = controller(config).unwrap_err();
/// assert!(matches!(err, Error::InvalidConfig { field: "workers", .. }));
/// # }
/// ```
pub fn controller(config: Config) -> Result<Controller, Error> {
    config.validate()?;
    Ok(Controller {
        config: Arc::new(config),
    })
}

impl Controller {
    pub(crate) fn now(&self) -> u64 {
        (self.config.now)()
    }

    /// [`is_due`](crate::is_due) now, with this controller's retry settings.
    pub(crate) fn is_due(&self, resource: &serde_json::Value) -> bool {
        crate::due::is_due_named(
            resource,
            self.now(),
            &self.config.names,
            self.config.retry_max_ms,
        )
    }

    /// The configuration this controller was built from.
    pub fn config(&self) -> &Config {
        &self.config
    }
}
