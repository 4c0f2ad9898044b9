//! The resources the faults are applied to, what each should look like,
//! and the invariants checked against the cluster (`Fleet::check`).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use serde_json::{json, Value};

use crate::support::manifests::LCM;
use crate::support::manifests::{has_finalizer, manifest, owner_uid};
use crate::support::wait::eventually;
use crate::support::World;
use blue_e2e::status::phase;

pub const PREFIX: &str = "chaos-";
/// How long convergence may take after a fault heals.
pub const CONVERGE_DEADLINE: Duration = Duration::from_secs(180);

#[derive(Default)]
pub struct Fleet {
    created: usize,
    /// Live resources and the data their ConfigMap must hold.
    live: BTreeMap<String, u64>,
    deleted: Vec<String>,
}

fn data(name: &str, version: u64) -> Value {
    json!({"owner": name, "version": version.to_string()})
}

impl Fleet {
    pub fn live_count(&self) -> usize {
        self.live.len()
    }

    /// Creates `creates` resources, edits the `edits` oldest live ones and
    /// deletes `deletes` of them (Destroy: their ConfigMaps must go too).
    pub fn batch(&mut self, w: &World, creates: usize, edits: usize, deletes: usize) -> Result<()> {
        for _ in 0..creates {
            self.create(w)?;
        }
        let names: Vec<String> = self.live.keys().cloned().collect();
        for name in names.iter().take(edits) {
            self.edit(w, name)?;
        }
        for name in names.iter().skip(edits).take(deletes) {
            self.delete(w, name)?;
        }
        Ok(())
    }

    /// Creates one resource; returns its name.
    pub fn create(&mut self, w: &World) -> Result<String> {
        self.created += 1;
        let name = format!("{PREFIX}{}", self.created);
        let spec = json!({
            // Long enough that periodic checks of a growing fleet do not
            // crowd the two cores; faults, not timers, drive this suite.
            "reconcileInterval": "60s",
            "deletionPolicy": "Destroy",
            "config": {"data": data(&name, 1)},
        });
        w.kube.create(&manifest(&name, spec))?;
        self.live.insert(name.clone(), 1);
        Ok(name)
    }

    /// Changes a resource's data.
    pub fn edit(&mut self, w: &World, name: &str) -> Result<()> {
        let version = self.live.get(name).context("not a live resource")? + 1;
        w.kube.merge_patch(
            LCM,
            name,
            &json!({"spec": {"config": {"data": data(name, version)}}}),
        )?;
        self.live.insert(name.to_string(), version);
        Ok(())
    }

    /// Deletes a resource without waiting.
    pub fn delete(&mut self, w: &World, name: &str) -> Result<()> {
        w.kube.delete(LCM, name)?;
        self.live.remove(name);
        self.deleted.push(name.to_string());
        Ok(())
    }

    /// Waits until [`Fleet::check`] passes; returns how long that took.
    pub fn wait_converged(&self, w: &World) -> Result<Duration> {
        let started = Instant::now();
        eventually("the fleet converged", CONVERGE_DEADLINE, || self.check(w))?;
        Ok(started.elapsed())
    }

    /// One look at the cluster; the first broken invariant is the error.
    pub fn check(&self, w: &World) -> Result<()> {
        let resources = w.kube.items(&["get", LCM])?;
        let by_name: HashMap<&str, &Value> = resources
            .iter()
            .map(|r| (r["metadata"]["name"].as_str().unwrap_or(""), r))
            .collect();
        let managed = "app.kubernetes.io/managed-by=local-configmap-operator";
        let maps = w.kube.items(&["get", "configmaps", "-l", managed])?;
        let mut maps_by_owner: HashMap<&str, Vec<&Value>> = HashMap::new();
        for cm in &maps {
            maps_by_owner.entry(owner_uid(cm)).or_default().push(cm);
        }
        for (name, version) in &self.live {
            let r = by_name
                .get(name.as_str())
                .with_context(|| format!("{name} was lost"))?;
            let generation = &r["metadata"]["generation"];
            ensure!(
                phase(r) == "Ready" && r["status"]["observedGeneration"] == *generation,
                "{name} is {:?} at observed generation {} (generation {generation})",
                phase(r),
                r["status"]["observedGeneration"]
            );
            ensure!(has_finalizer(r), "{name} lacks the finalizer");
            let uid = r["metadata"]["uid"].as_str().unwrap_or("");
            let owned = maps_by_owner.get(uid).map_or(&[][..], Vec::as_slice);
            ensure!(owned.len() == 1, "{name} owns {} ConfigMaps", owned.len());
            let expected = data(name, *version);
            ensure!(
                owned[0]["data"] == expected,
                "{name}'s ConfigMap holds {} instead of version {version} (lost or rolled back)",
                owned[0]["data"]
            );
        }
        for name in &self.deleted {
            let gone = !by_name.contains_key(name.as_str());
            ensure!(gone, "{name} is not gone yet");
        }
        let live_uids: Vec<&str> = resources
            .iter()
            .filter_map(|r| r["metadata"]["uid"].as_str())
            .collect();
        let fleet_maps = maps.iter().filter(|cm| {
            cm["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with(PREFIX))
        });
        for cm in fleet_maps {
            ensure!(
                live_uids.contains(&owner_uid(cm)),
                "ConfigMap {} outlived its resource",
                cm["metadata"]["name"]
            );
        }
        Ok(())
    }
}
