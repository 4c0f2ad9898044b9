//! A control plane of the check's own whose LocalConfigMap CRD stores at
//! [`OLD`] first, objects written there, and the helpers the checks read
//! and run through.

use crate::support::LCM_BINARY;
use anyhow::{bail, ensure, Context, Result};
use blue_envtest::operator::{self, Operator};
use blue_envtest::Envtest;
use blue_kubernetes::migration::{migration_manifests, MigrationManifests};
use blue_kubernetes::{crd, ResourceSchema};
use blue_kubernetes_client::ResourceDescriptor;
use local_configmap_operator::package::{crd_options, LocalConfigMaps};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The older version the objects are first stored at: the stored
/// version's schema under another name.
pub const OLD: &str = "v0alpha1";

/// Objects keyed by `namespace/name`.
pub type Objects = BTreeMap<String, Value>;

pub struct Fixture {
    pub env: Envtest,
    work: tempfile::TempDir,
    /// The version the example stores at (the migration's target).
    pub stored: String,
}

impl Fixture {
    /// A control plane with `namespaces`, the CRD storing at [`OLD`] and
    /// `per_namespace` objects written at it in each.
    pub fn start(prefix: &str, namespaces: &[&str], per_namespace: usize) -> Result<Self> {
        let env = Envtest::start()?;
        let work = tempfile::Builder::new()
            .prefix(&format!("e2e-{prefix}-"))
            .tempdir()?;
        let stored = descriptor().version;
        let fx = Self { env, work, stored };
        for ns in namespaces {
            fx.env.kubectl(&["create", "namespace", ns])?;
        }
        fx.apply_crd(&fx.crd(Some(OLD), true))?;
        for ns in namespaces {
            fx.create_objects(ns, per_namespace, OLD)?;
        }
        Ok(fx)
    }

    pub fn descriptor(&self) -> ResourceDescriptor {
        descriptor()
    }

    /// The example's CRD, every version converted by the API server alone
    /// (strategy None: the schemas are the same), plus `old` (a copy of
    /// the stored version) when given; the storage flag on `old` when
    /// `old_stores`, else on the example's stored version.
    fn crd(&self, old: Option<&str>, old_stores: bool) -> Value {
        let schema = ResourceSchema::of::<LocalConfigMaps>();
        let mut crd =
            crd::generate(&schema, &crd_options().with_cel(false)).expect("the example's CRD");
        crd["spec"]["conversion"] = json!({"strategy": "None"});
        let versions = crd["spec"]["versions"].as_array_mut().expect("versions");
        let stored = versions
            .iter()
            .find(|v| v["storage"] == true)
            .cloned()
            .expect("a stored version");
        if let Some(old) = old {
            let mut copy = stored;
            copy["name"] = json!(old);
            copy["storage"] = json!(old_stores);
            copy.as_object_mut().map(|v| v.remove("deprecated"));
            versions.push(copy);
            for v in versions.iter_mut().filter(|v| v["name"] == self.stored) {
                v["storage"] = json!(!old_stores);
            }
        }
        crd
    }

    fn apply_crd(&self, crd: &Value) -> Result<()> {
        let name = descriptor().qualified_plural();
        Ok(self
            .env
            .kubectl_in("default")
            .apply_crd(&crd.to_string(), &name)?)
    }

    /// Moves the storage flag to the example's stored version.
    pub fn move_storage(&self) -> Result<()> {
        self.apply_crd(&self.crd(Some(OLD), false))
    }

    /// Applies the CRD without [`OLD`] (allowed once it left
    /// storedVersions).
    pub fn drop_old_version(&self) -> Result<()> {
        self.apply_crd(&self.crd(None, false))
    }

    /// `n` objects `lcm-0`.. in `ns`, written at `version`.
    pub fn create_objects(&self, ns: &str, n: usize, version: &str) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let d = descriptor();
        let items: Vec<Value> = (0..n)
            .map(|i| {
                json!({
                    "apiVersion": format!("{}/{version}", d.group),
                    "kind": d.kind,
                    "metadata": {"name": format!("lcm-{i}"), "namespace": ns, "labels": {"e2e.blue.dev/n": i.to_string()}},
                    "spec": {"config": {"data": {"index": i.to_string(), "namespace": ns}}},
                })
            })
            .collect();
        let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
        self.env.kubectl_in(ns).create(&list.to_string())?;
        Ok(())
    }

    /// Every object, read at the stored version.
    pub fn objects(&self) -> Result<Objects> {
        self.objects_at(&self.stored)
    }

    /// Every object, read at `version`.
    pub fn objects_at(&self, version: &str) -> Result<Objects> {
        let d = descriptor();
        let kind = format!("{}.{version}.{}", d.plural, d.group);
        let list: Value = serde_json::from_str(&self.env.kubectl(&[
            "get",
            &kind,
            "-A",
            "-o",
            "json",
            "--show-managed-fields",
        ])?)?;
        let items = list["items"].as_array().context("no items")?;
        Ok(items
            .iter()
            .map(|o| {
                let m = &o["metadata"];
                (
                    format!(
                        "{}/{}",
                        m["namespace"].as_str().unwrap_or_default(),
                        m["name"].as_str().unwrap_or_default()
                    ),
                    o.clone(),
                )
            })
            .collect())
    }

    /// The CRD's `status.storedVersions`.
    pub fn stored_versions(&self) -> Result<Vec<String>> {
        let name = format!("crd/{}", descriptor().qualified_plural());
        let crd: Value = serde_json::from_str(&self.env.kubectl(&["get", &name, "-o", "json"])?)?;
        Ok(serde_json::from_value(
            crd["status"]["storedVersions"].clone(),
        )?)
    }

    /// A kubeconfig acting as ServiceAccount `default/account` (a token
    /// from the TokenRequest API in place of the admin's), whose rights
    /// are the generated migration manifests' when `granted`.
    pub fn service_account(&self, account: &str, granted: bool) -> Result<PathBuf> {
        let kube = self.env.kubectl_in("default");
        if kube.get("serviceaccount", account)?.is_none() {
            kube.create(&json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account}}).to_string())?;
        }
        if granted {
            let manifests = MigrationManifests::new(
                "local-configmap-operator",
                "default",
                account,
                vec![descriptor()],
            );
            let documents = migration_manifests(&manifests);
            kube.apply(
                &json!({"apiVersion": "v1", "kind": "List", "items": documents}).to_string(),
            )?;
        }
        let token = blue_e2e::in_cluster::request_token_for(&kube, account)?;
        let admin = std::fs::read_to_string(self.env.kubeconfig())?;
        let config: String = admin
            .lines()
            .map(|line| match line.trim_start().starts_with("token:") {
                true => format!("    token: {token}\n"),
                false => format!("{line}\n"),
            })
            .collect();
        let path = self.work.path().join(format!("{account}.kubeconfig"));
        std::fs::write(&path, config)?;
        Ok(path)
    }

    /// The flags connecting the example's binary to this control plane
    /// (as the admin, or through `kubeconfig`).
    fn connect(&self, kubeconfig: Option<&Path>) -> Vec<String> {
        let cp = self.env.control_plane();
        vec![
            "--kubeconfig".into(),
            kubeconfig
                .unwrap_or(self.env.kubeconfig())
                .display()
                .to_string(),
            "--context".into(),
            self.env.context().into(),
            "--kubectl".into(),
            cp.kubectl().display().to_string(),
        ]
    }

    /// `local-configmap-operator <connect> <args> migrate-storage` (as
    /// `kubeconfig` says, else the admin), waited for (at most 120 s, then
    /// killed): whether it exited 0, and its log.
    pub fn run_one_shot(&self, kubeconfig: Option<&Path>, args: &[&str]) -> Result<(bool, String)> {
        let mut all = self.connect(kubeconfig);
        all.extend(args.iter().map(|a| a.to_string()));
        let log = self.work.path().join("migrate-storage.log");
        run_migrate_storage(Path::new(LCM_BINARY), &all, self.work.path(), &log)
    }

    /// `local-configmap-operator <connect> <args> migrate-storage` as the
    /// admin, started (the caller waits for it, or kills it), logging to
    /// `log`.
    pub fn one_shot_process(&self, args: &[&str], log: &Path) -> Result<Operator> {
        let mut all = self.connect(None);
        all.extend(args.iter().map(|a| a.to_string()));
        all.push("migrate-storage".into());
        Ok(Operator::start(
            LCM_BINARY.as_ref(),
            &all,
            &[],
            log,
            self.work.path(),
        )?)
    }

    /// The scratch directory's `name`.
    pub fn scratch(&self, name: &str) -> PathBuf {
        self.work.path().join(name)
    }

    /// The example's operator with `args`, connected to this control plane.
    pub fn operator(&self, args: &[&str]) -> Result<Operator> {
        let mut all = self.connect(None);
        all.extend(args.iter().map(|a| a.to_string()));
        let log = self.work.path().join("operator.log");
        Ok(Operator::start(
            LCM_BINARY.as_ref(),
            &all,
            &[],
            &log,
            self.work.path(),
        )?)
    }

    /// Stops the control plane.
    pub fn finish(self) -> Result<()> {
        self.env.stop()?;
        Ok(())
    }
}

fn descriptor() -> ResourceDescriptor {
    ResourceSchema::of::<LocalConfigMaps>().descriptor().clone()
}

/// `after` holds the objects of `before`, each the same but for its
/// resourceVersion.
pub fn same_but_resource_version(before: &Objects, after: &Objects) -> Result<()> {
    let keys = |o: &Objects| o.keys().cloned().collect::<Vec<_>>();
    ensure!(
        keys(before) == keys(after),
        "objects {:?} became {:?}",
        keys(before),
        keys(after)
    );
    for (key, old) in before {
        let (mut old, mut new) = (old.clone(), after[key].clone());
        for o in [&mut old, &mut new] {
            o["metadata"]
                .as_object_mut()
                .map(|m| m.remove("resourceVersion"));
        }
        ensure!(old == new, "{key} changed:\n{old:#}\n{new:#}");
    }
    Ok(())
}

/// `binary <args> migrate-storage` with its scratch in `work`, logging to
/// `log`, waited for (at most 120 s, then killed): whether it exited 0,
/// and its log.
pub fn run_migrate_storage(
    binary: &Path,
    args: &[String],
    work: &Path,
    log: &Path,
) -> Result<(bool, String)> {
    let mut child = Command::new(binary)
        .args(args)
        .arg("migrate-storage")
        .env("KUBECACHEDIR", operator::kube_cache_dir(work))
        .env("TMPDIR", work)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log)?)
        .spawn()?;
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "migrate-storage still ran after 120 s:\n{}",
                std::fs::read_to_string(log)?
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Ok((status.success(), std::fs::read_to_string(log)?))
}

/// `probe` until it succeeds or `timeout` passes (its last error then).
pub fn eventually(timeout: Duration, mut probe: impl FnMut() -> Result<()>) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        match probe() {
            Ok(()) => return Ok(()),
            Err(e) if Instant::now() > deadline => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(250)),
        }
    }
}
