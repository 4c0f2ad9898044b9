//! A `PostgresDatabase`'s life on a real server: created Ready with a
//! connection Secret an application logs in with, the database's name
//! recorded as its external name; `Destroy` drops the role and the
//! database, `Retain` keeps them.

mod common;

use blue_kubernetes::Report;

use blue_kubernetes::resource::{Phase, Reason};
use common::Rig;
use postgres_operator::package;
use serde_json::json;

#[tokio::test]
async fn a_new_resource_gets_a_role_a_database_and_a_secret_an_application_logs_in_with() {
    let r = Rig::new().await;
    r.create("orders", json!({"config": {}}));
    assert_eq!(
        r.reconcile("orders").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );

    assert_eq!(r.owner_of("orders").await.as_deref(), Some("orders"));
    let password = r.connection_value("orders-connection", "password").unwrap();
    assert_eq!(password.len(), 32);
    let app = r
        .app_login("orders-connection")
        .await
        .expect("the app logs in");
    app.batch_execute("CREATE TABLE t (x int); INSERT INTO t VALUES (1)")
        .await
        .unwrap();

    let status = &r.resource("orders").unwrap()["status"];
    let outputs = &status["outputs"];
    assert!(
        outputs["serverVersion"].as_str().unwrap().starts_with("15"),
        "{outputs}"
    );
    assert!(outputs["databaseOid"].as_u64().unwrap() > 0, "{outputs}");
    assert_eq!(outputs["owner"], "orders");
    assert!(
        !status.to_string().contains(&password),
        "no password in status"
    );

    // Nothing changed: the next check finds it matching and does nothing.
    r.next_check();
    assert_eq!(
        r.reconcile("orders").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert_eq!(
        r.connection_value("orders-connection", "password").unwrap(),
        password
    );
}

#[tokio::test]
async fn destroy_drops_the_database_and_the_role_and_releases_the_resource() {
    let r = Rig::new().await;
    r.create(
        "gone",
        json!({"config": {"role": "gone_owner"}, "deletionPolicy": "Destroy"}),
    );
    r.reconcile("gone").await;
    // An application still connected does not block the drop.
    let _app = r.app_login("gone-connection").await.unwrap();
    r.delete("gone");
    r.reconcile("gone").await;
    assert_eq!(r.owner_of("gone").await, None);
    assert!(!r.role_exists("gone_owner").await);
    assert!(
        r.resource("gone").is_none(),
        "finalizer removed, resource gone"
    );
}

#[tokio::test]
async fn retain_keeps_the_database_and_the_role() {
    let r = Rig::new().await;
    r.create("kept", json!({"config": {}}));
    r.reconcile("kept").await;
    r.delete("kept");
    r.reconcile("kept").await;
    assert!(r.resource("kept").is_none());
    assert_eq!(r.owner_of("kept").await.as_deref(), Some("kept"));
    assert!(r.role_exists("kept").await);
}

#[tokio::test]
async fn the_databases_name_is_recorded_as_the_external_name_once_it_exists() {
    let r = Rig::new().await;
    let key = package::names().external_name_annotation();
    let recorded = |r: &Rig| {
        let resource = r.resource("shop").unwrap();
        resource["metadata"]["annotations"][key.as_str()].clone()
    };
    r.create("shop", json!({"config": {"database": "shop_db"}}));
    assert_eq!(
        r.reconcile("shop").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert_eq!(recorded(&r), "shop_db");

    // A resource an older operator made has none: its next check records
    // it from what it observes, without converging again.
    let steps = r.attempts_of("shop").await;
    r.cluster.edit(&package::descriptor(), &r.ns, "shop", |o| {
        o["metadata"]["annotations"]
            .as_object_mut()
            .unwrap()
            .remove(key.as_str());
    });
    assert!(recorded(&r).is_null());
    r.next_check();
    assert_eq!(
        r.reconcile("shop").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    assert_eq!(recorded(&r), "shop_db");
    assert_eq!(r.attempts_of("shop").await, steps, "no step ran again");
}
