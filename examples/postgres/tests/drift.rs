//! Drift on a real server: what `observe` reports and `converge` repairs,
//! and what it reports and refuses to take over.

mod common;

use blue_kubernetes::Report;

use blue_kubernetes::resource::{Phase, Reason};
use common::Rig;
use serde_json::json;

const READY: Report = Report::Reconciled(Phase::Ready, Reason::Converged);

#[tokio::test]
async fn a_dropped_database_is_recreated_at_the_next_check() {
    let r = Rig::new().await;
    r.create("shop", json!({"config": {}}));
    assert_eq!(r.reconcile("shop").await, READY);
    r.admin()
        .await
        .batch_execute("DROP DATABASE shop")
        .await
        .unwrap();

    r.next_check();
    assert_eq!(r.reconcile("shop").await, READY);
    assert_eq!(r.owner_of("shop").await.as_deref(), Some("shop"));
    r.app_login("shop-connection").await.expect("logs in again");
}

#[tokio::test]
async fn a_changed_password_is_set_back_to_the_secrets() {
    let r = Rig::new().await;
    r.create("shop", json!({"config": {}}));
    r.reconcile("shop").await;
    let admin = r.admin().await;
    admin
        .batch_execute("ALTER ROLE shop PASSWORD 'someone-else'")
        .await
        .unwrap();
    assert!(r.app_login("shop-connection").await.is_err());

    r.next_check();
    assert_eq!(r.reconcile("shop").await, READY);
    r.app_login("shop-connection")
        .await
        .expect("the Secret's password works again");
}

#[tokio::test]
async fn a_deleted_secret_comes_back_with_the_same_password() {
    let r = Rig::new().await;
    r.create("shop", json!({"config": {}}));
    r.reconcile("shop").await;
    let password = r.connection_value("shop-connection", "password").unwrap();
    let path = r.secret_path("shop-connection");
    assert!(r.cluster.delete_object(&path).is_none(), "gone");

    r.next_check();
    assert_eq!(r.reconcile("shop").await, READY);
    assert_eq!(
        r.connection_value("shop-connection", "password"),
        Some(password)
    );
    r.app_login("shop-connection")
        .await
        .expect("the role still logs in");
}

#[tokio::test]
async fn a_changed_owner_is_reported_and_not_taken_back() {
    let r = Rig::new().await;
    r.create("shop", json!({"config": {}}));
    r.reconcile("shop").await;
    let admin = r.admin().await;
    admin
        .batch_execute("CREATE ROLE auditor; ALTER DATABASE shop OWNER TO auditor")
        .await
        .unwrap();

    r.next_check();
    let failed = Report::Reconciled(Phase::Failed, Reason::ExecutionFailed);
    assert_eq!(r.reconcile("shop").await, failed);
    assert_eq!(r.owner_of("shop").await.as_deref(), Some("auditor"));
}

#[tokio::test]
async fn a_second_resource_claiming_a_database_fails_without_touching_it() {
    let r = Rig::new().await;
    r.create("first", json!({"config": {"database": "shared"}}));
    assert_eq!(r.reconcile("first").await, READY);
    r.create(
        "second",
        json!({"config": {"database": "shared", "role": "intruder"}}),
    );
    let failed = Report::Reconciled(Phase::Failed, Reason::ExecutionFailed);
    assert_eq!(r.reconcile("second").await, failed);
    assert_eq!(r.owner_of("shared").await.as_deref(), Some("shared"));
    r.app_login("first-connection")
        .await
        .expect("the first is unharmed");

    // Same role, another database: the role is the first resource's.
    r.create(
        "third",
        json!({"config": {"database": "other", "role": "shared"}}),
    );
    assert_eq!(r.reconcile("third").await, failed);
    assert_eq!(r.owner_of("other").await, None);
    r.app_login("first-connection")
        .await
        .expect("its password was not changed");
}
