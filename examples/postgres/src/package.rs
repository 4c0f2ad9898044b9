//! The `PostgresDatabase` package: its resource type, its names and the
//! callbacks, which speak SQL to the server ([`crate::server`]) and keep
//! the connection details in the controller's connection Secret.
//!
//! A database names its `PostgresServer` ([`crate::postgres_server`]) in
//! `serverRef`: the controller resolves it before any callback runs, so
//! the callbacks always have its outputs (host, port, the admin Secret's
//! name); until it is Ready the database is `Waiting`.
//!
//! The only Kubernetes request the package makes itself is reading the
//! admin Secret ([`crate::admin`]), through the context's fenced API
//! handle; the connection Secret is the controller's
//! ([`blue_kubernetes::connection::Connection`]).
//!
//! Once the database exists, its name is the resource's external name
//! ([`crate::external_name`]): every pass names the database by it, and a
//! user sets it to import a database under another name.

use crate::admin;
use crate::config::PgConfig;
use crate::desired::{self, Subject, Target};
use crate::external_name;
use crate::outputs::{PgOutputs, ServerOutputs};
use crate::postgres_server::{self, Servers};
use crate::server::{self, Facts};
use crate::steps::Run;
use blue_kubernetes::config::Names;
use blue_kubernetes::connection::Connection;
use blue_kubernetes::crd::{CrdConfig, PrinterColumn};
use blue_kubernetes::package::ValidationErrors;
use blue_kubernetes::resource::{Intent, ManagementPolicy};
use blue_kubernetes::{
    async_trait, CallbackResult, Context, IdentityContext, Infrastructure, Observation, Outcome,
    Package, ResourceSchema,
};
use blue_kubernetes_client::ResourceDescriptor;

/// API group of `PostgresDatabase`.
pub const GROUP: &str = "postgres.blue.example";
/// API version.
pub const VERSION: &str = "v1alpha1";
/// Plural resource name.
pub const PLURAL: &str = "postgresdatabases";
/// Kind.
pub const KIND: &str = "PostgresDatabase";
/// The finalizer this operator puts on its resources.
pub const FINALIZER: &str = "postgres.blue.example/infrastructure";
/// The annotation whose changed value asks for an early check.
pub const REQUEST_ANNOTATION: &str = "postgres.blue.example/reconcile-request";

/// The connection Secret's keys.
pub mod keys {
    /// The server's host.
    pub const HOST: &str = "host";
    /// The server's port.
    pub const PORT: &str = "port";
    /// The database's name.
    pub const DATABASE: &str = "database";
    /// The role's name.
    pub const USER: &str = "user";
    /// The role's generated password.
    pub const PASSWORD: &str = "password";
}

/// The `PostgresDatabase` resource type.
pub fn descriptor() -> ResourceDescriptor {
    ResourceDescriptor::new(GROUP, VERSION, PLURAL, KIND)
}

/// The controller's names for this operator, in its own domain: the
/// finalizer [`FINALIZER`], the request annotation [`REQUEST_ANNOTATION`]
/// and the destroy-protection key `prevent-destroy` in `spec.config`, so it
/// never releases another operator's resources.
pub fn names() -> Names {
    Names::for_domain(GROUP)
}

/// Optional features of the package, all off by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// Every step attempt writes a row into the audit table
    /// ([`crate::audit`]; the test hook `audit-steps`).
    pub audit_steps: bool,
}

/// The reference field naming the database's `PostgresServer`.
pub const SERVER_REF: &str = "serverRef";

/// A callback's context: the typed config and the resource.
pub type Cx = Context<PgConfig>;

/// The `PostgresDatabase` package. A controller runs it beside
/// [`Servers`], the kind it refers to (see [`packages`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Databases {
    /// Its optional features.
    pub features: Features,
}

#[async_trait]
impl Infrastructure for Databases {
    type Config = PgConfig;
    type Outputs = PgOutputs;

    /// Durable steps, a connection Secret and the server reference; the
    /// CRD ([`crd`]) is generated from this and the two types.
    fn schema() -> ResourceSchema {
        ResourceSchema::new(descriptor())
            .steps()
            .connection_secret()
            .reference(SERVER_REF, postgres_server::descriptor())
            // Enforced by the controller on every server, and by CEL
            // rules where the server has CEL.
            .immutable(SERVER_REF)
            .immutable("database")
            .immutable("role")
    }

    async fn validate(&self, cx: &Cx) -> CallbackResult<ValidationErrors> {
        Ok(desired::validate(cx.config(), &Subject::of(cx)).into())
    }

    async fn identity(
        &self,
        cx: &IdentityContext<PgConfig>,
    ) -> CallbackResult<Vec<Option<String>>> {
        Ok(desired::identity(cx.config(), &Subject::of_identity(cx)))
    }

    async fn observe(&self, cx: &Cx) -> CallbackResult<Observation<PgOutputs>> {
        observe(cx).await
    }

    async fn converge(&self, cx: &Cx) -> CallbackResult<Outcome<PgOutputs>> {
        converge(cx, self.features).await
    }

    async fn delete(&self, cx: &Cx) -> CallbackResult<Outcome<PgOutputs>> {
        delete(cx, self.features).await
    }
}

/// Both packages one operator runs, servers first.
pub fn packages(features: Features) -> Result<Vec<Package>, blue_kubernetes::Error> {
    Ok(vec![
        Package::new(Servers::default())?,
        package_with(features)?,
    ])
}

/// The `PostgresDatabase` package (see [`Databases`]).
pub fn package() -> Result<Package, blue_kubernetes::Error> {
    package_with(Features::default())
}

/// [`package`] with `features`.
pub fn package_with(features: Features) -> Result<Package, blue_kubernetes::Error> {
    Package::new(Databases { features })
}

/// The CRD, as `postgres-operator crd` prints it and `manifests/crd.yaml`
/// holds it; `cel: false` leaves out the CEL rules (Kubernetes < 1.25).
/// It needs no client: only the declaration and the types.
pub fn crd(cel: bool) -> Result<serde_json::Value, blue_kubernetes::Error> {
    blue_kubernetes::crd::generate(&ResourceSchema::of::<Databases>(), &crd_options(cel))
}

/// What [`crd`] adds beyond the types: names, CEL rules (for the
/// schema's immutable fields), short names, category, columns.
pub fn crd_options(cel: bool) -> CrdConfig {
    CrdConfig::default()
        .with_names(names())
        .with_cel(cel)
        .with_short_names(vec!["pgdb".into()])
        .with_categories(vec!["infrastructure".into()])
        .with_printer_columns(vec![
            PrinterColumn::wide("Server", ".spec.config.serverRef.name"),
            PrinterColumn::wide("Version", ".status.outputs.serverVersion"),
        ])
}

/// Both CRDs (`PostgresServer`'s, then [`crd`]) as the YAML documents
/// `manifests/crd.yaml` holds.
pub fn crd_yaml(cel: bool) -> Result<String, blue_kubernetes::Error> {
    let header = "# Generated by `postgres-operator crd`: do not edit.\n\
                  # `crd --no-cel` leaves out the CEL rules (Kubernetes < 1.25);\n\
                  # `crd --webhook-service NS/NAME` adds the admission webhook's configuration.\n";
    let server = blue_kubernetes::crd::to_yaml(&postgres_server::crd(cel)?);
    let database = blue_kubernetes::crd::to_yaml(&crd(cel)?);
    Ok(format!("{header}{server}---\n{database}"))
}

/// `observe`: reads the role and the database (by the external name once
/// there is one) as the admin. Delete passes ask whether anything of ours
/// is left (the role carries our mark); other passes whether the database
/// exists, is owned by our role, admits no other role, the connection
/// Secret holds the details, and the role logs in with its password. An
/// imported database (`Observe`) is only read: whether it matches is not
/// asked, and it has no connection Secret of ours.
pub async fn observe(cx: &Cx) -> CallbackResult<Observation<PgOutputs>> {
    let (target, admin) = connect_admin(cx).await?;
    let facts = server::facts(&admin, &target).await?;
    let outputs = outputs(&facts);
    if cx.intent() == Intent::Delete {
        let exists = facts.role_is_ours(&target);
        return Ok(Observation::new(exists, !exists, true).with(outputs));
    }
    let policy = cx.management_policy();
    let exists = facts.database.is_some();
    let matches = match policy {
        ManagementPolicy::Observe => exists,
        // Full, and any policy added later: the whole structure is checked.
        _ => {
            let structure = exists
                && facts.role_is_ours(&target)
                && facts.database_is_owned(&target)
                && facts.database.as_ref().is_some_and(|d| !d.public_connects)
                && facts.role.as_ref().is_some_and(|r| r.can_login);
            structure && holds_details(cx, &target).await? && logs_in(cx, &target).await?
        }
    };
    let observed = Observation::new(exists, matches, exists).with(outputs);
    Ok(match external_name::reported(&facts, &target, policy) {
        Some(name) => observed.with_external_name(name),
        None => observed,
    })
}

/// The connection Secret holds `target`'s details. The controller puts
/// back what it knows the Secret held, but a new process knows only what
/// it finds: a run cut short before its `connection` step, or a value
/// edited while no operator ran, is found here.
async fn holds_details(cx: &Cx, target: &Target) -> CallbackResult<bool> {
    let connection = connection(cx)?;
    let port = target.port.to_string();
    let details = [
        (keys::HOST, target.host.as_str()),
        (keys::PORT, port.as_str()),
        (keys::DATABASE, target.database.as_str()),
        (keys::USER, target.role.as_str()),
    ];
    for (key, want) in details {
        if connection.get(key).await?.as_ref().map(|v| v.expose()) != Some(want) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The role logs in with the stored password (none stored: it cannot).
async fn logs_in(cx: &Cx, target: &Target) -> CallbackResult<bool> {
    let Some(password) = connection(cx)?.get(keys::PASSWORD).await? else {
        return Ok(false);
    };
    Ok(server::can_log_in(target, password.expose()).await?)
}

/// `converge`, in durable steps ([`crate::steps`]): stores the password
/// (before the role gets it), creates or repairs the role, creates the
/// database, lets only the role connect to it, and stores the connection
/// details. Refuses a role or database that is not this resource's rather
/// than take it over. Reports the database's name as the external name.
pub async fn converge(cx: &Cx, features: Features) -> CallbackResult<Outcome<PgOutputs>> {
    let (target, admin) = connect_admin(cx).await?;
    let run = Run {
        admin: &admin,
        target: &target,
        cx,
        features,
    };
    run.converge().await?;
    tracing::info!(
        "postgresdatabase {}: role and database in place",
        run.resource()
    );
    let facts = server::facts(&admin, &target).await?;
    let done = Outcome::done().with(outputs(&facts));
    Ok(
        match external_name::reported(&facts, &target, ManagementPolicy::Full) {
            Some(name) => done.with_external_name(name),
            None => done,
        },
    )
}

/// `delete` (only for `deletionPolicy: Destroy`), in durable steps: drops
/// the database if our role owns it, then our role.
pub async fn delete(cx: &Cx, features: Features) -> CallbackResult<Outcome<PgOutputs>> {
    let (target, admin) = connect_admin(cx).await?;
    let run = Run {
        admin: &admin,
        target: &target,
        cx,
        features,
    };
    run.delete().await?;
    tracing::info!(
        "postgresdatabase {}: role and database dropped",
        run.resource()
    );
    Ok(Outcome::done())
}

/// The target on the referenced server, and an admin session on it with
/// the credentials of the Secret the server names (in the database's
/// namespace, which a reference shares), read through the fenced API.
async fn connect_admin(cx: &Cx) -> CallbackResult<(Target, tokio_postgres::Client)> {
    let server: ServerOutputs = cx.referenced(SERVER_REF)?;
    let target = desired::target(cx.config(), &Subject::of(cx), &server);
    let api = cx.api().ok_or("no API handle for this callback")?;
    let credentials = admin::read(api, &target.namespace, &server.admin_secret_ref).await?;
    let password = credentials.password.expose();
    let database = server::MAINTENANCE_DATABASE;
    let admin = server::connect(&target, &credentials.user, password, database).await?;
    Ok((target, admin))
}

/// The connection Secret, which the package declares.
pub(crate) fn connection(cx: &Cx) -> CallbackResult<&Connection> {
    cx.connection()
        .ok_or_else(|| "the package declares a connection secret, but none was given".into())
}

fn outputs(facts: &Facts) -> PgOutputs {
    let database = facts.database.as_ref();
    PgOutputs {
        server_version: facts.server_version.clone(),
        database_oid: database.map(|d| d.oid),
        owner: database.map(|d| d.owner.clone()),
        size_mib: database.map(|d| u64::try_from(d.size_bytes).unwrap_or(0) / (1024 * 1024)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::DatabaseFacts;

    #[test]
    fn the_names_are_in_the_operators_own_domain() {
        let names = names();
        assert_eq!(names.finalizer, FINALIZER);
        assert_eq!(names.request_annotation, REQUEST_ANNOTATION);
    }

    #[test]
    fn outputs_round_the_size_down_to_whole_mib() {
        let mut facts = Facts {
            server_version: "15.8".into(),
            role: None,
            database: None,
        };
        assert_eq!(outputs(&facts).database_oid, None);
        facts.database = Some(DatabaseFacts {
            oid: 16384,
            owner: "app".into(),
            size_bytes: 3 * 1024 * 1024 - 1,
            public_connects: false,
        });
        let out = outputs(&facts);
        assert_eq!((out.database_oid, out.size_mib), (Some(16384), Some(2)));
        assert_eq!(out.owner.as_deref(), Some("app"));
    }
}
