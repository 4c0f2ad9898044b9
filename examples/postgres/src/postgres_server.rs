//! The `PostgresServer` package: a PostgreSQL server the operator
//! observes and never manages. `observe` logs in with the admin Secret and
//! reports the server Ready, with its host, port, version and the admin
//! Secret's name as `status.outputs` (never a password), or fails (the
//! error goes to the operator's log) and is retried. `converge` and
//! `delete` do nothing to the server: there is nothing to create, repair
//! or destroy, whatever the `deletionPolicy`.
//!
//! `PostgresDatabase`s refer to a server by `serverRef` and wait until it
//! is Ready. The admin Secret is a related object: editing, creating or
//! deleting it checks the servers naming it at once.

use crate::admin;
use crate::config::ServerConfig;
use crate::desired::{self, Target};
use crate::outputs::ServerOutputs;
use crate::package::{names, GROUP, VERSION};
use crate::server;
use blue_kubernetes::crd::{CrdConfig, PrinterColumn};
use blue_kubernetes::package::ValidationErrors;
use blue_kubernetes::related::{ObjectRef, Related};
use blue_kubernetes::resource::Intent;
use blue_kubernetes::{
    async_trait, CallbackResult, Context, IdentityContext, Infrastructure, Observation, Outcome,
    ResourceSchema,
};
use blue_kubernetes_client::ResourceDescriptor;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Plural resource name.
pub const PLURAL: &str = "postgresservers";
/// Kind.
pub const KIND: &str = "PostgresServer";

/// The `PostgresServer` resource type.
pub fn descriptor() -> ResourceDescriptor {
    ResourceDescriptor::new(GROUP, VERSION, PLURAL, KIND)
}

fn secrets() -> ResourceDescriptor {
    ResourceDescriptor::new("", "v1", "secrets", "Secret")
}

/// Which admin Secret each server named when it was last checked, so a
/// changed Secret maps to the servers it concerns. Filled by `observe`,
/// which runs for every server after a start; until a server's first
/// check nothing maps to it, and that check is due anyway.
#[derive(Clone, Debug, Default)]
pub struct AdminSecrets {
    named: Arc<Mutex<BTreeMap<ObjectRef, String>>>,
}

impl AdminSecrets {
    /// The process's index: the package's schema (whose related mapping
    /// reads it) is its type's, not an instance's. Several controllers in
    /// one process share it; a server one of them recorded only asks the
    /// others for an early check that finds nothing to do.
    pub fn shared() -> Self {
        static SHARED: std::sync::LazyLock<AdminSecrets> =
            std::sync::LazyLock::new(AdminSecrets::default);
        SHARED.clone()
    }

    /// Records that `server` names the Secret `secret` (in its namespace).
    pub fn record(&self, server: ObjectRef, secret: &str) {
        let mut named = self.named.lock().unwrap_or_else(|e| e.into_inner());
        named.insert(server, secret.to_string());
    }

    /// The servers naming the Secret `object`.
    pub fn servers_of(&self, object: &Value) -> Vec<ObjectRef> {
        let meta = &object["metadata"];
        let namespace = meta["namespace"].as_str().unwrap_or_default();
        let name = meta["name"].as_str().unwrap_or_default();
        let named = self.named.lock().unwrap_or_else(|e| e.into_inner());
        named
            .iter()
            .filter(|(server, secret)| server.namespace == namespace && *secret == name)
            .map(|(server, _)| server.clone())
            .collect()
    }
}

/// A callback's context: the typed config and the resource.
pub type Cx = Context<ServerConfig>;

/// The `PostgresServer` package: observed, never managed.
#[derive(Clone, Debug)]
pub struct Servers {
    /// Filled by `observe`; the related admin Secrets map through it.
    admin_secrets: AdminSecrets,
}

impl Default for Servers {
    fn default() -> Self {
        Self {
            admin_secrets: AdminSecrets::shared(),
        }
    }
}

#[async_trait]
impl Infrastructure for Servers {
    type Config = ServerConfig;
    type Outputs = ServerOutputs;

    /// The admin Secrets are related: a changed one checks the servers
    /// naming it ([`AdminSecrets`]).
    fn schema() -> ResourceSchema {
        let index = AdminSecrets::shared();
        let related = Related::mapped(secrets(), move |secret| index.servers_of(secret));
        ResourceSchema::new(descriptor()).related(related)
    }

    async fn validate(&self, cx: &Cx) -> CallbackResult<ValidationErrors> {
        Ok(desired::validate_server(cx.config()).into())
    }

    async fn identity(
        &self,
        cx: &IdentityContext<ServerConfig>,
    ) -> CallbackResult<Vec<Option<String>>> {
        let metadata = cx.metadata();
        let id = format!("{}/{}", metadata.namespace, metadata.name);
        Ok(vec![Some("postgres-server".into()), Some(id)])
    }

    async fn observe(&self, cx: &Cx) -> CallbackResult<Observation<ServerOutputs>> {
        observe(&self.admin_secrets, cx).await
    }

    // Never reached with a reachable server (observe reports it Ready)
    // and never asked to do anything: the server is not ours.
    async fn converge(&self, _: &Cx) -> CallbackResult<Outcome<ServerOutputs>> {
        Ok(Outcome::done())
    }

    async fn delete(&self, _: &Cx) -> CallbackResult<Outcome<ServerOutputs>> {
        Ok(Outcome::done())
    }
}

/// The CRD; `cel: false` leaves out the CEL rules (Kubernetes < 1.25).
pub fn crd(cel: bool) -> Result<Value, blue_kubernetes::Error> {
    blue_kubernetes::crd::generate(&ResourceSchema::of::<Servers>(), &crd_options(cel))
}

/// What [`crd`] adds beyond the types: names, CEL rules, short names,
/// category, columns.
pub fn crd_options(cel: bool) -> CrdConfig {
    CrdConfig::default()
        .with_names(names())
        .with_cel(cel)
        .with_short_names(vec!["pgsrv".into()])
        .with_categories(vec!["infrastructure".into()])
        .with_printer_columns(vec![
            PrinterColumn::wide("Host", ".spec.config.host"),
            PrinterColumn::wide("Version", ".status.outputs.version"),
        ])
}

/// `observe`: logs in as the admin and reads the version. Reachable is
/// Ready; any failure (Secret missing, login refused, server down) is the
/// callback's error, for the log only. On a delete pass there is nothing
/// of ours to remove.
pub async fn observe(index: &AdminSecrets, cx: &Cx) -> CallbackResult<Observation<ServerOutputs>> {
    if cx.intent() == Intent::Delete {
        return Ok(Observation::ABSENT);
    }
    let (config, metadata) = (cx.config(), cx.metadata());
    let namespace = metadata.namespace.as_str();
    let secret = &config.admin_secret_ref;
    index.record(ObjectRef::new(namespace, &metadata.name), &secret.name);
    let api = cx.api().ok_or("no API handle for this callback")?;
    let credentials = admin::read(api, namespace, secret).await?;
    let target = Target {
        host: config.host.clone(),
        port: config.port,
        database: server::MAINTENANCE_DATABASE.into(),
        role: credentials.user.clone(),
        namespace: namespace.into(),
        mark: String::new(),
    };
    let password = credentials.password.expose();
    let database = server::MAINTENANCE_DATABASE;
    let admin = server::connect(&target, &credentials.user, password, database).await?;
    let outputs = ServerOutputs {
        host: config.host.clone(),
        port: config.port,
        version: server::version(&admin).await?,
        admin_secret_ref: secret.clone(),
    };
    Ok(Observation::READY.with(outputs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_secret_maps_to_the_servers_of_its_namespace_naming_it() {
        let index = AdminSecrets::default();
        index.record(ObjectRef::new("a", "one"), "admin");
        index.record(ObjectRef::new("a", "two"), "other");
        index.record(ObjectRef::new("b", "three"), "admin");
        let secret = json!({"metadata": {"namespace": "a", "name": "admin"}});
        assert_eq!(index.servers_of(&secret), [ObjectRef::new("a", "one")]);
        // A server now naming another Secret no longer maps to the old one.
        index.record(ObjectRef::new("a", "one"), "renamed");
        assert!(index.servers_of(&secret).is_empty());
    }
}
