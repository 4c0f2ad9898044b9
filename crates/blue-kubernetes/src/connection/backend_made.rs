//! Secrets the backend makes (a key a DNS server generates, a token an
//! API returns): stored in the connection Secret before the callback goes
//! on, secret like the values the package generates.

use super::error::ConnectionError;
use super::sensitive::Sensitive;
use super::{check_key, Connection, HandedOut};
use crate::package::result::CallbackResult;
use std::future::Future;

impl Connection {
    /// The stored value of `key`; when there is none, runs `create` (the
    /// request that makes the secret on the backend) and stores what it
    /// returned (a guarded create or update) before returning it, so the
    /// next pass gets it back from the Secret instead of creating again.
    /// An error of `create` or of the write fails the call; a value
    /// `create` made that could not be stored is lost to the Secret, so
    /// run it in a durable step that looks for what an interrupted
    /// attempt made (see the crate's durable-steps guide).
    ///
    /// The value is secret from the moment `create` returns it: replaced
    /// by `<redacted>` in the free text the controller emits about the
    /// pass and refused in step results and outputs, like a value
    /// [`get_or_create`](Self::get_or_create) generated.
    ///
    /// ```no_run
    /// # async fn create_tsig_key(_name: &str) -> blue_kubernetes::CallbackResult<String> { Ok("a2V5".into()) }
    /// # async fn converge(connection: &blue_kubernetes::connection::Connection) -> blue_kubernetes::CallbackResult<()> {
    /// // POST /servers/localhost/tsigkeys answers with the key's secret.
    /// let secret = connection
    ///     .get_or_create_with("tsig-secret", || create_tsig_key("web"))
    ///     .await?;
    /// let _ = secret.expose(); // hand it to what needs it
    /// # Ok(()) }
    /// ```
    pub async fn get_or_create_with<F, Fut>(
        &self,
        key: &str,
        create: F,
    ) -> CallbackResult<Sensitive>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = CallbackResult<String>>,
    {
        check_key(key)?;
        // Held across `create`: two calls of one pass never create twice.
        let _one = self.inner.writing.lock().await;
        let stored = self.read().await?;
        if let Some(value) = stored.as_ref().and_then(|s| s.data.get(key)) {
            return Ok(self.handed_out(value.clone(), generated));
        }
        let value = create().await?;
        // Secret before it is written: an error of the write (or of the
        // package, later) that carries it is redacted.
        let handed = self.handed_out(value.clone(), generated);
        self.put(key, &value).await?;
        Ok(handed)
    }

    /// Stores `value` under `key`, a secret the backend made and the
    /// package already holds (say, one a server returned while making
    /// something else), writing only when it differs; returns it as
    /// [`Sensitive`]. Secret like a generated value (see
    /// [`get_or_create_with`](Self::get_or_create_with)), which is the
    /// better choice when the value comes from one request: it does not
    /// make the secret again once stored.
    pub async fn store(
        &self,
        key: &str,
        value: impl Into<String>,
    ) -> Result<Sensitive, ConnectionError> {
        check_key(key)?;
        let value = value.into();
        let handed = self.handed_out(value.clone(), generated);
        let _one = self.inner.writing.lock().await;
        self.put(key, &value).await?;
        Ok(handed)
    }
}

/// Where values the package did not choose are listed: refused in step
/// results and outputs, and redacted.
fn generated(handed: &mut HandedOut) -> &mut Vec<String> {
    &mut handed.generated
}
