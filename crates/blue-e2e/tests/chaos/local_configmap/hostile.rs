//! Malformed and forged resources through the schema-less CRD: each must
//! end Invalid (or be managed normally when it is valid), never panic the
//! operator, never be silently defaulted, and a forged status must not keep
//! the controller away.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use serde_json::{json, Value};

use super::{nothing_left_behind, world};
use crate::support::manifests::{has_finalizer, manifest, DESTROY_PROTECTION_KEY, LCM};
use crate::support::wait::eventually;
use crate::support::{self, World};

/// How long a hostile resource may take to reach its phase.
const DEADLINE: Duration = Duration::from_secs(60);

/// Name, spec, the phase (and Ready reason) it must reach.
fn cases() -> Vec<(&'static str, Value, &'static str, &'static str)> {
    // Deeper is possible, but kube-apiserver 1.20's managed-fields
    // bookkeeping takes exponential time in the depth (12 levels: 2 s; 20
    // levels: beyond the request timeout) before the operator sees anything.
    let mut deep = json!("bottom");
    for _ in 0..10 {
        deep = json!({ "d": deep });
    }
    // 400 KB: large but within the example's limits (256 keys, 512 KiB).
    let big: serde_json::Map<String, Value> = (0..200)
        .map(|i| (format!("k{i}"), json!("x".repeat(2000))))
        .collect();
    let too_many: serde_json::Map<String, Value> =
        (0..2000).map(|i| (format!("k{i}"), json!("x"))).collect();
    let invalid = [
        ("hostile-string-spec", json!("running")),
        ("hostile-list-spec", json!(["running"])),
        ("hostile-config-string", json!({"config": "data"})),
        ("hostile-profile-number", json!({"config": {"profile": 7}})),
        ("hostile-suspend-string", json!({"suspend": "true"})),
        ("hostile-state-unknown", json!({"state": "paused"})),
        ("hostile-interval-number", json!({"reconcileInterval": 60})),
        (
            "hostile-interval-beyond-year-9999",
            json!({"reconcileInterval": "999999999999h"}),
        ),
        (
            "hostile-interval-above-maximum",
            json!({"reconcileInterval": "8761h"}),
        ),
        ("hostile-interval-zero", json!({"reconcileInterval": "0s"})),
        ("hostile-deep-config", json!({"config": {"data": deep}})),
        (
            "hostile-protect-string",
            json!({"config": {DESTROY_PROTECTION_KEY: "yes"}}),
        ),
        (
            "hostile-too-many-keys",
            json!({"config": {"data": too_many}}),
        ),
    ];
    let ready = [
        (
            "hostile-interval-maximum",
            json!({"reconcileInterval": "8760h", "config": {"data": {"a": "b"}}}),
        ),
        ("hostile-big-config", json!({"config": {"data": big}})),
        (
            "hostile-non-ascii",
            json!({"config": {"data": {"greeting": "grüße, こんにちは 🚀"}}}),
        ),
    ];
    let invalid = invalid.map(|(name, spec)| (name, spec, "Invalid", "InvalidConfiguration"));
    let ready = ready.map(|(name, spec)| (name, spec, "Ready", "Converged"));
    invalid.into_iter().chain(ready).collect()
}

/// On a control plane of its own whose CRD is loosened ([`loosen_crd`]).
fn hostile_world() -> Result<World> {
    let w = world(true)?;
    loosen_crd(&w)?;
    Ok(w)
}

/// Replaces the CRD's schema with "anything goes", as on a cluster whose
/// CRD has no structural schema: the controller alone must refuse bad input.
fn loosen_crd(w: &World) -> Result<()> {
    let mut crd = w.kube.json(&["get", "crd", LCM, "-o", "json"])?;
    for version in crd["spec"]["versions"]
        .as_array_mut()
        .context("CRD versions")?
    {
        version["schema"] = json!({"openAPIV3Schema": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
        }});
    }
    w.kube.ok(&["replace", "-f", "-"], Some(&crd.to_string()))?;
    // The API server serves the new schema after a moment.
    eventually(
        "the loose schema is served",
        Duration::from_secs(30),
        || {
            let probe = manifest("chaos-probe", json!("text"));
            let run = w
                .kube
                .run(&["create", "--dry-run=server", "-f", "-"], Some(&probe))?;
            ensure!(run.ok, "a string spec is still refused");
            Ok(())
        },
    )
}

/// Through the schema-less CRD: non-object `spec`/`config`, mistyped
/// fields, intervals up to `999999999999h`, nested config, too many keys
/// end Invalid/InvalidConfiguration; the longest interval, 400 KB of
/// config and non-ASCII data Ready; the operator keeps running; all of
/// them can be deleted.
#[test]
fn malformed_resources_are_invalid_never_defaulted() -> Result<()> {
    support::run(hostile_world()?, None, |w| {
        for (name, spec, _, _) in cases() {
            w.kube.create(&manifest(name, spec))?;
        }
        for (name, _, want_phase, want_reason) in cases() {
            w.wait_phase(name, (want_phase, want_reason), DEADLINE, |_| Ok(()))?;
        }
        ensure!(w.operator()?.is_running(), "the operator exited");
        let names: Vec<&str> = cases().iter().map(|c| c.0).collect();
        for name in &names {
            w.kube.delete(LCM, name)?;
        }
        eventually("the malformed resources gone", DEADLINE, || {
            for name in &names {
                ensure!(w.kube.get(LCM, name)?.is_none(), "{name} still exists");
            }
            Ok(())
        })?;
        nothing_left_behind(w)
    })
}

/// A status forged to Ready until year 9999 before the operator starts:
/// it still adds the finalizer, records the identity and creates the
/// ConfigMap.
#[test]
fn forged_ready_status_does_not_keep_the_controller_away() -> Result<()> {
    let forged = "hostile-forged-status";
    support::run(hostile_world()?, Some(forged), |w| {
        // Forge while no operator runs, so the forgery is what it finds.
        w.stop_operator()?;
        w.kube.create(&manifest(
            forged,
            json!({"config": {"data": {"real": "yes"}}}),
        ))?;
        let far = json!({"status": {
            "phase": "Ready",
            "observedGeneration": 1,
            "nextReconcileTime": "9999-12-31T23:59:59Z",
            "conditions": [{"type": "Ready", "status": "True", "reason": "Converged",
                            "message": "forged", "lastTransitionTime": "2020-01-01T00:00:00Z"}],
        }});
        let patch = far.to_string();
        let args = [
            "patch",
            LCM,
            forged,
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch,
        ];
        w.kube.ok(&args, None)?;
        w.start_operator(&w.admin_args())?;
        // The forgery already reads Ready/Converged: wait for what only a
        // real pass leaves, the finalizer and the state identity.
        eventually("the forged resource to be managed", DEADLINE, || {
            let r = w.wait_phase(forged, ("Ready", "Converged"), DEADLINE, |_| Ok(()))?;
            ensure!(has_finalizer(&r), "no finalizer was added");
            let recorded = r["status"]["stateIdentity"].is_string();
            ensure!(recorded, "no state identity recorded");
            Ok(())
        })?;
        let cm = w
            .kube
            .get("configmap", forged)?
            .context("its ConfigMap was never created")?;
        ensure!(
            cm["data"] == json!({"real": "yes"}),
            "ConfigMap data {}",
            cm["data"]
        );
        w.kube.delete(LCM, forged)?;
        eventually("the forged resource gone", DEADLINE, || {
            ensure!(w.kube.get(LCM, forged)?.is_none(), "it still exists");
            Ok(())
        })?;
        nothing_left_behind(w)
    })
}
