//! Immutable fields on a real API server without CEL (kube-apiserver 1.20
//! through blue-envtest): the server stores the edit, the controller makes
//! the resource `Invalid` / `ImmutableField`, a revert makes it Ready again,
//! and Destroy waits for the revert. Status keeps `immutableDigest` (the
//! CRD's status schema declares it, so the server does not prune it).
//!
//! Needs the control plane's binaries (`cargo xtask control-plane
//! provision`, or `KUBEBUILDER_ASSETS`); without them it fails saying so.

use blue_envtest::Envtest;
use blue_kubernetes::config::LockDomain;
use blue_kubernetes::crd::{self, CrdConfig};
use blue_kubernetes::resource::{Phase, Reason};
use blue_kubernetes::{controller, reconcile, Config, Report};
use blue_kubernetes_client::ResourceDescriptor;
use records::{records_of, Dns};
use serde_json::{json, Value};

mod records;

const GROUP: &str = "immutable.blue.test";

fn records() -> ResourceDescriptor {
    records_of(GROUP)
}

const READY: Report = Report::Reconciled(Phase::Ready, Reason::Converged);
const IMMUTABLE: Report = Report::Reconciled(Phase::Invalid, Reason::ImmutableField);

#[test]
fn without_cel_an_immutable_field_edit_is_invalid_until_reverted_and_destroy_waits() {
    let env = Envtest::shared().unwrap_or_else(|e| panic!("{e}"));
    let dns = Dns::default();
    let package = dns.package(GROUP);
    let crd = crd::generate(&package, &CrdConfig::default().with_cel(false)).unwrap();
    env.install_crd(&crd)
        .expect("the 1.20 server takes the CRD");
    let ns = env.namespace("immutable").expect("a namespace");
    // The blocking helpers run on this thread; the client's proxy runs on
    // the runtime's worker between the passes.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let _inside = runtime.enter();
    let mut config = Config::new(env.client().expect("a client"), vec![package.clone()]);
    config.namespace = ns.as_str().into();
    config.lock_domain = LockDomain::new();
    let controller = controller(config).expect("valid config");
    let pass = || {
        let report = runtime.block_on(reconcile(&controller, &package, &ns, "www"));
        report.expect("no transport failure")
    };
    let target = format!("{}/www", records().qualified_plural());
    let set_kind = |kind: &str| {
        let patch = json!({"spec": {"config": {"kind": kind}}}).to_string();
        let args = ["patch", &target, "-n", &ns, "--type=merge", "-p", &patch];
        env.kubectl(&args)
            .expect("the server stores the edit: no CEL");
    };
    let get = || {
        let args = [
            "get",
            &target,
            "-n",
            &ns,
            "-o",
            "json",
            "--ignore-not-found",
        ];
        let out = env.kubectl(&args).expect("kubectl get");
        serde_json::from_str::<Value>(&out).unwrap_or(Value::Null)
    };
    let profile = format!("{ns}--www");
    let kind_held = || dns.record(&profile).map(|r| r["kind"].clone());

    let object = json!({
        "apiVersion": records().api_version(),
        "kind": "Record",
        "metadata": {"name": "www"},
        "spec": {
            "deletionPolicy": "Destroy",
            "config": {"kind": "A", "content": "192.0.2.1"},
        },
    });
    env.create(&ns, &object).expect("created");
    assert_eq!(pass(), READY);
    let digest = get()["status"]["immutableDigest"].clone();
    assert!(
        digest.is_string(),
        "kept by the server: {}",
        get()["status"]
    );

    set_kind("AAAA");
    assert_eq!(get()["spec"]["config"]["kind"], "AAAA", "stored: no CEL");
    assert_eq!(pass(), IMMUTABLE);
    assert_eq!(kind_held(), Some(json!("A")), "nothing ran with it");
    let status = get()["status"].clone();
    assert_eq!(status["immutableDigest"], digest);
    assert!(!status.to_string().contains("AAAA"), "{status}");

    set_kind("A");
    assert_eq!(pass(), READY);

    // Destroy waits for the revert: `delete` never runs with a kind that
    // no longer describes what was made.
    set_kind("CNAME");
    assert_eq!(pass(), IMMUTABLE);
    env.kubectl(&["delete", &target, "-n", &ns, "--wait=false"])
        .expect("deleted");
    assert_eq!(pass(), IMMUTABLE);
    assert_eq!(kind_held(), Some(json!("A")), "not destroyed");
    assert!(get().is_object(), "held by our finalizer");

    set_kind("A");
    assert_eq!(pass(), Report::Released);
    assert_eq!(kind_held(), None, "destroyed");
    assert!(get().is_null(), "gone once released");
}
