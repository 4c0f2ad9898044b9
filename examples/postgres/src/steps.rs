//! `converge` and `delete` as durable steps (declared on the package's
//! schema, `ResourceSchema::steps`). Converge is [`CONVERGE`]: password, role,
//! database, grants, connection details; delete is [`DELETE`], the
//! server's steps in reverse: database, then role. Each step is recorded
//! in `status.workflow` before it starts and when it ends, so after a crash
//! or a failure the next pass of the run skips what is done and re-runs the
//! step that was cut short, with `step.interrupted()` and the same key.
//!
//! Delete has no password or connection step: both live in the connection
//! Secret, which the resource owns, so it goes with the resource.
//!
//! # What a re-run must get right
//! `password` (get or create), `grants` (`REVOKE`/`GRANT`), `connection`
//! (set values) and the drops (`IF EXISTS`) change nothing when repeated.
//! `CREATE ROLE` and `CREATE DATABASE` cannot be: PostgreSQL has no `IF NOT
//! EXISTS` for them, and a repeat fails with "already exists". So `role`
//! and `database` read the server before they create, on every attempt (a
//! role may also exist from before the run: a re-created resource after
//! `Retain`, a repaired drift).
//!
//! What a read alone cannot see is the attempt that was cut short: when
//! its operator died, its statement may still be running in its server
//! session (PostgreSQL notices a vanished client only when it next writes
//! to it), and a `CREATE DATABASE` read as absent now can commit a moment
//! later. Every step therefore names the admin session after its key, and
//! an interrupted step first ends the sessions of that name, then looks.

use crate::desired::Target;
use crate::package::{self, keys, Cx, Features};
use crate::{audit, password, server, test_hooks};
use blue_kubernetes::steps::Step;
use blue_kubernetes::CallbackResult;
use tokio_postgres::Client;

/// The converge steps, in order.
pub const CONVERGE: [&str; 5] = ["password", "role", "database", "grants", "connection"];
/// The delete steps, in order.
pub const DELETE: [&str; 2] = ["database", "role"];

/// What every step of one pass works with.
pub struct Run<'a> {
    /// An admin session on the server, in the maintenance database.
    pub admin: &'a Client,
    /// The server, database and role.
    pub target: &'a Target,
    /// The callback's context (steps, connection Secret, resource).
    pub cx: &'a Cx,
    /// The package's optional features.
    pub features: Features,
}

impl Run<'_> {
    /// Runs step `name` with `body` after the start every step shares.
    async fn step<F, Fut>(&self, name: &str, body: F) -> CallbackResult<()>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = CallbackResult<()>>,
    {
        let run = |step: Step| async move {
            self.enter(&step).await?;
            body().await
        };
        Ok(self.cx.steps().run(name, run).await?)
    }

    /// Names the session after the step's key, ends what an interrupted
    /// attempt left running (see the module's docs), writes the audit row.
    async fn enter(&self, step: &Step) -> CallbackResult<()> {
        server::name_session(self.admin, step.key()).await?;
        if step.interrupted() {
            let ended = server::end_sessions_named(self.admin, step.key()).await?;
            if ended > 0 {
                tracing::info!(
                    "{}: step {} resumed; ended {ended} session(s) of its cut-short attempt",
                    self.resource(),
                    step.name()
                );
            }
        }
        if self.features.audit_steps {
            let event = self.cx.intent().as_str();
            audit::record(self.admin, &self.resource(), event, step).await?;
        }
        Ok(test_hooks::fail_step(step.name())?)
    }

    /// `namespace/name` of the resource.
    pub fn resource(&self) -> String {
        let metadata = self.cx.metadata();
        format!("{}/{}", metadata.namespace, metadata.name)
    }

    async fn facts(&self) -> CallbackResult<server::Facts> {
        Ok(server::facts(self.admin, self.target).await?)
    }

    /// The converge steps ([`CONVERGE`]).
    pub async fn converge(&self) -> CallbackResult<()> {
        let (admin, target, connection) = (self.admin, self.target, package::connection(self.cx)?);
        self.step("password", || async move {
            // Stored before the role gets it: a crash after that never loses it.
            connection
                .get_or_create(keys::PASSWORD, password::generate)
                .await?;
            Ok(())
        })
        .await?;
        self.step("role", || async move {
            // Read again rather than passed on as the step's result: results
            // are recorded in status, and a password never is.
            let password = connection
                .get_or_create(keys::PASSWORD, password::generate)
                .await?;
            let facts = self.facts().await?;
            Ok(server::ensure_role(admin, target, &facts, password.expose()).await?)
        })
        .await?;
        self.step("database", || async move {
            let facts = self.facts().await?;
            Ok(server::ensure_database(admin, target, &facts).await?)
        })
        .await?;
        self.step("grants", || async move {
            Ok(server::restrict_database(admin, target).await?)
        })
        .await?;
        self.step("connection", || async move {
            connection.set(keys::HOST, target.host.as_str()).await?;
            connection.set(keys::PORT, target.port.to_string()).await?;
            let database = target.database.as_str();
            connection.set(keys::DATABASE, database).await?;
            connection.set(keys::USER, target.role.as_str()).await?;
            Ok(())
        })
        .await
    }

    /// The delete steps ([`DELETE`]).
    pub async fn delete(&self) -> CallbackResult<()> {
        let (admin, target) = (self.admin, self.target);
        self.step("database", || async move {
            let facts = self.facts().await?;
            Ok(server::drop_database(admin, target, &facts).await?)
        })
        .await?;
        self.step("role", || async move {
            let facts = self.facts().await?;
            Ok(server::drop_role(admin, target, &facts).await?)
        })
        .await
    }
}
