//! Watches ConfigMaps and resources for the whole run, so the order of
//! events can be checked afterwards: a Destroy resource's finalizer must go
//! only after its ConfigMap was deleted, i.e. at a higher resourceVersion
//! (etcd revisions are global, so versions of different types compare).
//! Watches break when the API server goes away; each is restarted, and a
//! deletion that fell into such a gap is reported as unverified, not passed.

use std::io::BufReader;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{ensure, Result};
use serde_json::Value;

use crate::support::manifests::LCM;
use crate::support::manifests::{has_finalizer, owner_uid};
use blue_envtest::Kubectl;

/// One watch event, reduced to what the order check needs.
#[derive(Clone, Debug)]
struct Event {
    config_map: bool,
    deleted: bool,
    name: String,
    uid: String,
    owner: String,
    revision: u64,
    deleting: bool,
    has_finalizer: bool,
}

/// Background watches of both types; stopped (children killed) on drop.
pub struct Recorder {
    events: Arc<Mutex<Vec<Event>>>,
    stop: Arc<AtomicBool>,
    children: Arc<Mutex<Vec<Child>>>,
    threads: Vec<JoinHandle<()>>,
}

impl Recorder {
    pub fn start(kube: &Kubectl) -> Self {
        let mut this = Self {
            events: Arc::default(),
            stop: Arc::default(),
            children: Arc::default(),
            threads: Vec::new(),
        };
        for kind in ["configmaps", LCM] {
            let (kube, events, stop, children) = (
                kube.clone(),
                this.events.clone(),
                this.stop.clone(),
                this.children.clone(),
            );
            this.threads.push(std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    watch_once(&kube, kind, &events, &children);
                    std::thread::sleep(Duration::from_millis(500));
                }
            }));
        }
        this
    }

    /// Checks every Destroy deletion seen: ConfigMap deleted before the
    /// finalizer went. Returns (verified, unverified).
    pub fn check_finalizer_order(&self) -> Result<(usize, usize)> {
        finalizer_order(&self.events.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// See [`Recorder::check_finalizer_order`].
fn finalizer_order(events: &[Event]) -> Result<(usize, usize)> {
    let mut verified = 0;
    let mut unverified = 0;
    // The first event showing a deleting resource without our finalizer, or
    // its deletion (whose object, on 1.20, still lists the finalizer whose
    // removal deleted it).
    let gone = |e: &&Event| !e.config_map && (e.deleted || (e.deleting && !e.has_finalizer));
    let mut released: Vec<&Event> = Vec::new();
    for e in events.iter().filter(gone) {
        if !released.iter().any(|r| r.uid == e.uid) {
            released.push(e);
        }
    }
    for r in released
        .iter()
        .filter(|r| r.name.starts_with(super::fleet::PREFIX))
    {
        let cm_deleted = events
            .iter()
            .find(|e| e.config_map && e.deleted && e.owner == r.uid);
        match cm_deleted {
            Some(cm) => {
                ensure!(
                    cm.revision < r.revision,
                    "{}: finalizer removed at revision {} before its ConfigMap was deleted at {}",
                    r.name,
                    r.revision,
                    cm.revision
                );
                verified += 1;
            }
            None => unverified += 1,
        }
    }
    Ok((verified, unverified))
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let mut children = self.children.lock().unwrap_or_else(|e| e.into_inner());
        for child in children.iter_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
        // Released before the joins: a watch thread may be waiting for it.
        drop(children);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Runs one `kubectl get -w` until it ends, recording its events.
fn watch_once(
    kube: &Kubectl,
    kind: &str,
    events: &Mutex<Vec<Event>>,
    children: &Mutex<Vec<Child>>,
) {
    let mut cmd = kube.command();
    cmd.args(["get", kind, "--watch", "--output-watch-events"])
        .args(["-o", "json", "--request-timeout=0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let Ok(mut child) = cmd.spawn() else {
        return;
    };
    let Some(stdout) = child.stdout.take() else {
        return;
    };
    {
        let mut list = children.lock().unwrap_or_else(|e| e.into_inner());
        list.retain_mut(|c| c.try_wait().ok().flatten().is_none());
        list.push(child);
    }
    let stream = serde_json::Deserializer::from_reader(BufReader::new(stdout)).into_iter::<Value>();
    for value in stream {
        let Ok(value) = value else {
            return;
        };
        if let Some(event) = reduce(kind == "configmaps", &value) {
            events.lock().unwrap_or_else(|e| e.into_inner()).push(event);
        }
    }
}

fn reduce(config_map: bool, event: &Value) -> Option<Event> {
    let object = &event["object"];
    let meta = &object["metadata"];
    Some(Event {
        config_map,
        deleted: event["type"] == "DELETED",
        name: meta["name"].as_str()?.to_string(),
        uid: meta["uid"].as_str().unwrap_or("").to_string(),
        owner: owner_uid(object).to_string(),
        revision: meta["resourceVersion"].as_str()?.parse().ok()?,
        deleting: !meta["deletionTimestamp"].is_null(),
        has_finalizer: has_finalizer(object),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::manifests::{FINALIZER, OWNER_ANNOTATION};
    use serde_json::json;

    fn event(kind: &str, config_map: bool, revision: u64, finalizers: Value) -> Event {
        let meta = if config_map {
            json!({"name": "chaos-1", "uid": "cm", "resourceVersion": revision.to_string(),
                   "annotations": {OWNER_ANNOTATION: "u1"}})
        } else {
            json!({"name": "chaos-1", "uid": "u1", "resourceVersion": revision.to_string(),
                   "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": finalizers})
        };
        reduce(
            config_map,
            &json!({"type": kind, "object": {"metadata": meta}}),
        )
        .unwrap()
    }

    #[test]
    fn finalizer_removed_after_the_config_map_was_deleted_passes() {
        let events = [
            event("MODIFIED", false, 8, json!([FINALIZER])),
            event("DELETED", true, 10, Value::Null),
            event("DELETED", false, 12, json!([FINALIZER])),
        ];
        assert_eq!(finalizer_order(&events).unwrap(), (1, 0));
    }

    #[test]
    fn finalizer_removed_before_the_config_map_was_deleted_fails() {
        let events = [
            event("DELETED", false, 9, json!([])),
            event("DELETED", true, 10, Value::Null),
        ];
        assert!(finalizer_order(&events).is_err());
    }

    #[test]
    fn a_deletion_missed_by_the_watch_is_unverified() {
        let events = [event("DELETED", false, 12, json!([FINALIZER]))];
        assert_eq!(finalizer_order(&events).unwrap(), (0, 1));
    }
}
