//! What `status.outputs` records: non-secret facts about the server and
//! the database, for `kubectl get -o yaml` readers and for other
//! resources that refer to this one (a database refers to its server).

use crate::config::AdminSecretRef;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `status.outputs` of a `PostgresDatabase`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PgOutputs {
    /// The server's version (`server_version`, e.g. `15.8`).
    pub server_version: String,
    /// The database's OID, while it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database_oid: Option<u32>,
    /// The role owning the database, while it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The database's size in whole MiB, rounded down. Whole MiB, not
    /// bytes, so that a periodic check of a busy database does not write
    /// status every time (a check whose status is unchanged writes nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_mib: Option<u64>,
}

/// `status.outputs` of a `PostgresServer`: where it is, its version, and
/// where its admin credentials are (the Secret's name and keys, never a
/// value). Its databases connect with these.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerOutputs {
    /// The server's host, as configured.
    pub host: String,
    /// The server's port, as configured.
    pub port: u16,
    /// The server's version (`server_version`, e.g. `15.8`).
    pub version: String,
    /// The admin Secret, in the server's (and its databases') namespace.
    pub admin_secret_ref: AdminSecretRef,
}
