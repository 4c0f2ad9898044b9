//! `managementPolicy: Observe` on a real server: an existing database is
//! imported (observed, outputs recorded) and never changed.

mod common;

use blue_kubernetes::{Phase, Reason, Report};
use common::Rig;
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

    let outputs = &r.resource("legacy").unwrap()["status"]["outputs"];
    assert_eq!(outputs["owner"], "legacy");
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
