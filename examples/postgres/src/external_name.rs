//! The database's external name: its name. `observe` and `converge`
//! report it once the database exists, the controller records it on the
//! resource (the annotation `postgres.blue.example/external-name`), and
//! every later pass names the database by it ([`crate::desired::database_name`]).
//! A user who sets it on a resource with `managementPolicy: Observe`
//! imports the database of that name, whatever the resource is called.
//!
//! # The name, not the OID
//! The name survives what happens to a database over its life: a dump
//! and restore (`pg_dump`/`pg_restore`, a restore from a backup), a move to
//! another server, `pg_upgrade`, and a database dropped and created again
//! (which `converge` repairs). The OID survives none of these: PostgreSQL
//! assigns a new one whenever a database is created (`pg_upgrade` keeps
//! them only since PostgreSQL 15). The OID survives one thing the name
//! does not, a rename (`ALTER DATABASE ... RENAME`); but applications and
//! the connection Secret reach a database by its name, so a resource
//! following a renamed database by its OID would stay Ready while its
//! Secret no longer connects. The name is also what a user importing a
//! database knows and what the resource's identity locks on. The OID is
//! still recorded, in `status.outputs.databaseOid`, for readers who want to
//! tell a re-created database from the one before.

use crate::desired::Target;
use crate::server::Facts;
use blue_kubernetes::resource::ManagementPolicy;

/// The external name a pass reports, once the database exists and is
/// this resource's: owned by its marked role under full management; any
/// database of that name when imported (`Observe`), since an imported
/// database is by definition not ours.
pub fn reported(facts: &Facts, target: &Target, policy: ManagementPolicy) -> Option<String> {
    facts.database.as_ref()?;
    let ours = facts.role_is_ours(target) && facts.database_is_owned(target);
    (ours || policy == ManagementPolicy::Observe).then(|| target.database.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::{DatabaseFacts, RoleFacts};

    fn target() -> Target {
        Target {
            host: "db.internal".into(),
            port: 5432,
            database: "orders".into(),
            role: "orders".into(),
            namespace: "team".into(),
            mark: "managed by postgres-operator for team/orders".into(),
        }
    }

    fn facts(owner: &str, comment: Option<&str>) -> Facts {
        Facts {
            server_version: "15.8".into(),
            role: Some(RoleFacts {
                can_login: true,
                comment: comment.map(String::from),
            }),
            database: Some(DatabaseFacts {
                oid: 16384,
                owner: owner.into(),
                size_bytes: 0,
                public_connects: false,
            }),
        }
    }

    #[test]
    fn a_database_of_ours_is_reported_by_its_name() {
        let ours = facts("orders", Some(target().mark.as_str()));
        let name = reported(&ours, &target(), ManagementPolicy::Full);
        assert_eq!(name.as_deref(), Some("orders"));
    }

    #[test]
    fn nothing_is_reported_before_the_database_exists_or_for_anothers() {
        let mut missing = facts("orders", Some(target().mark.as_str()));
        missing.database = None;
        for policy in [ManagementPolicy::Full, ManagementPolicy::Observe] {
            assert_eq!(reported(&missing, &target(), policy), None);
        }
        let unmarked = facts("orders", None);
        assert_eq!(reported(&unmarked, &target(), ManagementPolicy::Full), None);
        let foreign = facts("someone", Some(target().mark.as_str()));
        assert_eq!(reported(&foreign, &target(), ManagementPolicy::Full), None);
    }

    #[test]
    fn an_imported_database_is_reported_whoever_owns_it() {
        let foreign = facts("legacy", None);
        let name = reported(&foreign, &target(), ManagementPolicy::Observe);
        assert_eq!(name.as_deref(), Some("orders"));
    }
}
