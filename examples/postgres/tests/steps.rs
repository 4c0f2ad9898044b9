//! The durable steps on a real server: what `status.workflow` and the
//! steps audit show after a clean run, a failure at step k, and a crash
//! at every step boundary of converge and delete.

mod common;

use blue_kubernetes::Report;

use blue_kubernetes::resource::{Phase, Reason};
use blue_testkit::CrashAt;
use common::Rig;
use postgres_operator::steps::{CONVERGE, DELETE};
use serde_json::json;

const READY: Report = Report::Reconciled(Phase::Ready, Reason::Converged);

fn owned(steps: &[&str]) -> Vec<String> {
    steps.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn a_new_resource_runs_its_five_steps_once_each_in_order() {
    let r = Rig::new().await;
    r.create("orders", json!({"config": {}}));
    assert_eq!(r.reconcile("orders").await, READY);

    assert_eq!(r.attempts_of("orders").await, owned(&CONVERGE));
    let workflow = &r.resource("orders").unwrap()["status"]["workflow"];
    assert_eq!(workflow["state"], "Done");
    let steps = workflow["steps"].as_array().unwrap();
    let names: Vec<_> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, CONVERGE);
    assert!(steps
        .iter()
        .all(|s| s["state"] == "Done" && s["attempts"] == 1));
    let run = workflow["run"].as_str().unwrap();
    assert!(r
        .audit()
        .await
        .iter()
        .all(|a| a.run == run && a.event == "create"));
    // The grants step: another role may not connect to the database.
    r.admin()
        .await
        .batch_execute("CREATE ROLE other LOGIN PASSWORD 'other-pw'")
        .await
        .unwrap();
    assert!(r.login("other", "other-pw", "orders").await.is_err());
}

#[tokio::test]
async fn a_failure_at_the_database_step_is_retried_from_that_step() {
    let r = Rig::new().await;
    // Step 3 of 5 fails for real: the database exists, owned by another role.
    let admin = r.admin().await;
    for sql in [
        "CREATE ROLE squatter",
        "CREATE DATABASE shop OWNER squatter",
    ] {
        admin.batch_execute(sql).await.unwrap();
    }
    r.create("shop", json!({"config": {}}));
    let failed = Report::Reconciled(Phase::Failed, Reason::ExecutionFailed);
    assert_eq!(r.reconcile("shop").await, failed);
    let status = &r.resource("shop").unwrap()["status"];
    let message = status["conditions"].to_string();
    assert!(message.contains("step 3 (database)"), "{message}");

    admin.batch_execute("DROP DATABASE shop").await.unwrap();
    r.next_check();
    assert_eq!(r.reconcile("shop").await, READY);
    let attempts = r.attempts_of("shop").await;
    let want = [
        "password",
        "role",
        "database",
        "database!",
        "grants",
        "connection",
    ];
    assert_eq!(attempts, owned(&want), "steps 1 and 2 ran once");
    let runs: Vec<_> = r.audit().await.into_iter().map(|a| a.run).collect();
    assert!(runs.windows(2).all(|w| w[0] == w[1]), "one run: {runs:?}");
    assert_eq!(r.owner_of("shop").await.as_deref(), Some("shop"));
}

#[tokio::test]
async fn a_crash_at_any_converge_boundary_resumes_without_repeating_a_done_step() {
    let mut r = Rig::new().await;
    for (i, step) in CONVERGE.iter().enumerate() {
        for (j, at) in [
            CrashAt::StepStarted(step.to_string()),
            CrashAt::StepEnded(step.to_string()),
        ]
        .into_iter()
        .enumerate()
        {
            let name = format!("c{i}-{j}");
            r.create(&name, json!({"config": {}}));
            r.op.crash_at(at.clone(), &name).await;
            assert_eq!(r.reconcile(&name).await, READY, "{at:?}");

            // The step cut short ran again, interrupted; every other once.
            // A crash as the last step ended loses only the final write:
            // observe then finds everything in place and ends the run.
            let mut want = owned(&CONVERGE);
            match (j, i + 1 == CONVERGE.len()) {
                (0, _) => want[i] = format!("{step}!"),
                (_, false) => want.insert(i + 1, format!("{step}!")),
                (_, true) => {}
            }
            assert_eq!(r.attempts_of(&name).await, want, "{at:?}");
            assert_eq!(r.owner_of(&name).await.as_deref(), Some(name.as_str()));
            let secret = format!("{name}-connection");
            r.app_login(&secret).await.expect("the Secret logs in");
        }
    }
}

#[tokio::test]
async fn a_crash_in_the_middle_of_destroy_resumes_at_the_role() {
    let mut r = Rig::new().await;
    r.create("gone", json!({"config": {}, "deletionPolicy": "Destroy"}));
    assert_eq!(r.reconcile("gone").await, READY);
    r.delete("gone");
    r.op.crash_at(CrashAt::StepEnded("database".into()), "gone")
        .await;
    assert_eq!(r.owner_of("gone").await, None, "the database was dropped");
    assert!(r.role_exists("gone").await, "the role was not");

    // The next process resumes the delete run.
    assert_eq!(r.reconcile("gone").await, Report::Released);
    assert!(!r.role_exists("gone").await);
    let deleting: Vec<_> = r
        .audit()
        .await
        .into_iter()
        .filter(|a| a.event == "delete")
        .collect();
    let steps: Vec<_> = deleting
        .iter()
        .map(|a| (a.step.as_str(), a.interrupted))
        .collect();
    assert_eq!(
        steps,
        [(DELETE[0], false), (DELETE[0], true), (DELETE[1], false)]
    );
}
