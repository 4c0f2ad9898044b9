//! What the closure form's callbacks get: the options map of the
//! reference, with the handles a pass hands out.

use crate::clock::Clock;
use crate::connection::Connection;
use crate::domain::names::Names;
use crate::domain::resource;
use crate::domain::resource::Intent;
use crate::package::api::Api;
use crate::replicas::FencingToken;
use crate::steps::Steps;
use serde_json::{Map, Value};
use std::sync::Arc;

/// What a closure-form callback gets, the options map: a copy of
/// `spec.config` plus `profile` (default `<namespace>--<name>`, or `<name>`
/// for a cluster-scoped object), `blue/event` and `blue.kubernetes/resource`
/// (the whole snapshot). No environment variables are overlaid.
///
/// `Debug` shows only the keys, never values: the map may hold credentials.
///
/// ```
/// use blue_kubernetes::{package::CallbackInput, resource::Intent};
/// let resource = serde_json::json!({
///     "metadata": {"name": "web", "namespace": "dev"},
///     "spec": {"config": {"size": 3}}
/// });
/// let opts = CallbackInput::from_resource(&resource);
/// assert_eq!(opts.profile(), "dev--web");
/// assert_eq!(opts.intent(), Intent::Create);
/// assert_eq!(opts.get("size"), Some(&serde_json::json!(3)));
/// assert!(!format!("{opts:?}").contains('3'));
/// ```
#[derive(Clone)]
pub struct CallbackInput {
    // Shared: every callback call takes a copy, and the map holds the whole
    // resource snapshot.
    map: Arc<Map<String, Value>>,
    /// What the controller hands every callback besides the resource.
    env: Option<Arc<Env>>,
    /// The resource's connection Secret, for a package that declares one.
    connection: Option<Connection>,
    /// The durable steps of `converge` and `delete`.
    steps: Option<Steps>,
    /// The `status.outputs` of each Ready referenced resource, by field.
    referenced: Option<Arc<std::collections::BTreeMap<String, Value>>>,
    /// The fencing token of the Lease the pass runs under.
    fencing_token: Option<FencingToken>,
    /// An external name a callback of this pass reported, newer than the
    /// snapshot's annotation.
    external_name: Option<Arc<str>>,
}

/// The controller's side of the options: its clock, its names and the
/// fenced API handle of the pass.
#[derive(Clone)]
struct Env {
    now: Clock,
    names: Names,
    api: Option<Api>,
}

/// Key of the event in the options.
pub const EVENT_KEY: &str = "blue/event";
/// Key of the resource snapshot in the options.
pub const RESOURCE_KEY: &str = "blue.kubernetes/resource";

impl CallbackInput {
    /// Computes the options for a resource snapshot.
    pub fn from_resource(resource: &Value) -> Self {
        let mut map = resource::at(resource, &["spec", "config"])
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        if !map.get("profile").is_some_and(Value::is_string) {
            let profile = match resource::namespace(resource) {
                // A cluster-scoped object: its name is unique on its own.
                "" => resource::name(resource).to_string(),
                namespace => format!("{namespace}--{}", resource::name(resource)),
            };
            map.insert("profile".into(), Value::String(profile));
        }
        let event = if resource::is_deleting(resource) {
            Intent::Delete
        } else if resource::at(resource, &["spec", "state"]).and_then(Value::as_str)
            == Some("stopped")
        {
            Intent::Stop
        } else {
            Intent::Create
        };
        map.insert(EVENT_KEY.into(), Value::String(event.as_str().into()));
        map.insert(RESOURCE_KEY.into(), resource.clone());
        Self {
            map: Arc::new(map),
            env: None,
            connection: None,
            steps: None,
            referenced: None,
            fencing_token: None,
            external_name: None,
        }
    }

    pub(crate) fn with_fencing_token(mut self, token: Option<FencingToken>) -> Self {
        self.fencing_token = token;
        self
    }

    /// The fencing token of the Lease this pass runs under: its shard's
    /// Lease with [`Config::sharding`](crate::Config::sharding), the
    /// leader-election Lease with
    /// [`Config::leader_election`](crate::Config::leader_election); `None`
    /// without either (or for a one-shot [`reconcile`](crate::reconcile)
    /// while not leading).
    ///
    /// Each new owner of the Lease gets a greater token than every owner
    /// before it, so an infrastructure API that accepts conditional writes
    /// (a version column, a compare-and-set, a "reject if older token"
    /// check) can refuse the writes of a replica that lost the Lease while
    /// its callback was still running. [`FencingToken`] describes its
    /// shape, its text form and what a change of epoch means.
    ///
    /// What it does not protect: an API with no conditional writes, and
    /// effects that do not carry the token. A replica cut off from the API
    /// server keeps running the callbacks it started (as with leader
    /// election) and its token stays what it was; only the infrastructure
    /// comparing tokens can refuse it. Two passes of one owner carry the
    /// same token.
    ///
    /// ```
    /// let opts = blue_kubernetes::package::CallbackInput::from_resource(&serde_json::json!({}));
    /// assert_eq!(opts.fencing_token(), None);
    /// ```
    pub fn fencing_token(&self) -> Option<FencingToken> {
        self.fencing_token
    }

    pub(crate) fn with_referenced(
        mut self,
        outputs: std::collections::BTreeMap<String, Value>,
    ) -> Self {
        self.referenced = Some(Arc::new(outputs));
        self
    }

    /// The `status.outputs` of the resource that reference field `field`
    /// names ([`ResourceSchema::reference`](crate::ResourceSchema::reference)),
    /// resolved before the pass: `Some(Value::Null)` when it is Ready and
    /// records none; `None` when the field names nothing, or, for a
    /// resource being deleted, what it names is not Ready (callbacks of a
    /// resource that is not being deleted run only once every reference
    /// is resolved).
    pub fn referenced(&self, field: &str) -> Option<&Value> {
        self.referenced.as_ref()?.get(field)
    }

    /// [`referenced`](Self::referenced) decoded into the referenced
    /// package's outputs type `O`; an error when the field names nothing
    /// Ready or the outputs are not an `O`.
    ///
    /// ```
    /// # fn demo(opts: &blue_kubernetes::package::CallbackInput) -> blue_kubernetes::CallbackResult<()> {
    /// #[derive(serde::Deserialize)]
    /// struct ServerOutputs { host: String, port: u16 }
    /// let server: ServerOutputs = opts.referenced_as("serverRef")?;
    /// # let _ = (server.host, server.port); Ok(()) }
    /// ```
    pub fn referenced_as<O: serde::de::DeserializeOwned>(
        &self,
        field: &str,
    ) -> Result<O, crate::package::result::CallbackError> {
        let outputs = self
            .referenced(field)
            .ok_or_else(|| format!("reference {field} is not resolved"))?;
        Ok(serde_json::from_value(outputs.clone())?)
    }

    pub(crate) fn with_env(mut self, now: Clock, names: Names) -> Self {
        self.env = Some(Arc::new(Env {
            now,
            names,
            api: None,
        }));
        self
    }

    /// Gives the package its API handle (over the pass's fenced client).
    pub(crate) fn with_api(mut self, api: Api) -> Self {
        if let Some(env) = &self.env {
            let mut env = Env::clone(env);
            env.api = Some(api);
            self.env = Some(Arc::new(env));
        }
        self
    }

    pub(crate) fn api(&self) -> Option<&Api> {
        self.env.as_ref()?.api.as_ref()
    }

    /// The controller's clock; the system's for options built outside a
    /// controller.
    pub(crate) fn now_ms(&self) -> u64 {
        match &self.env {
            Some(env) => (env.now)(),
            None => (crate::clock::system_clock())(),
        }
    }

    /// The controller's names (the defaults outside a controller).
    pub(crate) fn names(&self) -> std::borrow::Cow<'_, Names> {
        match &self.env {
            Some(env) => std::borrow::Cow::Borrowed(&env.names),
            None => std::borrow::Cow::Owned(Names::default()),
        }
    }

    pub(crate) fn with_external_name(mut self, name: &str) -> Self {
        self.external_name = Some(name.into());
        self
    }

    /// The infrastructure's own ID: reported by a callback earlier in this
    /// pass, else the resource's `<domain>/external-name` annotation
    /// ([`Names::external_name_annotation`]; empty is none), which the
    /// controller sets when a callback reports it, or a user sets to
    /// import existing infrastructure.
    pub fn external_name(&self) -> Option<&str> {
        if let Some(name) = &self.external_name {
            return Some(name);
        }
        let key = self.names().external_name_annotation();
        resource::at(self.resource(), &["metadata", "annotations", key.as_str()])
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty())
    }

    pub(crate) fn with_connection(mut self, connection: Connection) -> Self {
        self.connection = Some(connection);
        self
    }

    /// The resource's connection Secret, when the package declares
    /// connection details ([`ResourceSchema::connection_secret`](crate::ResourceSchema::connection_secret)).
    pub fn connection(&self) -> Option<&Connection> {
        self.connection.as_ref()
    }

    pub(crate) fn with_steps(mut self, steps: Steps) -> Self {
        self.steps = Some(steps);
        self
    }

    /// The durable steps of this `converge` or `delete` (see [`Steps`]),
    /// for a package that declares them
    /// ([`ResourceSchema::steps`](crate::ResourceSchema::steps)). Anywhere
    /// else (`validate`, `identity`, `observe`, options built with
    /// [`from_resource`](Self::from_resource)) its `run` fails with
    /// [`StepError::Unavailable`](crate::steps::StepError::Unavailable) and runs
    /// nothing; in a package that declares no steps, with
    /// [`StepError::Undeclared`](crate::steps::StepError::Undeclared).
    pub fn steps(&self) -> &Steps {
        self.steps.as_ref().unwrap_or(&Steps::ELSEWHERE)
    }

    /// A value by key.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.map.get(key)
    }

    /// A string value by key.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.map.get(key).and_then(Value::as_str)
    }

    /// The profile.
    pub fn profile(&self) -> &str {
        self.get_str("profile").unwrap_or_default()
    }

    /// What the resource asks for.
    pub fn intent(&self) -> Intent {
        match self.get_str(EVENT_KEY) {
            Some("delete") => Intent::Delete,
            Some("stop") => Intent::Stop,
            _ => Intent::Create,
        }
    }

    /// The whole resource snapshot.
    pub fn resource(&self) -> &Value {
        self.map.get(RESOURCE_KEY).unwrap_or(&Value::Null)
    }

    /// All options as a JSON map.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.map
    }
}

impl std::fmt::Debug for CallbackInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallbackInput")
            .field("keys", &self.map.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod scope_tests {
    use super::*;

    #[test]
    fn the_default_profile_of_a_cluster_scoped_object_is_its_name() {
        let namespaced = serde_json::json!({"metadata": {"namespace": "dev", "name": "web"}});
        let cluster = serde_json::json!({"metadata": {"name": "rack-7"}});
        assert_eq!(
            CallbackInput::from_resource(&namespaced).profile(),
            "dev--web"
        );
        assert_eq!(CallbackInput::from_resource(&cluster).profile(), "rack-7");
    }
}
