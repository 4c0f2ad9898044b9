//! A step name is used once per pass: a second `run` of a name that
//! already ran is a broken step rule, never an answer from the first one.

use super::{logged, reconcile_after_backoff, Bed};
use crate::common::{condition, widgets};
use blue_kubernetes::package::NoOutputs;
use blue_kubernetes::resource::{Phase, Reason};
use blue_kubernetes::{
    async_trait, CallbackResult, Context, IdentityContext, Infrastructure, Observation, Outcome,
    Package, Report, ResourceSchema,
};
use blue_testkit::FakeInfra;
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex};
use tracing::Level;

const DATABASES: [&str; 3] = ["app", "audit", "billing"];

/// What each `run("create-db", ..)` call answered, in order.
type Answers = Arc<Mutex<Vec<Result<String, String>>>>;

/// A converge that creates three databases through one step name: the
/// mistake the rule is for. It keeps every answer and goes on, so only
/// the controller's rule can fail the pass.
struct OneNameForThree {
    infra: FakeInfra,
    answers: Answers,
}

fn one_name_for_three(infra: &FakeInfra, answers: &Answers) -> Package {
    let package = OneNameForThree {
        infra: infra.clone(),
        answers: answers.clone(),
    };
    Package::new(package).unwrap()
}

type Cx = Context<Map<String, Value>>;

#[async_trait]
impl Infrastructure for OneNameForThree {
    type Config = Map<String, Value>;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(widgets()).steps()
    }

    async fn identity(
        &self,
        cx: &IdentityContext<Self::Config>,
    ) -> CallbackResult<Vec<Option<String>>> {
        Ok(self.infra.identity(cx.profile()))
    }

    async fn observe(&self, cx: &Cx) -> CallbackResult<Observation<NoOutputs>> {
        let made = |db: &str| self.infra.get(&format!("{}/{db}", cx.profile())).is_some();
        let all = DATABASES.iter().all(|db| made(db));
        Ok(Observation::new(made("app"), all, all))
    }

    async fn converge(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        let steps = cx.steps();
        for db in DATABASES {
            let (infra, place) = (self.infra.clone(), format!("{}/{db}", cx.profile()));
            let answer = steps
                .run("create-db", |_| async move {
                    infra.set(&place, json!(db));
                    Ok(db.to_string())
                })
                .await;
            let answer = answer.map_err(|e| e.to_string());
            self.answers.lock().unwrap().push(answer);
        }
        Ok(Outcome::done())
    }

    async fn delete(&self, _: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        Ok(Outcome::done())
    }
}

#[test]
fn a_step_name_run_twice_in_a_pass_fails_it_as_invalid_step_without_an_answer() {
    let (infra, answers) = (FakeInfra::new(), Answers::default());
    let bed = Bed::new(one_name_for_three(&infra, &answers));
    bed.create(json!({"config": {}}));
    let (report, lines) = logged(bed.reconcile());
    let invalid = Report::Reconciled(Phase::Failed, Reason::InvalidStep);
    assert_eq!(report, invalid);
    let said = answers.lock().unwrap().clone();
    assert_eq!(said.len(), 3);
    assert_eq!(said[0], Ok("app".to_string()));
    for later in &said[1..] {
        let error = later.as_ref().expect_err("no answer for a repeated name");
        assert!(error.contains("create-db"), "{error}");
    }
    // One effect: the repeats never ran.
    assert_eq!(infra.get("dev--w/app"), Some(json!("app")));
    assert_eq!(infra.get("dev--w/audit"), None);
    assert_eq!(infra.get("dev--w/billing"), None);
    // The operator's log names the step; status says the generic reason.
    let refused: Vec<&String> = lines
        .iter()
        .filter(|(level, l)| *level == Level::WARN && l.contains("durable step refused"))
        .map(|(_, l)| l)
        .collect();
    assert!(!refused.is_empty(), "{lines:?}");
    assert!(
        refused.iter().all(|l| l.contains("step=\"create-db\"")),
        "{refused:?}"
    );
    let status = bed.status();
    assert_eq!(condition(&status, "Ready")["reason"], "InvalidStep");
    assert_eq!(status["retryCount"], 1, "retried with backoff");
    let text = status.to_string();
    assert!(!text.contains("already ran"), "{text}");

    // The retry (after its backoff) fails the same way, still one effect.
    let (report, _) = logged(reconcile_after_backoff(&bed));
    assert_eq!(report, invalid);
    assert_eq!(bed.status()["retryCount"], 2);
    assert_eq!(infra.get("dev--w/audit"), None);
    let said = answers.lock().unwrap().clone();
    assert_eq!(said[3], Ok("app".to_string()), "recorded, not rerun");
    assert!(said[4].is_err() && said[5].is_err());
}
