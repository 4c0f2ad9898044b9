//! A scripted kubectl that keeps one ConfigMap in memory with the API
//! server's create/replace/delete-precondition rules: the fake
//! infrastructure of this package's tests.

use crate::package::{names, Cx, LocalConfigMaps};
use blue_kubernetes::package::NoOutputs;
use blue_kubernetes::{CallbackResult, Context, Infrastructure, Observation, Outcome};
use blue_kubernetes_client::{kubectl_client, Invocation, KubectlClient, KubectlConfig, Output};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

#[derive(Default)]
pub(super) struct Server {
    pub(super) config_map: Option<Value>,
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
            // `get --raw PATH`: a missing object is NotFound, as the API
            // server says; `get configmaps NAME --ignore-not-found`: nothing.
            "get" => match &self.config_map {
                Some(cm) => ok(cm.to_string()),
                None if args.iter().any(|a| a == "--ignore-not-found") => ok(String::new()),
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
                let stored = cm.to_string();
                self.config_map = Some(cm);
                ok(stored)
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
                let stored = cm.to_string();
                self.config_map = Some(cm);
                ok(stored)
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

pub(super) struct Fixture {
    pub(super) server: Arc<Mutex<Server>>,
    pub(super) client: Arc<KubectlClient>,
    /// The package under test.
    package: LocalConfigMaps,
}

impl Fixture {
    pub(super) fn new(existing: Option<Value>) -> Self {
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
            kubectl_client(KubectlConfig::for_context("test").with_runner(runner)).unwrap();
        Fixture {
            server,
            client: Arc::new(client),
            package: LocalConfigMaps::default(),
        }
    }

    /// The context of a callback for `resource`, with the scripted kubectl
    /// as its API handle.
    fn cx(&self, resource: &Value) -> Cx {
        let cx: Cx = Context::from_resource(resource, names()).unwrap();
        cx.with_api(self.client.clone())
    }

    pub(super) async fn observe(&self, resource: &Value) -> CallbackResult<Observation<NoOutputs>> {
        self.package.observe(&self.cx(resource)).await
    }

    pub(super) async fn converge(&self, resource: &Value) -> CallbackResult<Outcome<NoOutputs>> {
        self.package.converge(&self.cx(resource)).await
    }

    pub(super) async fn delete(&self, resource: &Value) -> CallbackResult<Outcome<NoOutputs>> {
        self.package.delete(&self.cx(resource)).await
    }

    pub(super) fn config_map(&self) -> Option<Value> {
        self.server.lock().unwrap().config_map.clone()
    }

    pub(super) fn calls(&self) -> Vec<String> {
        self.server.lock().unwrap().calls.clone()
    }
}
