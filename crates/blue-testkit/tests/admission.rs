//! Validating admission: the checks a pass runs before any effect that
//! need no I/O, judged at the door with the same code, denying with
//! user-facing messages and field paths only.

use blue_kubernetes::admission::{Admission, AdmissionRequest, ReviewError, Verdict};
use blue_kubernetes::package::{NoOutputs, UserFacingMessage, ValidationErrors, WorkflowOutcome};
use blue_kubernetes::related::Reference;
use blue_kubernetes::{
    async_trait, CallbackResult, Context, Infrastructure, Observation, Outcome, Package,
    ResourceSchema,
};
use blue_kubernetes_client::ResourceDescriptor;
use blue_testkit::{FakeCluster, TestOperator};
use serde_json::{json, Value};

const PLANTED: &str = "s3cr3t-planted-value";

fn databases() -> ResourceDescriptor {
    ResourceDescriptor::new("db.example.com", "v1", "databases", "Database")
}

fn servers() -> ResourceDescriptor {
    ResourceDescriptor::new("db.example.com", "v1", "servers", "Server")
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct DbConfig {
    size: u32,
    zone: String,
    // Resolved by the controller, never read by the package itself.
    #[serde(default)]
    #[allow(dead_code)]
    server_ref: Option<Reference>,
    #[serde(default)]
    owner: Option<String>,
}

/// `size` must be at most 64 (user-facing, with its field); `owner`
/// `root` is refused with a log-only message that quotes the config, and
/// a message built from the connection (which admission never has).
/// `refuse_all`: every spec is refused.
struct Databases {
    refuse_all: bool,
}

#[async_trait]
impl Infrastructure for Databases {
    type Config = DbConfig;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(databases())
            .connection_secret()
            .immutable("zone")
            .reference("serverRef", servers())
    }

    async fn validate(&self, cx: &Context<DbConfig>) -> CallbackResult<ValidationErrors> {
        let mut errors = ValidationErrors::new();
        if self.refuse_all {
            errors.push_user_facing(UserFacingMessage::new("this operator refuses every spec"));
        }
        if cx.config().size > 64 {
            errors.push_user_facing(
                UserFacingMessage::new("must be at most 64").with_field("spec.config.size"),
            );
        }
        if cx.config().owner.as_deref() == Some("root") {
            errors.push(format!("owner root refused; zone {}", cx.config().zone));
            let password = match cx.connection() {
                Some(c) => c.get("password").await.ok().flatten(),
                None => None,
            }
            .map(|p| p.expose().to_string());
            errors.push_user_facing(UserFacingMessage::new(format!(
                "owner must not be root{}",
                password.map(|p| format!(" ({p})")).unwrap_or_default()
            )));
        }
        Ok(errors)
    }

    async fn observe(&self, _: &Context<DbConfig>) -> CallbackResult<Observation<NoOutputs>> {
        Ok(Observation::ABSENT)
    }

    async fn converge(&self, _: &Context<DbConfig>) -> CallbackResult<Outcome<NoOutputs>> {
        Ok(Outcome::done())
    }

    async fn delete(&self, _: &Context<DbConfig>) -> CallbackResult<Outcome<NoOutputs>> {
        Ok(Outcome::done())
    }
}

fn server_package() -> Package {
    Package::builder(servers())
        .identity(|opts| Ok(vec![Some(opts.profile().to_string())]))
        .observe(|_| Ok(Observation::ABSENT))
        .converge(|_| Ok(WorkflowOutcome::new()))
        .delete(|_| Ok(WorkflowOutcome::new()))
        .build()
        .unwrap()
}

fn operator(refuse_all: bool) -> TestOperator {
    let package = Package::new(Databases { refuse_all }).unwrap();
    TestOperator::on(&FakeCluster::new(), vec![package, server_package()])
}

fn fields(verdict: &Verdict) -> Vec<&str> {
    verdict
        .causes()
        .iter()
        .filter_map(|c| c.field.as_deref())
        .collect()
}

fn good() -> Value {
    json!({"config": {"size": 8, "zone": "eu"}})
}

#[tokio::test]
async fn a_valid_create_is_admitted() {
    let op = operator(false);
    assert_eq!(op.admit_create("db", good()).await, Verdict::Allowed);
}

#[tokio::test]
async fn an_invalid_create_is_refused_with_the_packages_message_and_field() {
    let op = operator(false);
    let verdict = op
        .admit_create("db", json!({"config": {"size": 99, "zone": "eu"}}))
        .await;
    assert_eq!(fields(&verdict), ["spec.config.size"]);
    assert_eq!(verdict.message(), "spec.config.size: must be at most 64");
    let review = verdict.to_review("u-1");
    assert_eq!(review["response"]["allowed"], false);
    assert_eq!(
        review["response"]["status"]["details"]["causes"][0]["field"],
        "spec.config.size"
    );
}

#[tokio::test]
async fn a_config_that_does_not_decode_is_refused_naming_the_field_and_type_never_the_value() {
    let op = operator(false);
    let verdict = op
        .admit_create("db", json!({"config": {"size": PLANTED, "zone": "eu"}}))
        .await;
    assert_eq!(fields(&verdict), ["spec.config.size"]);
    let message = verdict.message();
    assert!(message.contains("expected u32"), "{message}");
    assert!(!message.contains(PLANTED), "{message}");
    let review = verdict.to_review("u").to_string();
    assert!(!review.contains(PLANTED), "{review}");
}

#[tokio::test]
async fn malformed_common_fields_and_reference_names_are_refused_with_their_fields() {
    let op = operator(false);
    let spec = json!({
        "reconcileInterval": "10d",
        "deletionPolicy": PLANTED,
        "writeConnectionSecretToRef": {"name": "Not/A/Name"},
        "config": {"size": 1, "zone": "eu", "serverRef": {"name": "../etc"}}
    });
    let verdict = op.admit_create("db", spec).await;
    assert_eq!(
        fields(&verdict),
        [
            "spec.reconcileInterval",
            "spec.deletionPolicy",
            "spec.writeConnectionSecretToRef.name",
            "spec.config.serverRef.name"
        ]
    );
    assert!(!verdict.message().contains(PLANTED));
}

#[tokio::test]
async fn an_immutable_field_edit_is_refused_and_other_edits_are_judged() {
    let op = operator(false);
    op.create("db", good());
    let verdict = op
        .admit_edit("db", |spec| spec["config"]["zone"] = json!("us"))
        .await;
    assert_eq!(fields(&verdict), ["spec.config.zone"]);
    let removed = op
        .admit_edit("db", |spec| {
            spec["config"].as_object_mut().unwrap().remove("zone");
        })
        .await;
    assert!(
        fields(&removed).contains(&"spec.config.zone"),
        "{removed:?}"
    );
    let resized = op
        .admit_edit("db", |spec| spec["config"]["size"] = json!(9))
        .await;
    assert_eq!(resized, Verdict::Allowed);
    let too_big = op
        .admit_edit("db", |spec| spec["config"]["size"] = json!(65))
        .await;
    assert_eq!(fields(&too_big), ["spec.config.size"]);
}

#[tokio::test]
async fn a_recorded_profile_cannot_be_changed_at_the_door() {
    let op = operator(false);
    let created = op.create("db", good());
    let mut old = created.clone();
    old["status"] = json!({"profile": "dev--db"});
    let mut new = old.clone();
    new["spec"]["config"]["profile"] = json!("elsewhere");
    let verdict = op
        .admission()
        .judge(&AdmissionRequest::update(old.clone(), new))
        .await;
    assert_eq!(fields(&verdict), ["spec.config.profile"]);
    let mut same = old.clone();
    same["spec"]["config"]["profile"] = json!("dev--db");
    let verdict = op
        .admission()
        .judge(&AdmissionRequest::update(old, same))
        .await;
    assert_eq!(verdict, Verdict::Allowed);
}

#[tokio::test]
async fn an_update_leaving_spec_unchanged_is_allowed_while_the_validator_refuses_every_spec() {
    let op = operator(true);
    assert!(!op.admit_create("db", good()).await.is_allowed());
    let stored = op.create("db", good());
    let mut finalized = stored.clone();
    finalized["metadata"]["finalizers"] = json!(["colors.getcolors.ai/infrastructure"]);
    finalized["metadata"]["labels"] = json!({"team": "a"});
    let request = AdmissionRequest::update(stored, finalized);
    assert_eq!(op.admission().judge(&request).await, Verdict::Allowed);
    let edited = op
        .admit_edit("db", |spec| spec["config"]["size"] = json!(9))
        .await;
    assert_eq!(
        edited.message(),
        "spec.config: this operator refuses every spec"
    );
}

#[tokio::test]
async fn status_writes_and_deletes_are_never_judged() {
    let op = operator(true);
    let stored = op.create("db", json!({"config": {"size": "not a number"}}));
    let mut with_status = stored.clone();
    with_status["spec"]["config"]["size"] = json!(1000);
    let status = AdmissionRequest::update(stored.clone(), with_status).of_status();
    assert_eq!(op.admission().judge(&status).await, Verdict::Allowed);
    let delete = AdmissionRequest::delete(stored);
    assert_eq!(op.admission().judge(&delete).await, Verdict::Allowed);
}

#[tokio::test]
async fn log_only_messages_and_connection_values_never_reach_a_denial() {
    let op = operator(false);
    let spec = json!({"config": {"size": 1, "zone": PLANTED, "owner": "root"}});
    let verdict = op.admit_create("db", spec).await;
    assert_eq!(verdict.message(), "spec.config: owner must not be root");
    let review = verdict.to_review("u").to_string();
    assert!(!review.contains(PLANTED), "{review}");
    assert!(!review.contains("refused; zone"), "{review}");
}

#[tokio::test]
async fn only_log_only_messages_still_refuse_and_say_where_the_reasons_are() {
    let package = Package::builder(databases())
        .validate(|_| {
            Ok(ValidationErrors::from(vec![format!(
                "quota of {PLANTED} exceeded"
            )]))
        })
        .identity(|opts| Ok(vec![Some(opts.profile().to_string())]))
        .observe(|_| Ok(Observation::ABSENT))
        .converge(|_| Ok(WorkflowOutcome::new()))
        .delete(|_| Ok(WorkflowOutcome::new()))
        .build()
        .unwrap();
    let op = TestOperator::new(package);
    let verdict = op.admit_create("db", good()).await;
    assert_eq!(fields(&verdict), ["spec.config"]);
    assert!(!verdict.message().contains(PLANTED));
}

#[tokio::test]
async fn a_failing_or_panicking_validate_admits_for_the_pass_to_judge() {
    for panics in [false, true] {
        let package = Package::builder(databases())
            .validate(move |_| -> CallbackResult<ValidationErrors> {
                match panics {
                    true => panic!("{PLANTED}"),
                    false => Err(PLANTED.into()),
                }
            })
            .identity(|opts| Ok(vec![Some(opts.profile().to_string())]))
            .observe(|_| Ok(Observation::ABSENT))
            .converge(|_| Ok(WorkflowOutcome::new()))
            .delete(|_| Ok(WorkflowOutcome::new()))
            .build()
            .unwrap();
        let op = TestOperator::new(package);
        assert_eq!(op.admit_create("db", good()).await, Verdict::Allowed);
    }
}

#[tokio::test]
async fn objects_outside_the_managed_namespaces_are_admitted() {
    let op = operator(true);
    let object = json!({
        "apiVersion": "db.example.com/v1", "kind": "Database",
        "metadata": {"name": "db", "namespace": "elsewhere"},
        "spec": {"config": {"size": 1000}}
    });
    let verdict = op
        .admission()
        .judge(&AdmissionRequest::create(object))
        .await;
    assert_eq!(verdict, Verdict::Allowed);
}

fn review(request: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": request,
    }))
    .unwrap()
}

fn database(spec: Value) -> Value {
    json!({
        "apiVersion": "db.example.com/v1", "kind": "Database",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": spec
    })
}

#[tokio::test]
async fn hostile_review_bodies_get_an_error_answer() {
    let op = operator(false);
    let admission: Admission = op.admission();
    let path = Admission::path_of(&databases());
    for body in [
        &b"{not json"[..],
        b"[]",
        b"{}",
        b"\xff\xfe",
        br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#,
    ] {
        assert_eq!(
            admission.review(&path, body).await,
            Err(ReviewError::Malformed)
        );
    }
    let resource = json!({"group": "db.example.com", "version": "v1", "resource": "databases"});
    let create = review(json!({
        "uid": "1", "operation": "CREATE", "namespace": "default", "resource": resource,
        "object": database(json!({"config": {"size": 99, "zone": "eu"}}))
    }));
    assert_eq!(
        admission.review("/validate/other", &create).await,
        Err(ReviewError::NotFound)
    );
    let answer = admission.review(&path, &create).await.unwrap();
    assert_eq!(answer["response"]["uid"], "1");
    assert_eq!(answer["response"]["allowed"], false);
    let wrong_kind = review(json!({
        "uid": "2", "operation": "CREATE", "namespace": "default",
        "resource": {"group": "", "version": "v1", "resource": "secrets"},
        "object": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    }));
    let answer = admission.review(&path, &wrong_kind).await.unwrap();
    assert_eq!(answer["response"]["allowed"], false);
    assert_eq!(answer["response"]["status"]["code"], 400);
    let no_old = review(json!({
        "uid": "3", "operation": "UPDATE", "namespace": "default", "resource": resource,
        "object": database(good())
    }));
    let answer = admission.review(&path, &no_old).await.unwrap();
    assert_eq!(answer["response"]["status"]["code"], 400);
}
