//! The two judges of a CRD and the objects created against it: the real
//! API server (kube-apiserver 1.20 through blue-envtest) and FakeCluster.

use blue_envtest::Envtest;
use blue_kubernetes_client::{ApiPath, ApiRequest, Client, Method, ResourceDescriptor};
use blue_testkit::FakeCluster;
use serde_json::{json, Value};
use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a judge made of a CRD or an object: stored (the object as stored,
/// or `null` for a CRD) or refused (why, for the report only).
#[derive(Clone, Debug)]
pub enum Verdict {
    Stored(Value),
    Refused(String),
}

impl Verdict {
    pub fn stored(&self) -> Option<&Value> {
        match self {
            Verdict::Stored(v) => Some(v),
            Verdict::Refused(_) => None,
        }
    }
}

/// An object of type `d` named `name` with `spec`.
pub fn object(d: &ResourceDescriptor, namespace: &str, name: &str, spec: &Value) -> Value {
    json!({
        "apiVersion": d.api_version(),
        "kind": d.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    })
}

fn collection(d: &ResourceDescriptor, namespace: &str) -> ApiPath {
    let path = format!(
        "/apis/{}/{}/namespaces/{namespace}/{}",
        d.group, d.version, d.plural
    );
    ApiPath::parse(&path).expect("a valid collection path")
}

/// The real API server, shared by every test of this process.
pub struct Real {
    env: &'static Envtest,
    client: Arc<dyn Client>,
    pub namespace: String,
}

impl Real {
    pub fn start() -> Real {
        let env = Envtest::shared().unwrap_or_else(|e| panic!("{e}"));
        let namespace = env.namespace("fidelity").expect("a namespace");
        let client = env.client().expect("a client");
        Real {
            env,
            client,
            namespace,
        }
    }

    fn kubectl(&self, args: &[&str]) -> Command {
        let mut command = Command::new("kubectl");
        command
            .arg("--kubeconfig")
            .arg(self.env.kubeconfig())
            .args(["--context", self.env.context()])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    /// `kubectl create -f -` of each CRD, as an author applies the output
    /// of `crd --no-cel` (kubectl's own checks included), all at once.
    pub fn apply_crds(&self, crds: &[&Value]) -> Vec<Verdict> {
        let children: Vec<Child> = crds
            .iter()
            .map(|crd| {
                let mut child = self
                    .kubectl(&["create", "-f", "-", "-o", "json"])
                    .spawn()
                    .expect("kubectl runs");
                let mut stdin = child.stdin.take().expect("stdin");
                stdin.write_all(crd.to_string().as_bytes()).expect("stdin");
                child
            })
            .collect();
        children
            .into_iter()
            .map(|child| {
                let out = child.wait_with_output().expect("kubectl finishes");
                if out.status.success() {
                    Verdict::Stored(Value::Null)
                } else {
                    Verdict::Refused(String::from_utf8_lossy(&out.stderr).trim().to_string())
                }
            })
            .collect()
    }

    /// Waits until the server serves `d` (its CRD Established).
    pub async fn served(&self, d: &ResourceDescriptor) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let list = ApiRequest::get(collection(d, &self.namespace));
        while let Err(e) = self.client.send_raw(list.clone()).await {
            assert!(Instant::now() < deadline, "{} never served: {e}", d.group);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Creates `object` and returns its `spec` as stored.
    pub async fn create(&self, d: &ResourceDescriptor, object: Value) -> Verdict {
        let post = ApiRequest::new(Method::Post, collection(d, &self.namespace)).with_body(object);
        match self.client.send_raw(post).await {
            Ok(created) => Verdict::Stored(created.body.unwrap_or_default()["spec"].clone()),
            Err(e) => Verdict::Refused(e.to_string()),
        }
    }

    /// Why the server refuses `object`, in its words (a server-side dry
    /// run, without kubectl's own checks): for the report of a
    /// disagreement only.
    pub fn explain(&self, object: &Value) -> String {
        let args = [
            "create",
            "--dry-run=server",
            "--validate=false",
            "-f",
            "-",
            "-o",
            "json",
        ];
        let mut child = self.kubectl(&args).spawn().expect("kubectl runs");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(object.to_string().as_bytes())
            .expect("stdin");
        drop(stdin);
        let out = child.wait_with_output().expect("kubectl finishes");
        let text = if out.status.success() {
            out.stdout
        } else {
            out.stderr
        };
        String::from_utf8_lossy(&text).trim().to_string()
    }
}

/// FakeCluster: one per shape, so its verdicts are its own.
pub struct Fake {
    cluster: FakeCluster,
    namespace: String,
}

impl Fake {
    pub fn new(namespace: &str) -> Fake {
        Fake {
            cluster: FakeCluster::new(),
            namespace: namespace.to_string(),
        }
    }

    pub fn apply_crd(&self, crd: &Value) -> Verdict {
        match self.cluster.try_install_crd(crd, "v1") {
            Ok(()) => Verdict::Stored(Value::Null),
            Err(why) => Verdict::Refused(why.join("; ")),
        }
    }

    pub async fn create(&self, d: &ResourceDescriptor, object: Value) -> Verdict {
        let post =
            ApiRequest::new(Method::Post, collection(d, &self.namespace)).with_body(object.clone());
        match self.cluster.send_raw(post).await {
            Ok(created) => Verdict::Stored(created.body.unwrap_or_default()["spec"].clone()),
            Err(e) => match self.cluster.admit(d, object) {
                Err(fields) => Verdict::Refused(fields.join("; ")),
                Ok(_) => Verdict::Refused(e.to_string()),
            },
        }
    }
}
