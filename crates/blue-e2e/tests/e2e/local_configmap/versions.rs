//! The example's API evolving on a real API server: objects written at
//! v1alpha1 by this release, then the next release (stored at v1beta1,
//! v1alpha1 served through its conversion webhook) rolled out in the
//! documented order: its CRD with storage still at v1alpha1 (the old
//! operator keeps working with it; the new operator started before it
//! refuses to start), the new operator, then storage moved to v1beta1 and
//! back, and at last moved for good: the migration run to its end,
//! v1alpha1 retired from storedVersions and dropped from the CRD. Both versions show the same object, an old client's
//! read-modify-write loses nothing, and admission judges requests at both
//! versions. A CRD and a webhook configuration are cluster-wide: a
//! control plane of its own.

use anyhow::{ensure, Context, Result};
use blue_kubernetes::crd::generate;
use blue_kubernetes::ResourceSchema;
use local_configmap_operator::package::{crd_options_of, LocalConfigMapsV1beta1};
use local_configmap_operator::v1beta1::LocalConfigMapConfigV1beta1;
use serde_json::{json, Value};

use super::admission::{refused, webhook_args};
use super::{manifest, versions_retire, wait_data, wait_ready, World, LCM};
use crate::support::wait::{eventually, DEADLINE};
use crate::support::{LCM_BINARY, LCM_V1BETA1_BINARY};

const OLD: &str = "localconfigmaps.v1alpha1.examples.blue.dev";
const NEW: &str = "localconfigmaps.v1beta1.examples.blue.dev";

/// The next release's CRD, with storage at `storage` (the generated one
/// stores v1beta1; the first step of the upgrade keeps v1alpha1).
fn next_crd(storage: &str) -> Result<Value> {
    let schema = ResourceSchema::of::<LocalConfigMapsV1beta1>();
    let options = crd_options_of::<LocalConfigMapConfigV1beta1>().with_cel(false);
    let mut crd = generate(&schema, &options)?;
    for version in crd["spec"]["versions"].as_array_mut().context("versions")? {
        version["storage"] = json!(version["name"] == storage);
    }
    Ok(crd)
}

/// `name` as a client of `resource` (`OLD` or `NEW`) reads it.
fn read(w: &World, resource: &str, name: &str) -> Result<Value> {
    w.kube
        .get(resource, name)?
        .with_context(|| format!("{resource} {name} does not exist"))
}

/// A v1beta1 manifest.
fn v1beta1(name: &str, config: Value) -> String {
    json!({
        "apiVersion": "examples.blue.dev/v1beta1", "kind": "LocalConfigMap",
        "metadata": {"name": name}, "spec": {"config": config},
    })
    .to_string()
}

/// Starts `binary` with its self-signed webhook (admission, and
/// conversion for the next release).
fn start(w: &mut World, binary: &'static str) -> Result<()> {
    w.binary = binary;
    let args = webhook_args(w, "Fail");
    w.start_operator(&args)
}

/// Waits until the installed CRD sends conversions to a URL (the new
/// operator pointed it at its own server).
fn wait_conversion_served(w: &World) -> Result<()> {
    eventually(
        "the CRD's conversion pointed at the operator",
        DEADLINE,
        || {
            let crd = w.kube.json(&["get", "crd", LCM, "-o", "json"])?;
            let url = &crd["spec"]["conversion"]["webhook"]["clientConfig"]["url"];
            ensure!(
                url.as_str().is_some_and(|u| u.ends_with("/convert")),
                "{url}"
            );
            Ok(())
        },
    )
}

/// Both versions show `name` as the same object.
fn same_at_both(w: &World, name: &str, config_map: &str) -> Result<(Value, Value)> {
    eventually(&format!("{name} at both versions"), DEADLINE, || {
        let (old, new) = (read(w, OLD, name)?, read(w, NEW, name)?);
        ensure!(old["apiVersion"] == "examples.blue.dev/v1alpha1", "{old}");
        ensure!(new["apiVersion"] == "examples.blue.dev/v1beta1", "{new}");
        ensure!(
            old["spec"]["config"]["configMapName"] == config_map,
            "{old}"
        );
        ensure!(new["spec"]["config"]["name"] == config_map, "{new}");
        ensure!(old["spec"]["config"]["data"] == new["spec"]["config"]["data"]);
        ensure!(old["metadata"]["uid"] == new["metadata"]["uid"]);
        // The status is the library's, the same in every version (the
        // operator writes it at every check: its phase, not its times).
        ensure!(
            old["status"]["phase"] == new["status"]["phase"],
            "the status differs"
        );
        Ok((old, new))
    })
}

/// Moves the CRD's storage to `version` (the generated CRD lists v1beta1
/// first): a patch, so the conversion the operator pointed stays.
fn store_at(w: &World, version: &str) -> Result<()> {
    let flip = json!([
        {"op": "replace", "path": "/spec/versions/0/storage", "value": version == "v1beta1"},
        {"op": "replace", "path": "/spec/versions/1/storage", "value": version == "v1alpha1"},
    ]);
    let args = ["patch", "crd", LCM, "--type=json", "-p", &flip.to_string()];
    w.kube.ok(&args, None).context("moving storage")?;
    Ok(())
}

#[test]
fn an_api_evolves_from_v1alpha1_to_v1beta1_in_the_documented_order() -> Result<()> {
    crate::support::run(World::on_own_control_plane("ver")?, Some("alpha"), |w| {
        // This release: alpha written at v1alpha1.
        start(w, LCM_BINARY)?;
        let alpha = json!({"config": {"configMapName": "alpha-cm", "data": {"k": "v"}}});
        w.kube.apply(&manifest("alpha", alpha))?;
        wait_ready(w, "alpha")?;
        wait_data(w, "alpha-cm", &json!({"k": "v"}))?;

        // The new operator before its CRD: its preflight refuses to start
        // (it would crash-loop until the CRD is applied).
        let mut early = w.spawn_with(LCM_V1BETA1_BINARY, &webhook_args(w, "Fail"))?;
        eventually("the new operator refusing the old CRD", DEADLINE, || {
            ensure!(!early.is_running(), "still running");
            Ok(())
        })?;
        let log = std::fs::read_to_string(w.scratch("early.log"))?;
        ensure!(log.contains("preflight"), "{log}");

        // Step one, the CRD first: storage still at v1alpha1. The old
        // operator keeps working with it (nothing asks for a conversion).
        w.kube.apply(&next_crd("v1alpha1")?.to_string())?;
        let edit = json!({"configMapName": "alpha-cm", "data": {"k": "v1"}});
        w.kube
            .merge_patch(OLD, "alpha", &json!({"spec": {"config": edit}}))?;
        wait_data(w, "alpha-cm", &json!({"k": "v1"}))?;

        // Then the new operator, which serves the conversion its own
        // watches need.
        w.stop_operator_cleanly()?;
        start(w, LCM_V1BETA1_BINARY)?;
        wait_conversion_served(w)?;
        same_at_both(w, "alpha", "alpha-cm")?;
        let printed = w.kube.ok(&["get", NEW, "alpha", "-o", "wide"], None)?;
        ensure!(printed.contains("alpha-cm"), "{printed}");

        // A new client writes the new field; the new operator converges.
        let edit = json!({"name": "alpha-cm", "data": {"k": "v2"}, "description": "settings"});
        w.kube.apply(&v1beta1("alpha", edit))?;
        wait_data(w, "alpha-cm", &json!({"k": "v2"}))?;

        // An old client's read-modify-write keeps what it cannot see.
        let mut old = read(w, OLD, "alpha")?;
        ensure!(old["spec"]["config"].get("description").is_none(), "{old}");
        old["spec"]["config"]["data"] = json!({"k": "v3"});
        let replaced = w.kube.ok(&["replace", "-f", "-"], Some(&old.to_string()));
        replaced.context("an old client's replace")?;
        let new = read(w, NEW, "alpha")?;
        ensure!(new["spec"]["config"]["description"] == "settings", "{new}");
        ensure!(new["spec"]["config"]["data"] == json!({"k": "v3"}), "{new}");
        wait_data(w, "alpha-cm", &json!({"k": "v3"}))?;
        wait_ready(w, "alpha")?;

        // Admission judges requests at both versions.
        let stderr = refused(w, "bad", json!({"config": {"data": {"bad key": "x"}}}))?;
        ensure!(stderr.contains("config.data keys must be"), "{stderr}");
        let bad = v1beta1("bad", json!({"data": {"bad key": "x"}}));
        let run = w.kube.run(&["apply", "-f", "-"], Some(&bad))?;
        ensure!(
            !run.ok && run.stderr.contains("config.data keys must be"),
            "{}",
            run.stderr
        );
        // (A patch: the old client's replace saved the whole object as
        // kubectl's last-applied configuration.)
        let renamed = json!({"spec": {"config": {"name": "other-cm"}}}).to_string();
        let run = w.kube.run(
            &["patch", NEW, "alpha", "--type=merge", "-p", &renamed],
            None,
        )?;
        ensure!(
            !run.ok && run.stderr.contains("spec.config.name"),
            "{}",
            run.stderr
        );

        // Step two: storage moves to v1beta1.
        store_at(w, "v1beta1")?;
        let bravo = json!({"config": {"configMapName": "bravo-cm", "data": {"b": "1"}}});
        w.kube
            .apply(&manifest("bravo", bravo))
            .context("bravo at v1alpha1")?;
        wait_ready(w, "bravo")?;
        wait_data(w, "bravo-cm", &json!({"b": "1"}))?;
        same_at_both(w, "bravo", "bravo-cm")?;
        let (_, alpha) = same_at_both(w, "alpha", "alpha-cm")?;
        ensure!(
            alpha["spec"]["config"]["description"] == "settings",
            "{alpha}"
        );
        let crd = w.kube.json(&["get", "crd", LCM, "-o", "json"])?;
        let stored = &crd["status"]["storedVersions"];
        ensure!(*stored == json!(["v1alpha1", "v1beta1"]), "{stored}");

        // Rollback of step two: storage back at v1alpha1, the operator
        // serving both keeps converting what v1beta1 stored meanwhile.
        store_at(w, "v1alpha1")?;
        w.kube.merge_patch(
            NEW,
            "bravo",
            &json!({"spec": {"config": {"data": {"b": "2"}}}}),
        )?;
        wait_data(w, "bravo-cm", &json!({"b": "2"}))?;
        same_at_both(w, "bravo", "bravo-cm")?;
        wait_ready(w, "bravo")?;

        // Step three: storage at v1beta1 for good, the migration run to
        // its end, v1alpha1 retired and dropped from the CRD. The operator
        // restarts without a status write at every check, so that what
        // the migration leaves can be compared with what it found.
        let mut quiet = w.connect_args();
        quiet.extend(webhook_args(w, "Fail").split_off(w.admin_args().len()));
        w.stop_operator_cleanly()?;
        w.binary = LCM_V1BETA1_BINARY;
        w.start_operator(&quiet)?;
        wait_conversion_served(w)?;
        store_at(w, "v1beta1")?;
        for (name, config_map) in [("alpha", "alpha-cm"), ("bravo", "bravo-cm")] {
            wait_ready(w, name)?;
            same_at_both(w, name, config_map)?;
        }
        let before = versions_retire::objects(w)?;
        ensure!(before.len() == 2, "{:?}", before.keys());
        let stored = versions_retire::stored_versions(w)?;
        ensure!(stored == json!(["v1alpha1", "v1beta1"]), "{stored}");
        versions_retire::migrate_and_retire_v1alpha1(w, &before)?;
        // The operator carries on at v1beta1 alone.
        let edit = json!({"spec": {"config": {"data": {"b": "3"}}}});
        w.kube.merge_patch(NEW, "bravo", &edit)?;
        wait_data(w, "bravo-cm", &json!({"b": "3"})).map(drop)
    })
}

#[test]
fn a_tests_own_controller_converts_through_blue_envtests_webhook_server() -> Result<()> {
    use blue_kubernetes::{controller, Config, Package};
    use local_configmap_operator::package::names;
    // The CRD names the test's server: a control plane of its own,
    // without the example's CRD.
    let env = blue_envtest::Envtest::start()?;
    let checked = (|| -> Result<()> {
        let runtime = tokio::runtime::Runtime::new()?;
        let _inside = runtime.enter();
        let namespace = env.namespace("conv")?;
        let package = Package::new(LocalConfigMapsV1beta1::default())?;
        let mut config = Config::new(env.client()?, vec![package]);
        config.names = names();
        config.namespace = namespace.as_str().into();
        let controller = controller(config)?;
        let options = crd_options_of::<LocalConfigMapConfigV1beta1>();
        let webhook = env.serve_conversion(&controller, &options)?;
        let kube = env.kubectl_in(&namespace);
        let alpha = json!({"config": {"configMapName": "alpha-cm", "data": {"k": "v"}}});
        kube.create(&manifest("alpha", alpha))?;
        let new = kube.get(NEW, "alpha")?.context("alpha at v1beta1")?;
        ensure!(new["spec"]["config"]["name"] == "alpha-cm", "{new}");
        let old = kube.get(OLD, "alpha")?.context("alpha at v1alpha1")?;
        ensure!(
            old["spec"]["config"]["configMapName"] == "alpha-cm",
            "{old}"
        );
        // Not answering: reading at the other version fails.
        webhook.down()?;
        let run = kube.run(&["get", OLD, "alpha", "-o", "json"], None)?;
        ensure!(
            !run.ok && run.stderr.contains("conversion webhook"),
            "{}",
            run.stderr
        );
        webhook.up()?;
        eventually("converting again", DEADLINE, || {
            let old = kube.get(OLD, "alpha")?.context("alpha at v1alpha1")?;
            ensure!(
                old["spec"]["config"]["configMapName"] == "alpha-cm",
                "{old}"
            );
            Ok(())
        })
    })();
    let stopped = env.stop();
    checked.and(stopped.map_err(Into::into))
}
