//! The webhook server's conversion route and its own readiness: reviews
//! answered over TLS at /convert, hostile ones answered with an error
//! without harm to the server, and a readiness that answers before the
//! controller has listed anything.

mod https_client;

use blue_kubernetes::package::NoOutputs;
use blue_kubernetes::runner::webhook::{SelfSigned, WebhookServer, WebhookTls, READY_PATH};
use blue_kubernetes::versions::{Conversion, Versions, MAX_REVIEW_BYTES};
use blue_kubernetes::{
    async_trait, CallbackResult, Context, Infrastructure, Observation, Outcome, Package,
    ResourceSchema,
};
use blue_kubernetes_client::ResourceDescriptor;
use blue_testkit::TestOperator;
use https_client::post;
use serde_json::{json, Value};
use tokio::net::TcpStream;

/// v1: `replicas` (was `size`) and a new `zone`.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct V1 {
    replicas: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    zone: Option<String>,
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct V1alpha1 {
    size: u32,
}

impl From<&V1> for V1alpha1 {
    fn from(v1: &V1) -> Self {
        Self { size: v1.replicas }
    }
}

impl From<V1alpha1> for V1 {
    fn from(old: V1alpha1) -> Self {
        Self {
            replicas: old.size,
            zone: None,
        }
    }
}

struct Widgets;

#[async_trait]
impl Infrastructure for Widgets {
    type Config = V1;
    type Outputs = NoOutputs;
    fn schema() -> ResourceSchema {
        ResourceSchema::new(ResourceDescriptor::new(
            "example.com",
            "v1",
            "widgets",
            "Widget",
        ))
    }
    fn versions() -> Versions<V1> {
        Versions::stored().served::<V1alpha1>("v1alpha1")
    }
    async fn observe(&self, _: &Context<V1>) -> CallbackResult<Observation<NoOutputs>> {
        Ok(Observation::ABSENT)
    }
    async fn converge(&self, _: &Context<V1>) -> CallbackResult<Outcome<NoOutputs>> {
        Ok(Outcome::done())
    }
    async fn delete(&self, _: &Context<V1>) -> CallbackResult<Outcome<NoOutputs>> {
        Ok(Outcome::done())
    }
}

fn widget(version: &str, config: Value) -> Value {
    json!({
        "apiVersion": format!("example.com/{version}"), "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", "uid": "5e1f"},
        "spec": {"config": config},
    })
}

fn review(uid: &str, desired: &str, objects: Vec<Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
    }))
    .unwrap()
}

/// One HTTP/1.1 request over TLS: (status, body).
async fn send(
    server: &WebhookServer,
    ca: &str,
    method: &str,
    path: &str,
    body: &[u8],
) -> (u16, String) {
    post(server, ca, method, path, body).await.unwrap()
}

async fn serve(op: &TestOperator) -> (WebhookServer, SelfSigned) {
    let made = SelfSigned::new(&[]).unwrap();
    let tls = WebhookTls::SelfSigned(made.clone());
    let address = "127.0.0.1:0".parse().unwrap();
    let server = WebhookServer::serve(address, op.admission(), &tls)
        .await
        .unwrap();
    (server, made)
}

fn response(body: &str) -> Value {
    let mut answer: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(answer["kind"], "ConversionReview", "{body}");
    answer["response"].take()
}

#[tokio::test]
async fn conversions_are_answered_at_convert_over_https_and_counted() {
    let op = TestOperator::new(Package::new(Widgets).unwrap());
    let (server, made) = serve(&op).await;
    let old = widget("v1alpha1", json!({"size": 3}));
    let body = review("r-1", "example.com/v1", vec![old]);
    let (status, body) = send(&server, made.ca_pem(), "POST", Conversion::PATH, &body).await;
    assert_eq!(status, 200, "{body}");
    let answer = response(&body);
    assert_eq!(answer["uid"], "r-1");
    assert_eq!(answer["result"]["status"], "Success", "{body}");
    let converted = &answer["convertedObjects"][0];
    assert_eq!(converted["apiVersion"], "example.com/v1");
    assert_eq!(converted["spec"]["config"], json!({"replicas": 3}));
    assert_eq!(converted["metadata"]["uid"], "5e1f");
    let metrics = op.controller().metrics().encode();
    let counted = "controller_runtime_webhook_requests_total{code=\"200\",webhook=\"/convert\"} 1";
    assert!(metrics.contains(counted), "{metrics}");
    server.stop().await;
}

#[tokio::test]
async fn the_servers_readiness_answers_before_the_controller_has_listed_anything() {
    // The controller never started: no watch has listed (its `/readyz`
    // on the metrics port would say not ready), yet conversions are
    // answered, so the server is ready.
    let op = TestOperator::new(Package::new(Widgets).unwrap());
    let (server, made) = serve(&op).await;
    let (status, body) = send(&server, made.ca_pem(), "GET", READY_PATH, b"").await;
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    let (status, _) = send(&server, made.ca_pem(), "POST", READY_PATH, b"{}").await;
    assert_eq!(status, 405);
    let address = server.address();
    server.stop().await;
    // Stopped, it answers nothing: the probe fails.
    assert!(TcpStream::connect(address).await.is_err());
}

#[tokio::test]
async fn hostile_conversion_reviews_are_answered_with_an_error_and_the_server_keeps_serving() {
    let op = TestOperator::new(Package::new(Widgets).unwrap());
    let (server, made) = serve(&op).await;
    let ca = made.ca_pem();
    let failure = |body: &str| {
        let answer = response(body);
        assert_eq!(answer["result"]["status"], "Failure", "{body}");
        assert!(answer.get("convertedObjects").is_none(), "{body}");
        answer
    };
    let path = Conversion::PATH;
    let (status, body) = send(&server, ca, "POST", path, b"{malformed").await;
    assert_eq!(status, 200);
    assert_eq!(failure(&body)["uid"], "");
    // A version the kind does not have, desired or given.
    let old = widget("v1alpha1", json!({"size": 3}));
    let (_, body) = send(
        &server,
        ca,
        "POST",
        path,
        &review("r-2", "example.com/v2", vec![old.clone()]),
    )
    .await;
    assert_eq!(
        failure(&body)["uid"],
        "r-2",
        "the request's uid, whatever else is wrong"
    );
    let v9 = widget("v9", json!({"size": 3}));
    let (_, body) = send(
        &server,
        ca,
        "POST",
        path,
        &review("r-3", "example.com/v1", vec![v9]),
    )
    .await;
    failure(&body);
    // An object of another kind, and one of another group.
    let mut gadget = old.clone();
    gadget["kind"] = json!("Gadget");
    let mut foreign = old.clone();
    foreign["apiVersion"] = json!("other.io/v1alpha1");
    for stranger in [gadget, foreign] {
        let (_, body) = send(
            &server,
            ca,
            "POST",
            path,
            &review("r-4", "example.com/v1", vec![stranger]),
        )
        .await;
        failure(&body);
    }
    // A list longer than converted.
    let many = vec![old.clone(); blue_kubernetes::versions::MAX_REVIEW_OBJECTS + 1];
    let (_, body) = send(
        &server,
        ca,
        "POST",
        path,
        &review("r-5", "example.com/v1", many),
    )
    .await;
    failure(&body);
    // A body over the bound is not read.
    let huge = vec![b' '; MAX_REVIEW_BYTES + 1];
    let (status, _) = send(&server, ca, "POST", path, &huge).await;
    // Refused before a review is parsed: too large, or (on a loaded
    // machine) not all sent within the client deadline.
    assert!(matches!(status, 413 | 408 | 0), "{status}");
    let (status, _) = send(&server, ca, "GET", path, b"").await;
    assert_eq!(status, 405);
    // Still serving, and right.
    let (status, body) = send(
        &server,
        ca,
        "POST",
        path,
        &review("r-6", "example.com/v1", vec![old]),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        response(&body)["convertedObjects"][0]["spec"]["config"]["replicas"],
        3
    );
    server.stop().await;
}

#[tokio::test]
async fn an_old_clients_read_modify_write_keeps_what_its_version_cannot_express() {
    let op = TestOperator::new(Package::new(Widgets).unwrap());
    op.create("w", json!({"config": {"replicas": 2, "zone": "eu-1"}}));
    let read = op.get_at("w", "v1alpha1").unwrap();
    assert_eq!(read["apiVersion"], "example.com/v1alpha1");
    assert_eq!(read["spec"]["config"], json!({"size": 2}));
    let stored = op.edit_at("w", "v1alpha1", |w| w["spec"]["config"]["size"] = json!(5));
    assert_eq!(
        stored["spec"]["config"],
        json!({"replicas": 5, "zone": "eu-1"})
    );
    assert_eq!(
        op.convert(&stored, "v2").unwrap_err(),
        "the desired API version is served by no kind this webhook converts"
    );
}
