//! The callbacks against a scripted kubectl that keeps one ConfigMap in
//! memory with the API server's create/replace/delete-precondition rules.

use super::*;
use crate::configmap::OWNER_ANNOTATION;
use blue_kubernetes_client::{kubectl_client, Invocation, KubectlClient, KubectlOptions, Output};
use std::sync::Mutex;

#[derive(Default)]
struct Server {
    config_map: Option<Value>,
    next_rv: u64,
    calls: Vec<String>,
}

fn fail(reason: &str) -> Output {
    Output {
        exit_code: 1,
        stdout: String::new(),
        stderr: format!("Error from server ({reason}): scripted"),
    }
}

fn cm_json(cm: Option<&Value>) -> String {
    cm.map(Value::to_string).unwrap_or_default()
}

fn ok(stdout: String) -> Output {
    Output {
        exit_code: 0,
        stdout,
        stderr: String::new(),
    }
}

impl Server {
    fn handle(&mut self, args: &[String]) -> Output {
        let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or("");
        self.calls.push(arg(0).to_string());
        let read_input = || -> Value {
            let path = &args[args.iter().position(|a| a == "-f").unwrap() + 1];
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
        };
        match arg(0) {
            "get" => match &self.config_map {
                Some(cm) => ok(cm.to_string()),
                None => fail("NotFound"),
            },
            "create" => {
                if self.config_map.is_some() {
                    return fail("AlreadyExists");
                }
                let mut cm = read_input();
                self.next_rv += 1;
                cm["metadata"]["uid"] = json!("cm-uid-1");
                cm["metadata"]["resourceVersion"] = json!(self.next_rv.to_string());
                self.config_map = Some(cm);
                ok(cm_json(self.config_map.as_ref()))
            }
            "replace" => {
                let mut cm = read_input();
                let current = self.config_map.as_ref().map(|c| &c["metadata"]);
                if current.map(|m| &m["resourceVersion"])
                    != Some(&cm["metadata"]["resourceVersion"])
                {
                    return fail("Conflict");
                }
                self.next_rv += 1;
                cm["metadata"]["uid"] = current.unwrap()["uid"].clone();
                cm["metadata"]["resourceVersion"] = json!(self.next_rv.to_string());
                self.config_map = Some(cm);
                ok(cm_json(self.config_map.as_ref()))
            }
            "delete" => {
                let body = read_input();
                let Some(cm) = &self.config_map else {
                    return fail("NotFound");
                };
                let pre = &body["preconditions"];
                if pre["uid"] != cm["metadata"]["uid"]
                    || pre["resourceVersion"] != cm["metadata"]["resourceVersion"]
                {
                    return fail("Conflict");
                }
                self.config_map = None;
                ok("{}".into())
            }
            _ => fail("BadRequest"),
        }
    }
}

struct Fixture {
    server: Arc<Mutex<Server>>,
    client: KubectlClient,
    effects: Arc<Mutex<Vec<Effect>>>,
}

impl Fixture {
    fn new(existing: Option<Value>) -> Self {
        let server = Arc::new(Mutex::new(Server {
            config_map: existing,
            next_rv: 100,
            calls: Vec::new(),
        }));
        let s = server.clone();
        let runner = move |inv: Invocation| {
            // argv = [kubectl, --context, test, --request-timeout=30s, args...]
            let out = s.lock().unwrap().handle(&inv.argv[4..]);
            async move { Ok(out) }
        };
        let client =
            kubectl_client(KubectlOptions::for_context("test").with_runner(runner)).unwrap();
        Fixture {
            server,
            client,
            effects: Arc::default(),
        }
    }

    fn sink(&self) -> impl Fn(&Effect) + Send + Sync {
        let effects = self.effects.clone();
        move |e: &Effect| effects.lock().unwrap().push(e.clone())
    }

    fn config_map(&self) -> Option<Value> {
        self.server.lock().unwrap().config_map.clone()
    }

    fn calls(&self) -> Vec<String> {
        self.server.lock().unwrap().calls.clone()
    }

    fn effects(&self) -> Vec<Effect> {
        self.effects.lock().unwrap().clone()
    }
}

fn options(state: &str, data: Value) -> Options {
    Options::from_resource(&json!({
        "metadata": {"name": "app", "namespace": "dev", "uid": "uid-1"},
        "spec": {"state": state, "config": {"data": data}}
    }))
}

fn foreign_config_map() -> Value {
    json!({
        "metadata": {
            "name": "app", "namespace": "dev", "uid": "cm-uid-0", "resourceVersion": "7",
            "annotations": {OWNER_ANNOTATION: "someone-else"}
        },
        "data": {"theirs": "1"}
    })
}

fn target() -> Target {
    Target {
        namespace: "dev".into(),
        name: "app".into(),
    }
}

#[tokio::test]
async fn converge_creates_then_observes_ready() {
    let f = Fixture::new(None);
    let opts = options("running", json!({"k": "v"}));
    assert_eq!(
        observe(&f.client, &opts).await.unwrap(),
        Observation::ABSENT
    );
    converge(&f.client, &opts, &f.sink()).await.unwrap();
    let cm = f.config_map().unwrap();
    assert_eq!(cm["metadata"]["annotations"][OWNER_ANNOTATION], "uid-1");
    assert_eq!(cm["data"], json!({"k": "v"}));
    assert_eq!(observe(&f.client, &opts).await.unwrap(), Observation::READY);
    assert_eq!(f.effects(), [Effect::Created(target())]);
}

#[tokio::test]
async fn drift_is_replaced_and_stop_empties_the_data() {
    let f = Fixture::new(None);
    converge(&f.client, &options("running", json!({"k": "v"})), &f.sink())
        .await
        .unwrap();
    f.server.lock().unwrap().config_map.as_mut().unwrap()["data"]["k"] = json!("tampered");
    let running = options("running", json!({"k": "v"}));
    assert!(!observe(&f.client, &running).await.unwrap().matches);
    converge(&f.client, &running, &f.sink()).await.unwrap();
    assert_eq!(f.config_map().unwrap()["data"], json!({"k": "v"}));

    let stopped = options("stopped", json!({"k": "v"}));
    assert!(!observe(&f.client, &stopped).await.unwrap().matches);
    converge(&f.client, &stopped, &f.sink()).await.unwrap();
    assert_eq!(f.config_map().unwrap()["data"], json!({}));
    assert_eq!(
        observe(&f.client, &stopped).await.unwrap(),
        Observation::READY
    );
    assert_eq!(
        f.effects(),
        [
            Effect::Created(target()),
            Effect::Replaced(target()),
            Effect::Replaced(target())
        ]
    );
}

#[tokio::test]
async fn a_foreign_config_map_is_a_conflict_and_is_never_written_or_deleted() {
    let f = Fixture::new(Some(foreign_config_map()));
    let opts = options("running", json!({"k": "v"}));
    assert_eq!(
        observe(&f.client, &opts).await.unwrap(),
        Observation::ABSENT
    );
    let err = converge(&f.client, &opts, &f.sink()).await.unwrap_err();
    assert!(err.is::<OwnershipConflict>());
    delete(&f.client, &opts, &f.sink()).await.unwrap();
    assert_eq!(f.config_map(), Some(foreign_config_map()));
    assert_eq!(f.calls(), ["get", "get", "get"]);
    assert_eq!(f.effects(), [Effect::OwnershipConflict(target())]);
}

#[tokio::test]
async fn delete_removes_ours_and_tolerates_absence() {
    let f = Fixture::new(None);
    let opts = options("running", json!({}));
    converge(&f.client, &opts, &f.sink()).await.unwrap();
    delete(&f.client, &opts, &f.sink()).await.unwrap();
    assert_eq!(f.config_map(), None);
    delete(&f.client, &opts, &f.sink()).await.unwrap();
    assert_eq!(f.calls(), ["get", "create", "get", "delete", "get"]);
    assert_eq!(
        f.effects(),
        [Effect::Created(target()), Effect::Deleted(target())]
    );
}

#[tokio::test]
async fn invalid_options_fail_before_any_kubectl_call() {
    let f = Fixture::new(None);
    let opts = options("running", json!({"k": 1}));
    assert!(observe(&f.client, &opts).await.is_err());
    assert!(converge(&f.client, &opts, &f.sink()).await.is_err());
    assert!(f.calls().is_empty());
}

#[test]
fn the_package_builds_and_names_its_type() {
    let f = Fixture::new(None);
    let package = package(Arc::new(f.client), Arc::new(|_: &Effect| {})).unwrap();
    assert_eq!(
        package.descriptor().qualified_plural(),
        "localconfigmaps.examples.blue.dev"
    );
    assert_eq!(
        Effect::OwnershipConflict(target()).to_string(),
        "localconfigmap dev/app: configmap belongs to someone else; not touched"
    );
}
