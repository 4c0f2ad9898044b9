//! The one-shot storage migration SIGKILLed at seeded random points of
//! its passes, at least ten times, while the operator's passes run on
//! some of the objects (their status writes and the migration's rewrites
//! conflict): a crash restarts the migration from the beginning, no
//! object is lost, changed or ever unreadable, and `storedVersions` ends
//! with the stored version alone.

use crate::chaos::{figure, Profile, Seed};
use crate::migration_fixture::{same_but_resource_version, Fixture, Objects, OLD};
use anyhow::{ensure, Context, Result};
use std::time::{Duration, Instant};

/// Objects per namespace: about 4 s a pass at the rate below, so a kill
/// 0-3 s after a pass began lands inside it.
const PER_NAMESPACE: usize = 60;
const RATE: &str = "30";
/// The migration Lease a killed holder leaves: short, so the next start
/// takes over within seconds.
const HOOKS: &str = "migration-lease-ms=3000";

#[test]
fn storage_migration_sigkilled_at_random_points_loses_nothing() -> Result<()> {
    let mut seed = Seed::for_test("storage_migration_sigkilled_at_random_points");
    let kills = Profile::from_env().kills.max(10);
    let fx = Fixture::start("chaos-migration", &["managed", "other"], PER_NAMESPACE)?;
    let before = fx.objects()?;
    // Passes in flight on the objects of `managed`: every check writes.
    let args = [
        "--namespace",
        "managed",
        "--poll-ms",
        "250",
        "--status-heartbeat-ms",
        "0",
    ];
    let mut operator = fx.operator(&args)?;
    fx.move_storage()?;
    let started = Instant::now();
    let mut killed_after_ms = Vec::new();
    for i in 0..kills {
        let log = fx.scratch(&format!("migrate-{i}.log"));
        let mut one_shot =
            fx.one_shot_process(&["--migration-rate", RATE, "--test-hooks", HOOKS], &log)?;
        let began =
            crate::support::wait::eventually("a pass to begin", Duration::from_secs(60), || {
                ensure!(
                    one_shot.is_running(),
                    "it exited: {}",
                    std::fs::read_to_string(&log)?
                );
                let text = std::fs::read_to_string(&log)?;
                ensure!(text.contains("a pass over every object begins"), "not yet");
                Ok(())
            });
        began.with_context(|| format!("kill {i}"))?;
        let delay = seed.below(3000);
        std::thread::sleep(Duration::from_millis(delay));
        ensure!(
            one_shot.is_running(),
            "kill {i}: the migration ended before its kill"
        );
        one_shot.crash()?;
        killed_after_ms.push(delay);
        readable(&fx, &before).with_context(|| format!("after kill {i}"))?;
        ensure!(
            fx.stored_versions()?.len() == 2,
            "retired before a pass could finish"
        );
    }
    let log = fx.scratch("migrate-final.log");
    let mut last = fx.one_shot_process(&["--test-hooks", HOOKS], &log)?;
    let finished = crate::support::wait::eventually(
        "the last run to finish",
        Duration::from_secs(120),
        || {
            ensure!(!last.is_running(), "still running");
            Ok(())
        },
    );
    let status = last.stop()?;
    let text = std::fs::read_to_string(&log)?;
    finished.with_context(|| text.clone())?;
    ensure!(
        status.success() && text.contains("storage migration done"),
        "{status}: {text}"
    );
    ensure!(
        fx.stored_versions()? == [fx.stored.as_str()],
        "{:?}",
        fx.stored_versions()?
    );
    operator.stop_cleanly("local-configmap-operator")?;
    figure(&format!(
        "storage migration: {kills} SIGKILLs {killed_after_ms:?} ms into a pass over {} objects, then a full run: storedVersions [{}] after {:.1}s",
        before.len(),
        fx.stored,
        started.elapsed().as_secs_f64(),
    ));
    let after = fx.objects()?;
    // What the operator does not manage is untouched but for the rewrite.
    let other = |o: &Objects| -> Objects {
        o.iter()
            .filter(|(k, _)| k.starts_with("other/"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    same_but_resource_version(&other(&before), &other(&after))?;
    // What it manages has its status and finalizer now: what was written
    // (the spec, the name, uid and labels) is unchanged.
    ensure!(before.keys().eq(after.keys()), "objects lost or added");
    for (key, old) in before.iter().filter(|(k, _)| k.starts_with("managed/")) {
        let new = &after[key];
        for field in [
            "/spec",
            "/metadata/uid",
            "/metadata/labels",
            "/metadata/creationTimestamp",
        ] {
            ensure!(
                old.pointer(field) == new.pointer(field),
                "{key}{field} changed"
            );
        }
    }
    fx.finish()
}

/// Every object is present and reads at both versions.
fn readable(fx: &Fixture, before: &Objects) -> Result<()> {
    for version in [fx.stored.as_str(), OLD] {
        let now = fx.objects_at(version)?;
        ensure!(
            now.keys().eq(before.keys()),
            "at {version}: objects lost or added"
        );
    }
    Ok(())
}
