//! An operator binary under measurement (the example operator with either
//! transport, or a peer taking the same flags) and the harness around it:
//! creating `LocalConfigMap`s, counting Ready ones, editing, and the
//! operator's CPU (its whole process tree, from `/proc`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use blue_kubernetes_client::{
    proxy_client, ApiPath, ApiRequest, Client, Method, PatchType, ProxyClient, ProxyOptions,
    RawApi, ResourceDescriptor,
};
use serde_json::{json, Value};

use super::cluster::Cluster;
use super::measure::tree_cpu_seconds;
use crate::e2e::operator::Operator;

pub const GROUP: &str = "examples.blue.dev";
pub const VERSION: &str = "v1alpha1";
pub const PLURAL: &str = "localconfigmaps";

pub fn descriptor() -> ResourceDescriptor {
    ResourceDescriptor::new(GROUP, VERSION, PLURAL, "LocalConfigMap")
}

/// Who is measured.
#[derive(Clone, Debug)]
pub struct Contender {
    /// `kubectl`, `proxy` or `peer`.
    pub label: &'static str,
    pub binary: PathBuf,
    /// Flags beyond `--context --kubeconfig --namespace`.
    pub extra: Vec<String>,
}

impl Contender {
    pub fn ours(binary: &Path, transport: &'static str) -> Self {
        Self {
            label: transport,
            binary: binary.to_path_buf(),
            extra: ["--workers", "2", "--transport", transport]
                .map(String::from)
                .to_vec(),
        }
    }

    pub fn peer(binary: &Path) -> Self {
        Self {
            label: "peer",
            binary: binary.to_path_buf(),
            extra: Vec::new(),
        }
    }
}

/// The harness: its own proxy client (so watching costs the measured
/// operator nothing), the cluster and a scratch directory.
pub struct Harness<'a> {
    pub rt: &'a tokio::runtime::Runtime,
    pub cluster: &'a Cluster,
    pub client: Arc<ProxyClient>,
    pub work: &'a Path,
}

impl<'a> Harness<'a> {
    pub fn new(
        rt: &'a tokio::runtime::Runtime,
        cluster: &'a Cluster,
        work: &'a Path,
    ) -> Result<Self> {
        // The local 1.20 server knows no CEL rules.
        let crd = local_configmap_operator::package::crd_yaml(false)?;
        cluster.kubectl(&["apply", "-f", "-"], Some(&crd))?;
        cluster.kubectl(
            &[
                "wait",
                "--for=condition=Established",
                "--timeout=60s",
                &format!("crd/{PLURAL}.{GROUP}"),
            ],
            None,
        )?;
        let client = Arc::new(proxy_client(ProxyOptions::new(cluster.kubectl_options()))?);
        rt.block_on(client.start())?;
        Ok(Self {
            rt,
            cluster,
            client,
            work,
        })
    }

    fn send(&self, request: ApiRequest) -> Result<Value> {
        Ok(self
            .rt
            .block_on(self.client.send(request))?
            .body
            .unwrap_or(Value::Null))
    }

    /// A namespace holding `n` LocalConfigMaps `r-00000`... with a 1 h interval.
    pub fn populate(&self, namespace: &str, n: usize) -> Result<()> {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
        self.send(
            ApiRequest::new(Method::Post, ApiPath::parse("/api/v1/namespaces")?).with_body(ns),
        )?;
        let collection = ApiPath::namespaced(GROUP, VERSION, namespace, PLURAL, None, None)?;
        for i in 0..n {
            let body = json!({
                "apiVersion": format!("{GROUP}/{VERSION}"), "kind": "LocalConfigMap",
                "metadata": {"name": name(i)},
                "spec": {"reconcileInterval": "1h", "config": {"data": {"v": "0"}}},
            });
            self.send(ApiRequest::new(Method::Post, collection.clone()).with_body(body))?;
        }
        Ok(())
    }

    /// Resources of `namespace` Ready for their current generation.
    pub fn ready(&self, namespace: &str) -> Result<usize> {
        let items = self
            .rt
            .block_on(self.client.list_resources(&descriptor(), namespace))?;
        Ok(items.iter().filter(|r| is_ready(r)).count())
    }

    /// Polls every 50 ms until `n` are Ready; returns the time it took.
    pub fn wait_ready(&self, namespace: &str, n: usize, timeout: Duration) -> Result<Duration> {
        let started = Instant::now();
        loop {
            if self.ready(namespace)? >= n {
                return Ok(started.elapsed());
            }
            anyhow::ensure!(
                started.elapsed() < timeout,
                "{n} Ready in {namespace} not reached in {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Edits `name`'s data (a new generation); returns the time until it is
    /// Ready for that generation, polling a get every 5 ms.
    pub fn edit_latency(&self, namespace: &str, name: &str, value: &str) -> Result<f64> {
        let path = ApiPath::namespaced(GROUP, VERSION, namespace, PLURAL, Some(name), None)?;
        let patch = json!({"spec": {"config": {"data": {"v": value}}}});
        let edited =
            self.send(ApiRequest::new(Method::Patch(PatchType::Merge), path).with_body(patch))?;
        let at = Instant::now();
        let generation = edited["metadata"]["generation"]
            .as_i64()
            .context("no generation")?;
        loop {
            let r = self
                .rt
                .block_on(self.client.get_resource(&descriptor(), namespace, name))?
                .context("edited resource vanished")?;
            if is_ready(&r) && r["status"]["observedGeneration"].as_i64() >= Some(generation) {
                return Ok(at.elapsed().as_secs_f64());
            }
            anyhow::ensure!(
                at.elapsed() < Duration::from_secs(120),
                "{name} never Ready after the edit"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Starts `who` on `namespace`, logging to the scratch directory.
    pub fn start(&self, who: &Contender, namespace: &str) -> Result<Operator> {
        let mut args = vec![
            "--context".to_string(),
            self.cluster.cp.context().to_string(),
            "--kubeconfig".into(),
            self.cluster.cp.kubeconfig_path().display().to_string(),
            "--namespace".into(),
            namespace.into(),
        ];
        args.extend(who.extra.iter().cloned());
        let tmp = self.work.join("tmp");
        std::fs::create_dir_all(&tmp)?;
        let env = [
            (
                "KUBECACHEDIR".to_string(),
                self.work.join("kube-cache").display().to_string(),
            ),
            ("TMPDIR".to_string(), tmp.display().to_string()),
        ];
        let log = self.work.join(format!("{}-{namespace}.log", who.label));
        Operator::start(&who.binary, &args, &env, &log, self.work)
    }
}

/// CPU seconds of a running operator and everything it runs.
pub fn operator_cpu(op: &Operator) -> f64 {
    op.pid().map_or(0.0, tree_cpu_seconds)
}

pub fn name(i: usize) -> String {
    format!("r-{i:05}")
}

fn is_ready(r: &Value) -> bool {
    r["status"]["phase"] == "Ready"
        && r["status"]["observedGeneration"].as_i64() == r["metadata"]["generation"].as_i64()
}
