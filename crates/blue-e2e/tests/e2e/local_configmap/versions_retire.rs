//! The last steps of the example's upgrade (continuing the walk in
//! `versions`): storage at v1beta1 again, the `migrate-storage` one-shot
//! of the new release run with the rights the example ships for it
//! (manifests/storage-migration.yaml, as its ServiceAccount), v1alpha1
//! retired from `status.storedVersions` and then dropped from the CRD.
//! The operator keeps running throughout: it serves the conversion the
//! migration's reads of objects stored at v1alpha1 need.

use anyhow::{ensure, Context, Result};
use serde_json::{json, Value};
use std::path::PathBuf;

use super::World;
use crate::storage_migration::fixture::{run_migrate_storage, same_but_resource_version, Objects};
use crate::support::LCM_V1BETA1_BINARY;

const NEW: &str = "localconfigmaps.v1beta1.examples.blue.dev";
const OLD: &str = "localconfigmaps.v1alpha1.examples.blue.dev";
/// The migration's rights as the example ships them.
const RIGHTS: &str =
    include_str!("../../../../../examples/local-configmap/manifests/storage-migration.yaml");
/// The ServiceAccount those rights are bound to (in `default`).
const ACCOUNT: &str = "local-configmap-storage-migration";

/// Every object of the check's namespace, read at v1beta1 (managedFields
/// included: the migration must leave them as they were).
pub(super) fn objects(w: &World) -> Result<Objects> {
    let list = w
        .kube
        .json(&["get", NEW, "-o", "json", "--show-managed-fields"])?;
    let items = list["items"].as_array().context("no items")?;
    Ok(items
        .iter()
        .map(|o| {
            (
                o["metadata"]["name"].as_str().unwrap_or("").to_string(),
                o.clone(),
            )
        })
        .collect())
}

/// The CRD's `status.storedVersions`.
pub(super) fn stored_versions(w: &World) -> Result<Value> {
    let crd = w.kube.json(&["get", "crd", super::LCM, "-o", "json"])?;
    Ok(crd["status"]["storedVersions"].clone())
}

/// Applies the shipped migration rights (the Job itself aside: it needs
/// an image) and returns a kubeconfig acting as their ServiceAccount.
fn migration_account(w: &World) -> Result<PathBuf> {
    let default = w.envtest().kubectl_in("default");
    let rights: String = RIGHTS
        .split("\n---\n")
        .filter(|doc| !doc.contains("kind: Job\n"))
        .collect::<Vec<_>>()
        .join("\n---\n");
    default
        .apply(&rights)
        .context("the shipped migration rights")?;
    let token = blue_e2e::in_cluster::request_token_for(&default, ACCOUNT)?;
    let admin = std::fs::read_to_string(w.control_plane().kubeconfig_path())?;
    let config: String = admin
        .lines()
        .map(|line| match line.trim_start().starts_with("token:") {
            true => format!("    token: {token}\n"),
            false => format!("{line}\n"),
        })
        .collect();
    let path = w.scratch("migration.kubeconfig");
    std::fs::write(&path, config)?;
    Ok(path)
}

/// The new release's `migrate-storage` as the migration's ServiceAccount
/// (its Lease in `default`, where the shipped Role lets it hold one),
/// waited for (at most 120 s, then killed): its log when it exited 0.
fn run_one_shot(w: &World) -> Result<String> {
    let kubeconfig = migration_account(w)?;
    let log = w.scratch("migrate-storage.log");
    let args: Vec<String> = [
        "--context",
        w.kube.context(),
        "--kubeconfig",
        &kubeconfig.display().to_string(),
        "--namespace",
        "default",
        "--transport",
        w.transport.as_str(),
    ]
    .map(String::from)
    .into();
    let binary = std::path::Path::new(LCM_V1BETA1_BINARY);
    let (ok, text) = run_migrate_storage(binary, &args, w.work(), &log)?;
    ensure!(ok, "migrate-storage failed:\n{text}");
    Ok(text)
}

/// Runs the migration to its end and drops v1alpha1 from the CRD:
/// `storedVersions` then holds v1beta1 alone, and every object of
/// `before` (read at v1beta1 with storage there, before the migration)
/// is still readable at v1beta1 and the same but for its resourceVersion.
pub(super) fn migrate_and_retire_v1alpha1(w: &World, before: &Objects) -> Result<()> {
    let log = run_one_shot(w)?;
    ensure!(log.contains("storage migration done"), "{log}");
    let stored = stored_versions(w)?;
    ensure!(stored == json!(["v1beta1"]), "storedVersions {stored}");
    let after = objects(w)?;
    same_but_resource_version(before, &after)?;
    // Each was stored at v1alpha1: each write landed anew.
    for (name, object) in &after {
        let old = &before[name]["metadata"]["resourceVersion"];
        ensure!(
            object["metadata"]["resourceVersion"] != *old,
            "{name} was not rewritten"
        );
    }

    // The CRD without v1alpha1 (listed second: the generated CRD lists
    // v1beta1 first) is accepted now that no object is stored there.
    let drop = json!([
        {"op": "test", "path": "/spec/versions/1/name", "value": "v1alpha1"},
        {"op": "remove", "path": "/spec/versions/1"},
    ]);
    let args = [
        "patch",
        "crd",
        super::LCM,
        "--type=json",
        "-p",
        &drop.to_string(),
    ];
    w.kube.ok(&args, None).context("dropping v1alpha1")?;
    let crd = w.kube.json(&["get", "crd", super::LCM, "-o", "json"])?;
    let versions = &crd["spec"]["versions"];
    ensure!(
        versions.as_array().map(Vec::len) == Some(1) && versions[0]["name"] == "v1beta1",
        "{versions}"
    );
    ensure!(objects(w)? == after, "an object changed when v1alpha1 left");
    let gone = w.kube.run(&["get", OLD, "-o", "json"], None)?;
    ensure!(!gone.ok, "v1alpha1 is still served");
    Ok(())
}
