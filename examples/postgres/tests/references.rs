//! A `PostgresDatabase` and the `PostgresServer` it names on a real
//! server: it waits (no callback, nothing created) until the server is
//! Ready, goes back to waiting when the server goes away, and the
//! server's outputs say where it is, never how to log in.

mod common;

use blue_kubernetes::Report;

use blue_kubernetes::resource::{Phase, Reason};
use common::{Rig, SERVER};
use postgres_operator::test_server::ADMIN_PASSWORD;
use serde_json::json;
use std::sync::Arc;

const READY: Report = Report::Reconciled(Phase::Ready, Reason::Converged);
const WAITING: Report = Report::Reconciled(Phase::Waiting, Reason::DependencyNotReady);

#[tokio::test]
async fn a_database_created_before_its_server_waits_then_is_ready_once_the_server_is() {
    let r = Rig::bare();
    r.create("early", json!({"config": {}}));
    assert_eq!(r.reconcile("early").await, WAITING);
    assert_eq!(r.resource("early").unwrap()["status"]["phase"], "Waiting");
    // No callback ran: no role, no database, no step, no Secret.
    assert!(!r.role_exists("early").await);
    assert_eq!(r.owner_of("early").await, None);
    let audit = "SELECT to_regclass('postgres_operator_audit')::text";
    let row = r.admin().await.query_one(audit, &[]).await.unwrap();
    assert_eq!(row.get::<_, Option<String>>(0), None, "no step ever ran");
    assert!(r
        .cluster
        .get_object(&r.secret_path("early-connection"))
        .is_none());

    r.create_server(SERVER, r.pg.port());
    assert_eq!(r.reconcile_server(SERVER).await, READY);
    let report =
        r.op.controller()
            .reconcile_now(&r.package, &r.ns, "early")
            .await
            .unwrap();
    assert_eq!(report, READY);
    assert_eq!(r.owner_of("early").await.as_deref(), Some("early"));
    r.app_login("early-connection").await.expect("logs in");
}

#[tokio::test]
async fn a_deleted_server_turns_its_databases_back_to_waiting_and_drops_nothing() {
    let r = Rig::new().await;
    r.create("orders", json!({"config": {}}));
    assert_eq!(r.reconcile("orders").await, READY);

    r.cluster.delete(
        &postgres_operator::postgres_server::descriptor(),
        &r.ns,
        SERVER,
    );
    assert_eq!(r.reconcile_server(SERVER).await, Report::Released);
    assert!(r.server(SERVER).is_none(), "nothing to destroy: released");
    let report =
        r.op.controller()
            .reconcile_now(&r.package, &r.ns, "orders")
            .await
            .unwrap();
    assert_eq!(report, WAITING);
    assert_eq!(r.owner_of("orders").await.as_deref(), Some("orders"));
    r.app_login("orders-connection")
        .await
        .expect("still logs in");
}

#[tokio::test]
async fn the_servers_outputs_say_where_it_is_and_never_how_to_log_in() {
    let r = Rig::new().await;
    let status = r.server(SERVER).unwrap()["status"].clone();
    let outputs = &status["outputs"];
    assert_eq!(outputs["host"], "127.0.0.1");
    assert_eq!(outputs["port"], r.pg.port());
    assert!(
        outputs["version"].as_str().unwrap().starts_with("15"),
        "{outputs}"
    );
    let secret =
        json!({"name": common::ADMIN_SECRET, "userKey": "username", "passwordKey": "password"});
    assert_eq!(outputs["adminSecretRef"], secret);
    assert!(!status.to_string().contains(ADMIN_PASSWORD), "{status}");
    let object = r.server(SERVER).unwrap().to_string();
    assert!(!object.contains(ADMIN_PASSWORD), "no password anywhere");
}

#[tokio::test]
async fn an_unreachable_server_fails_and_its_databases_wait() {
    let r = Rig::bare();
    // Port 1 on the loopback: nothing listens, the connection is refused.
    r.create_server(SERVER, 1);
    let report = r.reconcile_server(SERVER).await;
    assert!(
        matches!(report, Report::Reconciled(Phase::Failed, _)),
        "{report:?}"
    );
    r.create("orders", json!({"config": {}}));
    assert_eq!(r.reconcile("orders").await, WAITING);
    assert!(!r.role_exists("orders").await);
}

/// Polls `f` every few milliseconds for at most ten seconds.
async fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn an_edited_admin_secret_checks_its_server_and_then_its_databases_at_once() {
    use blue_kubernetes::{controller, start, Config};
    let r = Rig::bare();
    let client: Arc<dyn blue_kubernetes_client::Client> = Arc::new(r.cluster.clone());
    let mut config = Config::new(client, vec![r.servers.clone(), r.package.clone()]);
    config.namespace = r.ns.as_str().into();
    config.names = postgres_operator::package::names();
    // An hour for everything but the watches: only an event can tell.
    config.poll_ms = 3_600_000;
    config.resync_ms = 3_600_000;
    let runtime = start(controller(config).unwrap()).unwrap();
    let hourly = |port: u16| {
        let config = json!({"host": "127.0.0.1", "port": port, "adminSecretRef": {"name": common::ADMIN_SECRET}});
        json!({"reconcileInterval": "1h", "config": config})
    };
    let servers = postgres_operator::postgres_server::descriptor();
    r.cluster
        .create(&servers, &r.ns, SERVER, hourly(r.pg.port()));
    r.create("orders", json!({"reconcileInterval": "1h", "config": {}}));
    let phase = |name: &str| r.resource(name).map(|o| o["status"]["phase"].clone());
    let server_phase = || r.server(SERVER).map(|o| o["status"]["phase"].clone());
    eventually("orders Ready", || phase("orders") == Some(json!("Ready"))).await;

    let admin = r.secret_path(common::ADMIN_SECRET);
    r.cluster.edit_object(&admin, |s| {
        s["data"]["password"] = json!(base64_of("wrong"));
    });
    eventually("the server Failed", || {
        server_phase() == Some(json!("Failed"))
    })
    .await;
    eventually("orders Waiting", || {
        phase("orders") == Some(json!("Waiting"))
    })
    .await;
    runtime.stop().await;
}

fn base64_of(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}
