//! Connection Secrets: one Secret per resource, in its
//! namespace, named by `spec.writeConnectionSecretToRef.name` (default
//! `<name>-connection`), labelled `app.kubernetes.io/managed-by:
//! blue-kubernetes` and owned by the resource, so it goes with it.
//!
//! # Guarantees
//! - [`Connection::get_or_create`] returns the stored value, or stores a
//!   freshly generated one (a guarded create or update) *before* it returns
//!   it: after a crash the same value comes back, so a password set on the
//!   infrastructure is never lost.
//! - Every pass of a package that declares connection details first puts
//!   back what the Secret must hold: a deleted Secret is created again, an
//!   altered one repaired, with the same values.
//! - Values never reach status, Events, logs, errors, metrics or `Debug`
//!   output: callbacks get them as [`Sensitive`], errors name keys only.
//! - Every value the connection handed out in a pass (what `get_or_create`,
//!   `get_or_create_with` and `store` returned, and what `get` read back)
//!   is replaced by `<redacted>` in the
//!   free text the controller emits about that pass: a callback's error
//!   text and its source chain, a step's error, a panic message as the
//!   controller logs it. The package author's own text is no exception, so
//!   an `ALTER ROLE ... PASSWORD '...'` that failed is logged without the
//!   password. Values shorter than 8 bytes are not searched for (they
//!   would mangle every log line that happens to contain them; generate
//!   credentials longer than that).
//! - A Secret of that name that the resource does not own is never taken
//!   over or changed.
//! - A value the backend made is kept the same way:
//!   [`Connection::get_or_create_with`] returns the stored value or runs
//!   the package's async, fallible creation and stores what it returned
//!   before returning it; [`Connection::store`] stores a value the
//!   package already has. Both are secret like a generated value.
//! - A value [`Connection::get_or_create`] (or the two above) returned is refused where a
//!   package could write it by mistake: a durable step result holding it
//!   fails the step ([`StepError::ResultHoldsSecret`](crate::steps::StepError::ResultHoldsSecret)),
//!   outputs holding it fail the pass (`InvalidOutputs`); neither is
//!   recorded.
//!
//! # Caveats
//! - What a Secret must hold is known from the Secret itself and kept in
//!   the process's memory: if the Secret is deleted *and* the operator
//!   restarts before the next pass, generated values are gone and the
//!   package generates new ones (its `observe` should report the drift).
//! - Restoring costs one GET of the Secret per pass (two requests when it
//!   must be written).
//! - Only values handed out *in the same pass* are searched for: values
//!   stored with [`Connection::set`] (a host, a user) are not secret unless
//!   read back with [`Connection::get`], and a value the package encodes
//!   (base64, a hash) or reads another way is not recognised.
//! - Redaction covers what the controller logs. A panic's message is also
//!   printed to stderr by Rust's panic hook, which the library does not
//!   replace: an operator binary that panics with credentials in the
//!   message should install a hook of its own.

mod error;
mod name;
mod redact;
mod secret;
mod sensitive;

pub use error::ConnectionError;
pub(crate) use name::{secret_name, secret_ref_valid};
pub(crate) use secret::Data;
pub use sensitive::Sensitive;

use crate::package::result::CallbackResult;
use blue_kubernetes_client::{Client, ResourceDescriptor};
use redact::HandedOut;
use secret::{valid_key, Stored, Target};
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;

/// A resource's connection Secret, as its callbacks see it
/// ([`CallbackInput::connection`](crate::package::CallbackInput::connection)). Cheap to clone.
///
/// ```no_run
/// # async fn converge(opts: blue_kubernetes::package::CallbackInput) -> blue_kubernetes::CallbackResult<()> {
/// let connection = opts.connection().expect("the package declares connection details");
/// connection.set("host", "db.internal").await?;
/// let password = connection
///     .get_or_create("password", || "generated-elsewhere".to_string())
///     .await?;
/// // Set `password.expose()` on the infrastructure only now: it is stored.
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Connection {
    inner: Arc<Inner>,
}

struct Inner {
    client: Arc<dyn Client>,
    target: Target,
    memory: Arc<dyn Known>,
    // Where the Secret is read from: the controller's cache of connection
    // Secrets, which waits for this process's own writes.
    objects: Arc<crate::cached::ObjectStore>,
    // One writer at a time inside a pass: concurrent get_or_create calls of
    // one callback must not generate two values for one key.
    writing: tokio::sync::Mutex<()>,
    // What this pass handed out (a Connection lives for one pass).
    handed_out: std::sync::Mutex<HandedOut>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("secret", &self.inner.target.name)
            .finish_non_exhaustive()
    }
}

/// What the controller knows each resource's connection Secret must hold,
/// by resource uid, so a deleted or altered Secret comes back with the same
/// values (a generated password included) while the process lives. Kept
/// with the rest of its memory of the resource, which forgets it.
pub(crate) trait Known: Send + Sync {
    fn known(&self, uid: &str) -> Option<Data>;
    fn keep(&self, uid: &str, data: Data);
}

/// Writes retried when someone else changed the Secret in between.
const ATTEMPTS: usize = 3;

impl Connection {
    pub(crate) fn new(
        client: Arc<dyn Client>,
        descriptor: &ResourceDescriptor,
        resource: &Value,
        memory: Arc<dyn Known>,
        objects: Arc<crate::cached::ObjectStore>,
    ) -> Self {
        let name = secret_name(resource);
        Self {
            inner: Arc::new(Inner {
                client,
                target: Target::new(descriptor, resource, name),
                memory,
                objects,
                writing: tokio::sync::Mutex::new(()),
                handed_out: std::sync::Mutex::default(),
            }),
        }
    }

    /// The Secret's name.
    pub fn secret_name(&self) -> &str {
        &self.inner.target.name
    }

    /// The stored value of `key`, if any.
    pub async fn get(&self, key: &str) -> Result<Option<Sensitive>, ConnectionError> {
        let stored = self.fetch().await?;
        let value = stored.and_then(|s| s.data.get(key).cloned());
        Ok(value.map(|v| self.handed_out(v, false)))
    }

    /// The stored value of `key`; when there is none, `generate`'s, stored
    /// first (a guarded create or update) and only then returned.
    pub async fn get_or_create(
        &self,
        key: &str,
        generate: impl FnOnce() -> String,
    ) -> Result<Sensitive, ConnectionError> {
        check_key(key)?;
        let _one = self.inner.writing.lock().await;
        let mut generate = Some(generate);
        let mut generated: Option<String> = None;
        for _ in 0..ATTEMPTS {
            let stored = self.fetch().await?;
            if let Some(value) = stored.as_ref().and_then(|s| s.data.get(key)) {
                return Ok(self.handed_out(value.clone(), true));
            }
            // Generated once: a retry after a lost race offers the same value.
            let value = generated
                .get_or_insert_with(|| generate.take().map(|g| g()).unwrap_or_default())
                .clone();
            if self.write_key(stored, key, &value).await? {
                return Ok(self.handed_out(value, true));
            }
        }
        Err(ConnectionError::Contended)
    }

    fn handed_out(&self, value: String, generated: bool) -> Sensitive {
        self.handed_out_lock().note(&value, generated);
        Sensitive::new(value)
    }

    fn handed_out_lock(&self) -> std::sync::MutexGuard<'_, HandedOut> {
        self.inner
            .handed_out
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a string inside `value` (keys included) contains a value
    /// [`get_or_create`](Self::get_or_create) returned in this pass.
    pub(crate) fn holds_generated(&self, value: &Value) -> bool {
        self.handed_out_lock().holds_generated(value)
    }

    /// `text` with every value this pass handed out (of at least
    /// [`SHORTEST_REDACTED`] bytes) replaced by [`REDACTED`].
    pub(crate) fn redact(&self, text: &str) -> String {
        self.handed_out_lock().redact(text)
    }

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
        let stored = self.fetch().await?;
        if let Some(value) = stored.as_ref().and_then(|s| s.data.get(key)) {
            return Ok(self.handed_out(value.clone(), true));
        }
        let value = create().await?;
        // Secret before it is written: an error of the write (or of the
        // package, later) that carries it is redacted.
        let handed = self.handed_out(value.clone(), true);
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
        let handed = self.handed_out(value.clone(), true);
        let _one = self.inner.writing.lock().await;
        self.put(key, &value).await?;
        Ok(handed)
    }

    /// Stores `value` under `key` (host, port, user: details the package
    /// knows rather than generates), writing only when it differs.
    /// Not registered as secret: a value the backend made (a key, a token)
    /// is stored with [`store`](Self::store) or
    /// [`get_or_create_with`](Self::get_or_create_with) instead.
    pub async fn set(&self, key: &str, value: impl Into<String>) -> Result<(), ConnectionError> {
        check_key(key)?;
        let value = value.into();
        let _one = self.inner.writing.lock().await;
        self.put(key, &value).await
    }

    /// Stores `key = value` unless it is stored already, retrying a lost
    /// race; the caller holds the writing lock.
    async fn put(&self, key: &str, value: &str) -> Result<(), ConnectionError> {
        for _ in 0..ATTEMPTS {
            let stored = self.fetch().await?;
            if stored
                .as_ref()
                .and_then(|s| s.data.get(key))
                .map(String::as_str)
                == Some(value)
            {
                return Ok(());
            }
            if self.write_key(stored, key, value).await? {
                return Ok(());
            }
        }
        Err(ConnectionError::Contended)
    }

    /// [`get_or_create`](Self::get_or_create) for a synchronous callback
    /// (which runs on a blocking thread of the runtime).
    pub fn get_or_create_blocking(
        &self,
        key: &str,
        generate: impl FnOnce() -> String,
    ) -> Result<Sensitive, ConnectionError> {
        tokio::runtime::Handle::current().block_on(self.get_or_create(key, generate))
    }

    /// [`set`](Self::set) for a synchronous callback.
    pub fn set_blocking(&self, key: &str, value: impl Into<String>) -> Result<(), ConnectionError> {
        tokio::runtime::Handle::current().block_on(self.set(key, value))
    }

    /// Puts back what the Secret must hold (see the module docs); run by
    /// the controller before the package's callbacks.
    pub(crate) async fn restore(&self) -> Result<(), ConnectionError> {
        let _one = self.inner.writing.lock().await;
        let uid = self.inner.target.owner_uid().to_string();
        for _ in 0..ATTEMPTS {
            let stored = self.fetch().await?;
            let Some(known) = self.inner.memory.known(&uid) else {
                // After a start: the Secret is the record.
                if let Some(stored) = stored {
                    self.inner.memory.keep(&uid, stored.data);
                }
                return Ok(());
            };
            if stored.as_ref().is_some_and(|s| s.data == known) {
                return Ok(());
            }
            if secret::replace(
                &*self.inner.client,
                &self.inner.target,
                stored.as_ref(),
                &known,
            )
            .await?
            {
                return Ok(());
            }
        }
        Err(ConnectionError::Contended)
    }

    async fn fetch(&self) -> Result<Option<Stored>, ConnectionError> {
        let inner = &*self.inner;
        secret::fetch(&*inner.client, &inner.objects, &inner.target).await
    }

    /// Adds `key = value` to what is stored; false when someone else wrote
    /// the Secret first (read again and retry).
    async fn write_key(
        &self,
        stored: Option<Stored>,
        key: &str,
        value: &str,
    ) -> Result<bool, ConnectionError> {
        let uid = self.inner.target.owner_uid().to_string();
        let mut data = self
            .inner
            .memory
            .known(&uid)
            .or_else(|| stored.as_ref().map(|s| s.data.clone()))
            .unwrap_or_default();
        if let Some(stored) = &stored {
            // Keys someone else stored meanwhile are kept.
            for (k, v) in &stored.data {
                data.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        data.insert(key.to_string(), value.to_string());
        let written = secret::replace(
            &*self.inner.client,
            &self.inner.target,
            stored.as_ref(),
            &data,
        )
        .await?;
        if written {
            self.inner.memory.keep(&uid, data);
        }
        Ok(written)
    }
}

fn check_key(key: &str) -> Result<(), ConnectionError> {
    match valid_key(key) {
        true => Ok(()),
        false => Err(ConnectionError::InvalidKey(key.to_string())),
    }
}
