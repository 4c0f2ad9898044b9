//! The connection Secret before rule 8: put back what it must hold before
//! the package's callbacks run.

use super::pass::Pass;
use super::report::{Halt, Report};
use crate::connection::ConnectionError;
use crate::domain::resource;
use crate::resource::Reason;

impl Pass<'_> {
    /// Restores a deleted or altered connection Secret; `Some` ends the
    /// pass (Failed, retried with backoff) when that is not possible.
    pub(super) async fn restore_connection(&mut self) -> Result<Option<Report>, Halt> {
        let Some(connection) = self.options.connection().cloned() else {
            return Ok(None);
        };
        let Err(e) = connection.restore().await else {
            return Ok(None);
        };
        // The error names no value, only what went wrong.
        tracing::warn!(
            namespace = resource::namespace(&self.snapshot),
            name = resource::name(&self.snapshot),
            secret = connection.secret_name(),
            error = %e,
            "connection secret could not be restored"
        );
        if let ConnectionError::Transport(kind) = e {
            if matches!(kind, blue_kubernetes_client::ErrorKind::Unavailable) {
                let error = blue_kubernetes_client::Error::kubectl("connection", kind);
                return Err(Halt::Transport(error));
            }
        }
        self.fail(Reason::ExecutionFailed).await.map(Some)
    }
}
