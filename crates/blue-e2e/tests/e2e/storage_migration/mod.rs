//! Storage migration on the real API server: LocalConfigMaps written while
//! the CRD stores them at an older version (`v0alpha1`, the same schema,
//! so no conversion webhook is needed: the API server only changes
//! `apiVersion`), the storage flag moved to the version the example
//! stores at, then the migration run each way it can run: the
//! `migrate-storage` subcommand, the operator's `--migrate-storage`, and
//! the library with a concurrent writer. Each check ends with
//! `status.storedVersions` holding the storage version alone and every
//! object unchanged but for its resourceVersion. Each has a control
//! plane of its own (the CRD differs from the shared one's).

// Shared with the chaos checks (tests/chaos), which use the rest of it.
#[allow(dead_code)]
pub mod fixture;

use anyhow::{ensure, Context, Result};
use blue_kubernetes::migration::{Migration, MigrationSettings};
use blue_kubernetes::telemetry::Metrics;
use blue_kubernetes_client::{ApiRequest, Call, Client, Error, Hook, Layered, Method, PatchType};
use fixture::{Fixture, OLD};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn migrate_storage_with_the_generated_rights_rewrites_every_object_and_retires_the_old_version(
) -> Result<()> {
    let fx = Fixture::start("one-shot", &["alpha", "beta"], 30)?;
    let before = fx.objects()?;
    fx.move_storage()?;
    // As a ServiceAccount without the rights: the preflight refuses.
    let refused = fx.service_account("migrator", false)?;
    let (ok, log) = fx.run_one_shot(Some(&refused), &[])?;
    ensure!(!ok && log.contains("RBAC does not allow"), "{log}");
    ensure!(fx.objects()? == before, "a refused run wrote");
    // With the generated manifests' rights (the Job's way).
    let granted = fx.service_account("migrator", true)?;
    let (ok, log) = fx.run_one_shot(Some(&granted), &["--migration-rate", "200"])?;
    ensure!(ok, "migrate-storage failed:\n{log}");
    ensure!(log.contains("storage migration done"), "{log}");
    ensure!(
        fx.stored_versions()? == [fx.stored.as_str()],
        "{:?}",
        fx.stored_versions()?
    );
    let after = fx.objects()?;
    fixture::same_but_resource_version(&before, &after)?;
    // Each was stored at the old version: each write landed anew.
    for (key, object) in &after {
        let old = &before[key]["metadata"]["resourceVersion"];
        ensure!(
            object["metadata"]["resourceVersion"] != *old,
            "{key} was not rewritten"
        );
    }
    // Once retired, the old version can leave the CRD.
    fx.drop_old_version()?;
    ensure!(
        fx.objects()? == after,
        "an object changed when the old version left"
    );
    // A second run finds nothing to do and writes nothing.
    let (ok, log) = fx.run_one_shot(Some(&granted), &[])?;
    ensure!(ok && log.contains("storage migration done"), "{log}");
    ensure!(fx.objects()? == after, "a run with nothing to do wrote");
    fx.finish()
}

#[test]
fn a_one_shot_migration_serves_its_progress_on_metrics() -> Result<()> {
    let fx = Fixture::start("one-shot-metrics", &["delta"], 0)?;
    fx.create_objects("delta", 10, OLD)?;
    let address = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .to_string();
    let log = fx.scratch("one-shot-metrics.log");
    // Started before the storage moves, so it waits first; one write a
    // second leaves ten seconds to see it at work.
    let args = ["--metrics-bind", &address, "--migration-rate", "1"];
    let mut one_shot = fx.one_shot_process(&args, &log)?;
    let scrape = || blue_e2e::scrape::http_get(&address, "/metrics");
    let rewritten = |text: &str| {
        (text.lines())
            .find(|l| {
                l.contains("result=\"rewritten\"}")
                    && l.starts_with("blue_storage_migration_objects_total")
            })
            .and_then(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
    };
    fixture::eventually(Duration::from_secs(60), || {
        let text = scrape()?;
        // Served; its own series appear with the first object written.
        ensure!(text.contains("blue_build_info{"), "{text}");
        ensure!(
            rewritten(&text).is_none(),
            "rewrote before the storage moved"
        );
        Ok(())
    })
    .context("serving /metrics while it waits")?;
    fx.move_storage()?;
    fixture::eventually(Duration::from_secs(60), || {
        let text = scrape()?;
        let n = rewritten(&text).context("nothing rewritten yet")?;
        ensure!((1..10).contains(&n), "{n} rewritten");
        ensure!(
            text.contains("blue_storage_migration_objects_left{"),
            "{text}"
        );
        Ok(())
    })
    .context("its progress on /metrics")?;
    fixture::eventually(Duration::from_secs(60), || {
        ensure!(!one_shot.is_running(), "still migrating");
        Ok(())
    })?;
    let status = one_shot.stop()?;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    ensure!(
        status.success() && text.contains("storage migration done"),
        "{status}:\n{text}"
    );
    ensure!(fx.stored_versions()? == [fx.stored.as_str()]);
    fx.finish()
}

#[test]
fn migrate_storage_flag_migrates_every_namespace_beside_the_operator() -> Result<()> {
    // The operator manages `managed`; the objects live in `other`, which
    // it does not manage: the migration still rewrites them all.
    let fx = Fixture::start("in-operator", &["managed", "other"], 0)?;
    fx.create_objects("other", 20, OLD)?;
    let before = fx.objects()?;
    fx.move_storage()?;
    let mut operator = fx.operator(&["--namespace", "managed", "--migrate-storage"])?;
    let stored = fx.stored.clone();
    let retired = fixture::eventually(Duration::from_secs(90), || {
        let versions = fx.stored_versions()?;
        ensure!(versions == [stored.as_str()], "storedVersions {versions:?}");
        Ok(())
    });
    let log = std::fs::read_to_string(operator.log()).unwrap_or_default();
    operator.stop_cleanly("local-configmap-operator")?;
    retired.with_context(|| log.clone())?;
    ensure!(log.contains("storage migration complete"), "{log}");
    fixture::same_but_resource_version(&before, &fx.objects()?)?;
    fx.finish()
}

/// Before the first write to the object named `target`, writes that
/// object itself (an annotation), as a concurrent writer would: the
/// migration's write then meets a Conflict.
struct ConcurrentWriter {
    inner: Arc<dyn Client>,
    target: String,
    done: AtomicBool,
}

#[blue_kubernetes::async_trait]
impl Hook for ConcurrentWriter {
    async fn before(&self, call: &Call<'_>) -> Result<(), Error> {
        let Call::Raw { request } = call else {
            return Ok(());
        };
        let ours = request.method == Method::Put && request.path.as_str().ends_with(&self.target);
        if ours && !self.done.swap(true, Ordering::SeqCst) {
            let patch = json!({"metadata": {"annotations": {"e2e.blue.dev/touched": "yes"}}});
            let touch = ApiRequest::new(Method::Patch(PatchType::Merge), request.path.clone());
            self.inner.send_raw(touch.with_body(patch)).await?;
        }
        Ok(())
    }
}

#[test]
fn a_concurrent_writers_conflict_is_counted_not_fatal() -> Result<()> {
    let fx = Fixture::start("conflict", &["gamma"], 0)?;
    fx.create_objects("gamma", 8, OLD)?;
    let before = fx.objects()?;
    fx.move_storage()?;
    let tokio = tokio::runtime::Runtime::new()?;
    let _inside = tokio.enter();
    let client = fx.env.client()?;
    let writer = ConcurrentWriter {
        inner: client.clone(),
        target: "/lcm-3".into(),
        done: AtomicBool::new(false),
    };
    let layered: Arc<dyn Client> = Arc::new(Layered::new(client, writer));
    let metrics = Metrics::new();
    let lease = MigrationSettings::lease_name_of("e2e");
    let migration = Migration::new(layered, MigrationSettings::new(lease, "gamma"), &metrics)?;
    let (_stop, stopped) = tokio::sync::watch::channel(false);
    let kinds = [fx.descriptor()];
    let run = tokio.block_on(async {
        tokio::time::timeout(Duration::from_secs(60), migration.run(&kinds, stopped)).await
    });
    run.context("the migration did not finish in 60 s")??;
    let text = metrics.encode();
    let count = |result: &str| {
        let series = format!("kind=\"localconfigmaps.examples.blue.dev\",result=\"{result}\"}}");
        text.lines()
            .find(|l| l.contains(&series))
            .and_then(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    ensure!(count("conflict") == 1, "one Conflict counted:\n{text}");
    ensure!(
        count("rewritten") == 7,
        "the other seven rewritten:\n{text}"
    );
    ensure!(text.contains("blue_storage_migration_passes_total{kind=\"localconfigmaps.examples.blue.dev\",result=\"completed\"} 1"), "{text}");
    ensure!(
        fx.stored_versions()? == [fx.stored.as_str()],
        "{:?}",
        fx.stored_versions()?
    );
    let mut after = fx.objects()?;
    let touched = after.get_mut("gamma/lcm-3").context("lcm-3 is gone")?;
    let annotations = touched["metadata"]["annotations"]
        .as_object_mut()
        .context("no annotations")?;
    ensure!(
        annotations.remove("e2e.blue.dev/touched").is_some(),
        "the writer's write is kept"
    );
    if annotations.is_empty() {
        touched["metadata"]
            .as_object_mut()
            .map(|m| m.remove("annotations"));
    }
    // The writer's patch is the one change: its managedFields entry aside.
    touched["metadata"]["managedFields"] =
        before["gamma/lcm-3"]["metadata"]["managedFields"].clone();
    fixture::same_but_resource_version(&before, &after)?;
    drop(migration);
    fx.finish()
}
