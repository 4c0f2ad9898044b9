//! Scale-out: replicas of the example share a batch by sharding, under the
//! shipped Role (real ServiceAccount tokens, so RBAC's `list` on Leases is
//! what the replicas use). One replica starts, two join while it converges
//! (1 -> 3), one leaves gracefully mid-converge (3 -> 2), one is SIGKILLed
//! mid-converge (2 -> 1). Every replica appends each callback's start and
//! end to one audit file; the proof that no identity ever ran in two
//! processes at once is read from that file, not from logs.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{ensure, Context, Result};
use blue_kubernetes_client::Lease;
use local_configmap_operator::test_hooks::audit::{self, AuditEntry};
use serde_json::{json, Value};

use super::{eventually, World, DEADLINE, LCM};
use crate::support::election::{shard_holders, timing};
use crate::support::in_cluster::{in_cluster_args, request_token};
use crate::support::manifests;
use crate::support::wait::poll;
use blue_envtest::operator::Operator;

/// The Leases' prefix: `e2e-shards-member-K` and `e2e-shards-shard-I`.
const LEASE: &str = "e2e-shards";
/// Few shards, so each replica's share is visible in a small batch.
const SHARDS: usize = 8;
const REPLICAS: [&str; 3] = ["so-r1", "so-r2", "so-r3"];
/// Four rounds long: a shard handed over without its drain would be
/// started by its new owner while the old one still converges it (with
/// 500 ms, a planted "release without draining" went unnoticed).
const CONVERGE_MS: u64 = 2_000;

/// Resources in the batch: enough that every replica's shards hold some.
const BATCH: usize = 12;

fn name(i: usize) -> String {
    format!("so-{i}")
}

#[test]
fn scale_out_1_3_2_no_overlap() -> Result<()> {
    crate::support::run(World::new("lcm")?, Some("so-0"), |w| {
        let audit_file = w.scratch("scale-out.audit");
        let mut running: BTreeMap<&str, Operator> = BTreeMap::new();
        let [first, second, third] = REPLICAS;

        running.insert(first, replica(w, first, &audit_file)?);
        wait_settled(w, &[first])?;
        apply_round(w, 0)?;
        // 1 -> 3 while the first replica converges, and an edit right away:
        // the newcomers find the batch due, so a shard handed over before its
        // running converges returned would be converged twice at once.
        wait_mid_converge(&audit_file, &[first])?;
        for r in [second, third] {
            running.insert(r, replica(w, r, &audit_file)?);
        }
        apply_round(w, 1)?;
        wait_settled(w, &REPLICAS)?;
        wait_round_ready(w, 1)?;

        // 3 -> 2: a graceful stop mid-converge.
        apply_round(w, 2)?;
        let leaving = wait_mid_converge(&audit_file, &[second, third])?;
        let mut op = running.remove(leaving).context("the leaving replica")?;
        op.stop_cleanly(leaving)?;
        let staying = if leaving == second { third } else { second };
        wait_settled(w, &[first, staying])?;
        wait_round_ready(w, 2)?;

        // 2 -> 1: SIGKILL mid-converge.
        apply_round(w, 3)?;
        wait_mid_converge(&audit_file, &[staying])?;
        running.remove(staying).context("the victim")?.kill()?;
        let killed_at = SystemTime::now().duration_since(UNIX_EPOCH)?.as_nanos();
        wait_settled(w, &[first])?;
        wait_round_ready(w, 3)?;

        let mut entries = read_audit(&audit_file)?;
        let before = entries.len();
        audit::close_killed(&mut entries, staying, killed_at);
        ensure!(
            entries.len() > before,
            "{staying} was killed between callbacks, not mid-converge"
        );
        let overlaps = audit::overlaps(&entries);
        ensure!(
            overlaps.is_empty(),
            "{} overlapping runs of one identity in two replicas, first: {:?}",
            overlaps.len(),
            overlaps[0]
        );
        check_every_resource_audited(w, &entries)?;
        println!(
            "  {} callbacks audited across {REPLICAS:?}, {leaving} left gracefully, {staying} was killed mid-converge; no overlap",
            audit::intervals(&entries).len()
        );
        let mut last = running.remove(first).context("the first replica")?;
        Ok(last.stop_cleanly(first)?)
    })
}

/// A sharded replica named `identity`, in-cluster with a fresh token.
fn replica(w: &World, identity: &str, audit_file: &Path) -> Result<Operator> {
    let sa = w.scratch(&format!("serviceaccount-{identity}"));
    let mut args = in_cluster_args(w, &sa, &request_token(w)?)?;
    let flags = format!(
        "--shards {SHARDS} --lease-name {LEASE} --leader-identity {identity} {} --workers 2",
        timing(),
    );
    args.extend(flags.split_whitespace().map(String::from));
    let hooks = format!(
        "callback-delay={CONVERGE_MS}ms,audit-file={}",
        audit_file.display()
    );
    crate::support::add_test_hooks(&mut args, &hooks);
    w.spawn_operator(&args, &w.scratch(&format!("{identity}.log")))
}

/// Shard Lease -> holder, for the shards some replica holds.
fn holders(w: &World) -> Result<BTreeMap<String, String>> {
    let items = w.kube.items(&["get", "leases"])?;
    let leases = items.iter().map(|l| Lease::from_object(l, "get lease"));
    let leases: Vec<Lease> = leases.collect::<Result<_, _>>()?;
    Ok(shard_holders(&leases, LEASE))
}

/// Waits until every shard is held, only by `live` replicas, and each of
/// them holds one.
fn wait_settled(w: &World, live: &[&str]) -> Result<()> {
    eventually(&format!("the shards settled on {live:?}"), DEADLINE, || {
        let held = holders(w)?;
        ensure!(held.len() == SHARDS, "{} shards held: {held:?}", held.len());
        let stranger = held.values().find(|h| !live.contains(&h.as_str()));
        ensure!(stranger.is_none(), "{stranger:?} still holds a shard");
        let idle = live.iter().find(|r| !held.values().any(|h| h == *r));
        ensure!(idle.is_none(), "{idle:?} holds no shard: {held:?}");
        Ok(())
    })
}

/// Creates (round 0) or edits every resource of the batch in one apply.
fn apply_round(w: &World, round: usize) -> Result<()> {
    let batch = manifests::batch(BATCH, name, |i| round_data(i, round));
    Ok(w.kube.apply(&batch)?)
}

fn round_data(i: usize, round: usize) -> Value {
    json!({"n": i.to_string(), "round": round.to_string()})
}

/// Waits until every resource is Ready for its generation and its
/// ConfigMap holds `round`'s data.
fn wait_round_ready(w: &World, round: usize) -> Result<()> {
    let what = format!("the batch Ready for round {round}");
    eventually(&what, DEADLINE, || {
        let resources = by_name(w.kube.items(&["get", LCM])?);
        let config_maps = by_name(w.kube.items(&["get", "configmaps"])?);
        for i in 0..BATCH {
            let r = resources.get(&name(i)).context("a resource is missing")?;
            super::check_ready(r).with_context(|| name(i))?;
            let data = config_maps.get(&name(i)).map(|cm| &cm["data"]);
            let held = data == Some(&round_data(i, round));
            ensure!(held, "configmap {} holds {data:?}", name(i));
        }
        Ok(())
    })
}

fn by_name(items: Vec<Value>) -> BTreeMap<String, Value> {
    items
        .into_iter()
        .filter_map(|v| Some((v["metadata"]["name"].as_str()?.to_string(), v)))
        .collect()
}

/// Waits until one of `candidates` is in a callback (a start line without
/// its end); returns which.
fn wait_mid_converge<'a>(audit_file: &Path, candidates: &[&'a str]) -> Result<&'a str> {
    let what = format!("one of {candidates:?} mid-converge");
    poll(&what, DEADLINE, Duration::from_millis(20), || {
        let runs = audit::intervals(&read_audit(audit_file)?);
        let busy = candidates
            .iter()
            .find(|c| runs.iter().any(|r| r.replica == **c && r.end.is_none()));
        busy.copied().context("none is running a callback")
    })
}

fn read_audit(path: &Path) -> Result<Vec<AuditEntry>> {
    let text = fs::read_to_string(path).unwrap_or_default();
    Ok(audit::parse_audit(&text)?)
}

/// Every resource's state identity (as its status records it) was
/// converged under the audit. (Every replica ran callbacks: each was seen
/// mid-converge.)
fn check_every_resource_audited(w: &World, entries: &[AuditEntry]) -> Result<()> {
    let resources = by_name(w.kube.items(&["get", LCM])?);
    for i in 0..BATCH {
        let r = resources.get(&name(i)).context("a resource is missing")?;
        let identity = r["status"]["stateIdentity"].as_str().unwrap_or_default();
        ensure!(
            entries.iter().any(|e| e.identity == identity),
            "{}'s identity {identity:?} is not in the audit",
            name(i)
        );
    }
    Ok(())
}
