//! An example infrastructure operator built on blue-kubernetes.
//!
//! A `PostgresServer` (`postgresservers.postgres.blue.example/v1alpha1`)
//! names a PostgreSQL server (host, port, and a Secret with admin
//! credentials), which the operator observes and never manages: Ready
//! while the admin logs in, with host, port and version as outputs.
//! A `PostgresDatabase` (`postgresdatabases.postgres.blue.example/v1alpha1`)
//! declares a database and the role that owns it on the server its
//! `serverRef` names, and waits (`Waiting`) while that server is not Ready.
//! `converge` creates both, in durable steps; the controller's connection Secret holds host,
//! port, database, user and a generated password; `observe` reports drift
//! (database gone, owner changed, the role cannot log in with the Secret's
//! password); `deletionPolicy: Destroy` drops them, `Retain` keeps them;
//! `status.outputs` records the server version and the database's OID,
//! owner and size; the database's name is its external name, by which a
//! user imports an existing database (`managementPolicy: Observe`).
//!
//! Both packages are [`blue_kubernetes::Infrastructure`]s
//! ([`package::Databases`], [`postgres_server::Servers`]): their callbacks
//! read everything from their typed `Context`.
//!
//! - [`config`]: the typed `spec.config`;
//! - [`desired`]: validation, identity and the resolved target (pure);
//! - [`external_name`]: the database's name as its external name;
//! - [`sql`]: identifier and literal quoting;
//! - [`password`]: generated passwords;
//! - [`admin`]: reading the admin Secret (the package's one Kubernetes read,
//!   through the context's fenced API handle);
//! - [`server`]: the SQL, over tokio-postgres;
//! - [`outputs`]: what `status.outputs` holds;
//! - [`steps`]: `converge` and `delete` as durable steps;
//! - [`audit`]: the optional table of step attempts (the `audit-steps` test hook);
//! - [`package`]: the `PostgresDatabase` package and the CRDs;
//! - [`postgres_server`]: the `PostgresServer` package (observe only);
//! - [`cli`]: the binary, on blue-kubernetes' runner;
//! - [`test_hooks`]: the test-only hooks (the steps audit, a step failed on demand);
//! - `test_server` (feature `test-server`): a private PostgreSQL for tests.

pub mod admin;
pub mod audit;
pub mod cli;
pub mod config;
pub mod desired;
pub mod external_name;
pub mod outputs;
pub mod package;
pub mod password;
pub mod postgres_server;
pub mod server;
pub mod sql;
pub mod steps;
pub mod test_hooks;
#[cfg(feature = "test-server")]
pub mod test_server;
