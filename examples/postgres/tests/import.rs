//! `managementPolicy: Observe` on a real server: an existing database is
//! imported (observed, outputs recorded) and never changed, by the
//! resource's name or by the external name a user sets.

mod common;

use blue_kubernetes::Report;

use blue_kubernetes::resource::{Phase, Reason};
use common::{Rig, SERVER};
use postgres_operator::package;
use serde_json::json;

#[tokio::test]
async fn an_existing_database_is_imported_without_being_changed() {
    let r = Rig::new().await;
    let admin = r.admin().await;
    for sql in [
        "CREATE ROLE legacy LOGIN PASSWORD 'legacy-pw'",
        "CREATE DATABASE legacy OWNER legacy",
    ] {
        admin.batch_execute(sql).await.unwrap();
    }
    r.create(
        "legacy",
        json!({"config": {}, "managementPolicy": "Observe"}),
    );
    assert_eq!(
        r.reconcile("legacy").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );

    let resource = r.resource("legacy").unwrap();
    let outputs = &resource["status"]["outputs"];
    assert_eq!(outputs["owner"], "legacy");
    // Found by the resource's name, which becomes its external name.
    let key = package::names().external_name_annotation();
    assert_eq!(resource["metadata"]["annotations"][key.as_str()], "legacy");
    assert!(outputs["databaseOid"].as_u64().unwrap() > 0, "{outputs}");
    assert!(outputs["serverVersion"].is_string());
    // Untouched: same password, no mark, no connection Secret.
    r.login("legacy", "legacy-pw", "legacy")
        .await
        .expect("the old password works");
    let mark = admin
        .query_one(
            "SELECT shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = 'legacy'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(mark.get::<_, Option<String>>(0), None);
    assert!(r
        .cluster
        .get_object(&r.secret_path("legacy-connection"))
        .is_none());

    // Deleting the resource never drops what was imported.
    r.delete("legacy");
    r.reconcile("legacy").await;
    assert_eq!(r.owner_of("legacy").await.as_deref(), Some("legacy"));
}

#[tokio::test]
async fn importing_a_missing_database_fails_and_creates_nothing() {
    let r = Rig::new().await;
    r.create(
        "absent",
        json!({"config": {}, "managementPolicy": "Observe"}),
    );
    assert_eq!(
        r.reconcile("absent").await,
        Report::Reconciled(Phase::Failed, Reason::NotReady)
    );
    assert_eq!(r.owner_of("absent").await, None);
    assert!(!r.role_exists("absent").await);
}

/// What an import must leave as it was: the database (OID, owner, access
/// list, connection settings), its owner (login, comment, password
/// verifier), the server's roles and databases, and the rows inside.
#[derive(Debug, PartialEq, Eq)]
struct Untouched {
    database: Vec<String>,
    owner: Vec<String>,
    roles: String,
    databases: String,
    rows: i64,
}

async fn untouched(r: &Rig, database: &str, owner: &str, password: &str) -> Untouched {
    let admin = r.admin().await;
    let text_row = |sql: &'static str, param: &str| {
        let admin = &admin;
        let param = param.to_string();
        async move {
            let row = admin.query_one(sql, &[&param]).await.unwrap();
            (0..row.len()).map(|i| row.get::<_, String>(i)).collect()
        }
    };
    let database_row = text_row(
        "SELECT oid::text, pg_get_userbyid(datdba)::text, coalesce(datacl::text, ''), \
         datallowconn::text, datconnlimit::text FROM pg_database WHERE datname = $1",
        database,
    )
    .await;
    let owner_row = text_row(
        "SELECT rolcanlogin::text, coalesce(shobj_description(oid, 'pg_authid'), ''), \
         coalesce(rolpassword, '') FROM pg_authid WHERE rolname = $1",
        owner,
    )
    .await;
    let names = |sql: &'static str| {
        let admin = &admin;
        async move { admin.query_one(sql, &[]).await.unwrap().get::<_, String>(0) }
    };
    let roles = names("SELECT string_agg(rolname, ',' ORDER BY rolname) FROM pg_roles").await;
    let databases =
        names("SELECT string_agg(datname, ',' ORDER BY datname) FROM pg_database").await;
    let inside = r.login(owner, password, database).await.unwrap();
    let rows = inside
        .query_one("SELECT count(*) FROM orders", &[])
        .await
        .unwrap()
        .get(0);
    Untouched {
        database: database_row,
        owner: owner_row,
        roles,
        databases,
        rows,
    }
}

#[tokio::test]
async fn a_database_named_by_the_external_name_is_imported_ready_and_unchanged() {
    let r = Rig::new().await;
    let admin = r.admin().await;
    // One statement a call: CREATE DATABASE refuses a transaction block.
    for sql in [
        "CREATE ROLE legacy LOGIN PASSWORD 'legacy-pw'",
        "CREATE DATABASE legacy_orders OWNER legacy",
    ] {
        admin.batch_execute(sql).await.unwrap();
    }
    let inside = r.login("legacy", "legacy-pw", "legacy_orders").await;
    inside
        .unwrap()
        .batch_execute("CREATE TABLE orders (id int); INSERT INTO orders VALUES (1), (2)")
        .await
        .unwrap();
    let before = untouched(&r, "legacy_orders", "legacy", "legacy-pw").await;
    // The resource's name is not the database's: only the annotation says
    // which database it is.
    let key = package::names().external_name_annotation();
    r.cluster.create_with(
        &package::descriptor(),
        json!({
            "metadata": {"name": "orders", "namespace": r.ns, "annotations": {key.as_str(): "legacy_orders"}},
            "spec": {"config": {"serverRef": {"name": SERVER}}, "managementPolicy": "Observe"},
        }),
    );

    assert_eq!(
        r.reconcile("orders").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    let resource = r.resource("orders").unwrap();
    let outputs = &resource["status"]["outputs"];
    assert_eq!(outputs["owner"], "legacy", "{outputs}");
    let oid = outputs["databaseOid"].as_u64().map(|oid| oid.to_string());
    assert_eq!(oid.as_ref(), before.database.first(), "{outputs}");
    assert!(outputs["serverVersion"].is_string(), "{outputs}");
    assert_eq!(
        resource["metadata"]["annotations"][key.as_str()],
        "legacy_orders"
    );

    // A later check finds it the same way, and still changes nothing.
    r.next_check();
    assert_eq!(
        r.reconcile("orders").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert_eq!(
        untouched(&r, "legacy_orders", "legacy", "legacy-pw").await,
        before
    );
    assert!(r
        .cluster
        .get_object(&r.secret_path("orders-connection"))
        .is_none());
}
