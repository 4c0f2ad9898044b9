//! High availability: two operators elect a leader on a Lease; the leader
//! is SIGKILLed in the middle of a batch, the follower takes over, every
//! resource becomes Ready and no ConfigMap is written twice; a graceful
//! stop hands the Lease over in under 3 s.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use serde_json::json;

use super::{config_map, eventually, wait_ready, World, DEADLINE, LCM, REQUEST_ANNOTATION};
use crate::support::election::{self, LEASE_MS, RETRY_MS};
use crate::support::manifests;
use crate::support::{name_of, Transport};
use blue_envtest::operator::Operator;
use blue_envtest::process::log_tail;

/// Resources converged in the batch the leader dies in: enough that the
/// leader is still converging when the check (polling through kubectl)
/// sees its first ConfigMap. The proxy transport converges about 40 per
/// second here with the candidates' 2 workers, per-call kubectl about one.
fn batch(w: &World) -> usize {
    match w.transport {
        Transport::Proxy => 60,
        Transport::Kubectl => 8,
    }
}
/// The example's write counter on ConfigMaps.
const WRITES_ANNOTATION: &str = "examples.blue.dev/writes";
/// Polling the Lease through kubectl and process scheduling on a loaded
/// 2-core machine add to the protocol's bound (lease duration + one retry
/// period); 4.3 s against the 3.5 s bound was seen at a load average of 19.
const SLACK: Duration = Duration::from_millis(2_500);

fn name(i: usize) -> String {
    format!("ha-{i}")
}

/// Workers of each candidate: the library's default, not the example's 16,
/// which converge a batch of 60 before the check can see it half done.
const CANDIDATE_WORKERS: &str = "2";

/// A candidate operator: its own log and identity.
fn candidate(w: &World, identity: &str) -> Result<(Operator, PathBuf)> {
    let mut args = w.admin_args();
    args.extend(election::election_args(identity));
    args.extend(["--workers".to_string(), CANDIDATE_WORKERS.to_string()]);
    let log = w.scratch(&format!("operator-{identity}.log"));
    Ok((w.spawn_operator(&args, &log)?, log))
}

#[test]
fn leader_failover() -> Result<()> {
    crate::support::run(World::new("lcm")?, Some("ha-0"), |w| {
        let (mut a, a_log) = candidate(w, "e2e-a")?;
        election::wait_holder(&w.kube, "e2e-a", Instant::now(), DEADLINE)?;
        let (b, b_log) = candidate(w, "e2e-b")?;
        let mut b = Some(b);

        let batch = batch(w);
        w.kube.create(&manifests::batch(
            batch,
            name,
            |i| json!({"n": i.to_string()}),
        ))?;

        // Mid-batch: the first ConfigMap exists, not the last ones.
        let written = eventually("the leader's first effect", DEADLINE, || {
            let n = written(w)?;
            ensure!(n > 0, "no configmap yet");
            Ok(n)
        })?;
        let killed_at = Instant::now();
        a.kill()?;
        ensure!(
            written < batch,
            "the batch finished before the leader could be killed"
        );

        let takeover = election::wait_holder(&w.kube, "e2e-b", killed_at, DEADLINE)
            .with_context(|| tail("follower", &b_log))?;
        let bound = Duration::from_millis(LEASE_MS + RETRY_MS) + SLACK;
        println!(
            "  killed the leader after {written}/{batch} configmaps; the follower took over in {} ms",
            takeover.as_millis()
        );
        ensure!(
            takeover <= bound,
            "takeover took {takeover:?}, more than lease duration + retry period + {SLACK:?}"
        );

        for i in 0..batch {
            wait_ready(w, &name(i))?;
        }
        check_single_effects(w, &[&a_log, &b_log])?;

        // Graceful handover to a third candidate.
        let (c, c_log) = candidate(w, "e2e-c")?;
        let mut c = Some(c);
        eventually("the third candidate running", DEADLINE, || {
            ensure!(
                std::fs::read_to_string(&c_log)?.contains("watching"),
                "not started"
            );
            Ok(())
        })?;
        let stopping = Instant::now();
        b.take().context("follower")?.stop_cleanly("the leader")?;
        let handover = election::wait_holder(&w.kube, "e2e-c", stopping, DEADLINE)
            .with_context(|| tail("third candidate", &c_log))?;
        println!("  graceful stop handed over in {} ms", handover.as_millis());
        ensure!(
            handover < Duration::from_secs(3),
            "graceful handover took {handover:?}"
        );

        // The new leader works: a reconcile request is acknowledged.
        w.kube.merge_patch(
            LCM,
            &name(0),
            &json!({"metadata": {"annotations": {REQUEST_ANNOTATION: "after-handover"}}}),
        )?;
        wait_ready(w, &name(0))?;
        let mut c = c.take().context("third candidate")?;
        Ok(c.stop_cleanly("the third candidate")?)
    })
}

/// ConfigMaps of the batch that exist now.
fn written(w: &World) -> Result<usize> {
    let items = w.kube.items(&["get", "configmaps"])?;
    let names = items.iter().map(name_of);
    Ok(names.filter(|n| n.starts_with("ha-")).count())
}

/// Every ConfigMap of the batch was written exactly once (the example's
/// counter), and at most one process logged creating it.
fn check_single_effects(w: &World, logs: &[&Path]) -> Result<()> {
    let text: String = logs
        .iter()
        .map(|l| std::fs::read_to_string(l).unwrap_or_default())
        .collect();
    for name in (0..batch(w)).map(name) {
        let cm = config_map(w, &name)?.with_context(|| format!("configmap {name} is absent"))?;
        let writes = &cm["metadata"]["annotations"][WRITES_ANNOTATION];
        ensure!(writes == "1", "configmap {name} was written {writes} times");
        let line = format!("{}/{name}: configmap created", w.kube.namespace());
        let logged = text.matches(&line).count();
        ensure!(logged <= 1, "{logged} processes created configmap {name}");
    }
    Ok(())
}

fn tail(who: &str, log: &Path) -> String {
    format!("{who}'s log:\n{}", log_tail(log, 15))
}
