//! The four operations the controller needs from a cluster.

use crate::{Error, ResourceDescriptor};
use serde_json::Value;

/// What the controller needs from a cluster.
///
/// Implemented by `KubectlClient` and by the testkit's
/// `FakeCluster`. Both writes carry the `metadata.resourceVersion` of the
/// `resource` they are given, so a concurrent change makes them fail with
/// [`ErrorKind::Conflict`](crate::ErrorKind::Conflict).
#[async_trait::async_trait]
pub trait Client: Send + Sync {
    /// Lists every object of `descriptor` in `namespace`.
    async fn list_resources(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
    ) -> Result<Vec<Value>, Error>;

    /// Reads one object; `None` when it does not exist.
    async fn get_resource(
        &self,
        descriptor: &ResourceDescriptor,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, Error>;

    /// Replaces the status of `resource` (guarded by its resourceVersion) and
    /// returns the updated object.
    async fn update_status(
        &self,
        descriptor: &ResourceDescriptor,
        resource: &Value,
        status: &Value,
    ) -> Result<Value, Error>;

    /// Sets `metadata.finalizers` of `resource` (guarded by its
    /// resourceVersion) and returns the updated object.
    async fn update_finalizers(
        &self,
        descriptor: &ResourceDescriptor,
        resource: &Value,
        finalizers: &[String],
    ) -> Result<Value, Error>;
}
