//! Connection Secrets (SPEC section 8): one Secret per resource, in its
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
//! - A Secret of that name that the resource does not own is never taken
//!   over or changed.
//! - A value [`Connection::get_or_create`] returned is refused where a
//!   package could write it by mistake: a durable step result holding it
//!   fails the step ([`StepError::ResultHoldsSecret`](crate::StepError::ResultHoldsSecret)),
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
//! - Only values `get_or_create` returned *in the same pass* are searched
//!   for, as text inside the strings of a result or the outputs: values
//!   stored with [`Connection::set`] (a host, a user) are not secret, and a
//!   value the package encodes (base64, a hash) or read another way is not
//!   recognised.

mod secret;
mod sensitive;
mod store;

pub use sensitive::Sensitive;
pub(crate) use store::Store;

use blue_kubernetes_client::{ApiRequest, Client, ErrorKind, Method, ResourceDescriptor};
use secret::{read, valid_key, Data, Stored, Target};
use serde_json::Value;
use std::sync::Arc;

/// Why a connection Secret could not be read or written. Never carries a
/// value; the Secret's name and keys are not secret.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectionError {
    /// Reading or writing the Secret failed.
    #[error("connection secret request failed ({0})")]
    Transport(ErrorKind),
    /// A Secret of that name exists and this resource does not own it.
    #[error("a secret of the connection secret's name exists and is not this resource's")]
    NotOurs,
    /// `key` is not a Secret data key (`[-._a-zA-Z0-9]+`).
    #[error("connection key {0:?} is not a valid secret key")]
    InvalidKey(String),
    /// The Secret's name or namespace is not a valid object name.
    #[error("the connection secret's name is not a valid object name")]
    InvalidName,
    /// Someone else kept writing the Secret; the pass retries.
    #[error("the connection secret kept changing while it was written")]
    Contended,
}

impl From<blue_kubernetes_client::Error> for ConnectionError {
    fn from(e: blue_kubernetes_client::Error) -> Self {
        ConnectionError::Transport(e.kind())
    }
}

/// A resource's connection Secret, as its callbacks see it
/// ([`Options::connection`](crate::Options::connection)). Cheap to clone.
///
/// ```no_run
/// # async fn converge(opts: blue_kubernetes::Options) -> blue_kubernetes::CallbackResult<()> {
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
    store: Arc<Store>,
    // One writer at a time inside a pass: concurrent get_or_create calls of
    // one callback must not generate two values for one key.
    writing: tokio::sync::Mutex<()>,
    // What get_or_create returned in this pass (a Connection lives for one
    // pass): searched for in step results and outputs before they are
    // recorded.
    generated: std::sync::Mutex<Vec<String>>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("secret", &self.inner.target.name)
            .finish_non_exhaustive()
    }
}

/// Writes retried when someone else changed the Secret in between.
const ATTEMPTS: usize = 3;

impl Connection {
    pub(crate) fn new(
        client: Arc<dyn Client>,
        descriptor: &ResourceDescriptor,
        resource: &Value,
        store: Arc<Store>,
    ) -> Self {
        let name = secret_name(resource);
        Self {
            inner: Arc::new(Inner {
                client,
                target: Target::new(descriptor, resource, name),
                store,
                writing: tokio::sync::Mutex::new(()),
                generated: std::sync::Mutex::default(),
            }),
        }
    }

    /// The Secret's name.
    pub fn secret_name(&self) -> &str {
        &self.inner.target.name
    }

    /// The stored value of `key`, if any.
    pub async fn get(&self, key: &str) -> Result<Option<Sensitive>, ConnectionError> {
        let stored = self.read().await?;
        Ok(stored.and_then(|s| s.data.get(key).cloned().map(Sensitive::new)))
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
            let stored = self.read().await?;
            if let Some(value) = stored.as_ref().and_then(|s| s.data.get(key)) {
                return Ok(self.handed_out(value.clone()));
            }
            // Generated once: a retry after a lost race offers the same value.
            let value = generated
                .get_or_insert_with(|| generate.take().map(|g| g()).unwrap_or_default())
                .clone();
            if self.write_key(stored, key, &value).await? {
                return Ok(self.handed_out(value));
            }
        }
        Err(ConnectionError::Contended)
    }

    fn handed_out(&self, value: String) -> Sensitive {
        if !value.is_empty() {
            let mut generated = self.inner.generated.lock().expect("not poisoned");
            if !generated.contains(&value) {
                generated.push(value.clone());
            }
        }
        Sensitive::new(value)
    }

    /// Whether a string inside `value` (keys included) contains a value
    /// [`get_or_create`](Self::get_or_create) returned in this pass.
    pub(crate) fn holds_generated(&self, value: &Value) -> bool {
        let generated = self.inner.generated.lock().expect("not poisoned");
        !generated.is_empty() && strings_hold(value, &generated)
    }

    /// Stores `value` under `key` (host, port, user: details the package
    /// knows rather than generates), writing only when it differs.
    pub async fn set(&self, key: &str, value: impl Into<String>) -> Result<(), ConnectionError> {
        check_key(key)?;
        let value = value.into();
        let _one = self.inner.writing.lock().await;
        for _ in 0..ATTEMPTS {
            let stored = self.read().await?;
            if stored.as_ref().and_then(|s| s.data.get(key)) == Some(&value) {
                return Ok(());
            }
            if self.write_key(stored, key, &value).await? {
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
            let stored = self.read().await?;
            let Some(known) = self.inner.store.get(&uid) else {
                // After a start: the Secret is the record.
                if let Some(stored) = stored {
                    self.inner.store.put(&uid, stored.data);
                }
                return Ok(());
            };
            if stored.as_ref().is_some_and(|s| s.data == known) {
                return Ok(());
            }
            if self.write(stored.as_ref(), &known).await? {
                return Ok(());
            }
        }
        Err(ConnectionError::Contended)
    }

    async fn read(&self) -> Result<Option<Stored>, ConnectionError> {
        let request = ApiRequest::get(self.inner.target.item()?);
        match self.inner.client.send_raw(request).await {
            Ok(answer) => {
                let body = answer.body.unwrap_or(Value::Null);
                read(&body, self.inner.target.owner_uid()).map(Some)
            }
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
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
            .store
            .get(&uid)
            .or_else(|| stored.as_ref().map(|s| s.data.clone()))
            .unwrap_or_default();
        if let Some(stored) = &stored {
            // Keys someone else stored meanwhile are kept.
            for (k, v) in &stored.data {
                data.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        data.insert(key.to_string(), value.to_string());
        let written = self.write(stored.as_ref(), &data).await?;
        if written {
            self.inner.store.put(&uid, data);
        }
        Ok(written)
    }

    /// Creates (no Secret) or replaces (guarded by the version read) the
    /// Secret with `data`; false on a lost race.
    async fn write(&self, stored: Option<&Stored>, data: &Data) -> Result<bool, ConnectionError> {
        let target = &self.inner.target;
        let request = match stored {
            None => ApiRequest::new(Method::Post, target.collection()?)
                .with_body(target.body(data, None)),
            Some(s) => ApiRequest::new(Method::Put, target.item()?)
                .with_body(target.body(data, Some(&s.resource_version))),
        };
        match self.inner.client.send_raw(request).await {
            Ok(_) => Ok(true),
            Err(e) if matches!(e.kind(), ErrorKind::Conflict | ErrorKind::NotFound) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

fn check_key(key: &str) -> Result<(), ConnectionError> {
    match valid_key(key) {
        true => Ok(()),
        false => Err(ConnectionError::InvalidKey(key.to_string())),
    }
}

/// `spec.writeConnectionSecretToRef.name`, or `<name>-connection`.
fn strings_hold(value: &Value, needles: &[String]) -> bool {
    let holds = |text: &str| needles.iter().any(|n| text.contains(n.as_str()));
    match value {
        Value::String(text) => holds(text),
        Value::Array(items) => items.iter().any(|v| strings_hold(v, needles)),
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| holds(k) || strings_hold(v, needles)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

pub(crate) fn secret_name(resource: &Value) -> String {
    match resource.pointer("/spec/writeConnectionSecretToRef/name") {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        _ => format!(
            "{}-connection",
            resource["metadata"]["name"].as_str().unwrap_or_default()
        ),
    }
}

/// `spec.writeConnectionSecretToRef` is absent or names a valid Secret.
pub(crate) fn secret_ref_valid(resource: &Value) -> bool {
    match resource.pointer("/spec/writeConnectionSecretToRef") {
        None | Some(Value::Null) => true,
        Some(Value::Object(r)) => match r.get("name") {
            None | Some(Value::Null) => true,
            Some(Value::String(name)) => is_dns_subdomain(name),
            Some(_) => false,
        },
        Some(_) => false,
    }
}

fn is_dns_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

#[cfg(test)]
mod tests {
    use super::strings_hold;
    use serde_json::json;

    #[test]
    fn a_generated_value_is_found_inside_any_string_or_key_but_not_in_numbers() {
        let needles = ["s3cr3t-value".to_string()];
        for holding in [
            json!("s3cr3t-value"),
            json!({"dsn": "postgres://app:s3cr3t-value@db/app"}),
            json!([1, {"nested": ["x", "s3cr3t-value"]}]),
            json!({"s3cr3t-value": true}),
        ] {
            assert!(strings_hold(&holding, &needles), "{holding}");
        }
        for clean in [json!("s3cr3t"), json!({"port": 5432}), json!(null)] {
            assert!(!strings_hold(&clean, &needles), "{clean}");
        }
    }
}
