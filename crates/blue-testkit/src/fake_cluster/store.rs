//! The object store: resourceVersion, generation, finalizer and deletion
//! semantics of the Kubernetes API server, without the server.

use super::history::{Change, ChangeKind, History, Key};
use super::metadata::{
    desired_state, finalizers, is_deleting, meta_str, set_finalizers, SYSTEM_METADATA,
};
use super::schema::Structural;
use blue_kubernetes_client::{ErrorKind, ResourceDescriptor};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The stored key; a cluster-scoped type's objects have the namespace `""`,
/// whatever namespace is asked for.
pub(crate) fn key(d: &ResourceDescriptor, namespace: &str, name: &str) -> Key {
    let namespace = if d.namespaced { namespace } else { "" };
    (
        d.group.clone(),
        d.plural.clone(),
        namespace.to_owned(),
        name.to_owned(),
    )
}

/// Whether `k` is an object of type `d` in `namespace` (`""`: any).
pub(crate) fn selects(d: &ResourceDescriptor, namespace: &str, k: &Key) -> bool {
    k.0 == d.group && k.1 == d.plural && (namespace.is_empty() || !d.namespaced || k.2 == namespace)
}

/// Why a write was refused.
pub(crate) type Refusal = ErrorKind;

#[derive(Debug, Default)]
pub(crate) struct Store {
    objects: BTreeMap<Key, Value>,
    revision: u64,
    /// Every write of an object, for watches and continued list pages.
    pub(crate) history: History,
    /// Installed CRD schemas by (group, plural).
    schemas: BTreeMap<(String, String), Structural>,
    /// Why the last write was refused by a schema.
    pub(crate) last_rejection: Vec<String>,
}

impl Store {
    pub(crate) fn install(&mut self, group: String, plural: String, schema: Structural) {
        self.schemas.insert((group, plural), schema);
    }

    /// Applies the type's installed schema to `object` (if any), as the API
    /// server does on every write: prune, default, validate.
    pub(crate) fn admit(
        &mut self,
        d: &ResourceDescriptor,
        object: &mut Value,
    ) -> Result<(), Refusal> {
        self.last_rejection.clear();
        let Some(schema) = self.schemas.get(&(d.group.clone(), d.plural.clone())) else {
            return Ok(());
        };
        match schema.admit(object) {
            Ok(()) => Ok(()),
            Err(errors) => {
                self.last_rejection = errors;
                Err(ErrorKind::Invalid)
            }
        }
    }

    pub(crate) fn revision(&self) -> u64 {
        self.revision
    }

    /// Advances the cluster-wide resourceVersion counter for one write.
    pub(crate) fn next_revision(&mut self) -> u64 {
        self.revision += 1;
        self.revision
    }

    fn stamp(&mut self, object: &mut Value) {
        let revision = self.next_revision();
        object["metadata"]["resourceVersion"] = json!(revision.to_string());
    }

    pub(crate) fn get(&self, d: &ResourceDescriptor, namespace: &str, name: &str) -> Option<Value> {
        self.objects.get(&key(d, namespace, name)).cloned()
    }

    /// Every object as stored now: what a lagging watch cache answers from.
    pub(crate) fn objects(&self) -> BTreeMap<Key, Value> {
        self.objects.clone()
    }

    /// The objects of type `d` in `namespace` (`""`: every namespace),
    /// sorted by namespace and name.
    pub(crate) fn list(&self, d: &ResourceDescriptor, namespace: &str) -> Vec<Value> {
        self.entries(d, namespace)
            .map(|(_, object)| object.clone())
            .collect()
    }

    /// The stored entries of type `d` in `namespace` (`""`: every namespace).
    pub(crate) fn entries<'a>(
        &'a self,
        d: &'a ResourceDescriptor,
        namespace: &'a str,
    ) -> impl Iterator<Item = (&'a Key, &'a Value)> + 'a {
        let all_namespaces = namespace.is_empty() || !d.namespaced;
        let from = key(d, if all_namespaces { "" } else { namespace }, "");
        self.objects
            .range(from..)
            .take_while(move |(k, _)| k.0 == d.group && k.1 == d.plural)
            .filter(move |(k, _)| selects(d, namespace, k))
    }

    /// Remembers a write for watches and list pages.
    fn record(&mut self, key: &Key, kind: ChangeKind, object: &Value, previous: Option<Value>) {
        self.history.push(Change {
            revision: self.revision,
            key: key.clone(),
            kind,
            object: object.clone(),
            previous,
        });
    }

    /// Creates `object` of a custom resource type; `Conflict` when it
    /// exists, `Invalid` without a name.
    pub(crate) fn create(
        &mut self,
        d: &ResourceDescriptor,
        object: Value,
        now: &str,
    ) -> Result<Value, Refusal> {
        self.create_object(d, object, now, true)
    }

    /// Creates `object`; `custom` (a served custom resource) defaults its
    /// `spec` to `{}` for the controller's sake. Every type but the core
    /// group's (whose Secrets and ConfigMaps have none) gets a generation.
    pub(crate) fn create_object(
        &mut self,
        d: &ResourceDescriptor,
        mut object: Value,
        now: &str,
        custom: bool,
    ) -> Result<Value, Refusal> {
        let name = meta_str(&object, "name")
            .filter(|n| !n.is_empty())
            .ok_or(ErrorKind::Invalid)?
            .to_owned();
        let namespace = match meta_str(&object, "namespace") {
            _ if !d.namespaced => "",
            Some(ns) if !ns.is_empty() => ns,
            _ => "default",
        }
        .to_owned();
        let k = key(d, &namespace, &name);
        if self.objects.contains_key(&k) {
            return Err(ErrorKind::Conflict);
        }
        // Unique in the process, not just in this cluster, as real uids are:
        // the controller's object locks are process-wide, so two clusters in
        // tests running at once must never hand out the same uid.
        static UIDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let uid = format!(
            "00000000-0000-4000-8000-{:012x}",
            UIDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
        );
        object["apiVersion"] = json!(d.api_version());
        object["kind"] = json!(d.kind);
        if custom && object.get("spec").is_none() {
            object["spec"] = json!({});
        }
        let meta = &mut object["metadata"];
        match meta.as_object_mut() {
            Some(fields) if namespace.is_empty() => {
                fields.remove("namespace");
            }
            _ => meta["namespace"] = json!(namespace),
        }
        meta["uid"] = json!(uid);
        if custom || !d.group.is_empty() {
            meta["generation"] = json!(1);
        }
        meta["creationTimestamp"] = json!(now);
        if let Some(meta) = meta.as_object_mut() {
            meta.remove("deletionTimestamp");
        }
        let list = finalizers(&object);
        set_finalizers(&mut object, &list);
        self.admit(d, &mut object)?;
        self.stamp(&mut object);
        self.record(&k, ChangeKind::Added, &object, None);
        self.objects.insert(k, object.clone());
        Ok(object)
    }

    /// A user edit of the whole object (like `kubectl edit`): server-owned
    /// metadata and `status` are kept, the generation bumps when anything
    /// outside `metadata` and `status` changed, the resourceVersion always.
    /// `None` when the object does not exist; `Invalid` when the edit adds a
    /// finalizer to a deleting object.
    pub(crate) fn edit(
        &mut self,
        d: &ResourceDescriptor,
        namespace: &str,
        name: &str,
        f: impl FnOnce(&mut Value),
    ) -> Option<Result<Value, Refusal>> {
        let k = key(d, namespace, name);
        let before = self.objects.get(&k)?.clone();
        let mut after = before.clone();
        f(&mut after);
        if !after.is_object() {
            after = json!({});
        }
        if !after.get("metadata").is_some_and(Value::is_object) {
            after["metadata"] = json!({});
        }
        for field in SYSTEM_METADATA {
            let meta = after["metadata"].as_object_mut()?;
            match before["metadata"].get(field) {
                Some(value) => meta.insert(field.to_owned(), value.clone()),
                None => meta.remove(field),
            };
        }
        after["apiVersion"] = before["apiVersion"].clone();
        after["kind"] = before["kind"].clone();
        match before.get("status") {
            Some(status) => after["status"] = status.clone(),
            None => {
                after.as_object_mut()?.remove("status");
            }
        }
        if let Err(refusal) = self.admit(d, &mut after) {
            return Some(Err(refusal));
        }
        // Types without a generation (core Secrets, ConfigMaps) get none.
        let generation = before["metadata"]["generation"].as_u64();
        if let Some(generation) =
            generation.filter(|_| desired_state(&after) != desired_state(&before))
        {
            after["metadata"]["generation"] = json!(generation + 1);
        }
        let list = finalizers(&after);
        Some(self.write_finalizers_of(k, &before, after, &list))
    }

    /// Requests deletion: with finalizers the object only gets a
    /// `deletionTimestamp` (once); without, it is removed. Returns what is
    /// left: `None` when the object is gone or never existed.
    pub(crate) fn delete(
        &mut self,
        d: &ResourceDescriptor,
        namespace: &str,
        name: &str,
        now: &str,
    ) -> Option<Value> {
        let k = key(d, namespace, name);
        let before = self.objects.get(&k)?.clone();
        let mut object = before.clone();
        if finalizers(&object).is_empty() {
            self.stamp(&mut object);
            self.record(&k, ChangeKind::Deleted, &object, Some(before));
            self.objects.remove(&k);
            return None;
        }
        if !is_deleting(&object) {
            object["metadata"]["deletionTimestamp"] = json!(now);
            self.stamp(&mut object);
            self.record(&k, ChangeKind::Modified, &object, Some(before));
            self.objects.insert(k, object.clone());
        }
        Some(object)
    }

    /// Checks a client write's preconditions and returns the stored key.
    fn target(
        &self,
        d: &ResourceDescriptor,
        resource: &Value,
        require_version: bool,
    ) -> Result<Key, Refusal> {
        let name = meta_str(resource, "name").ok_or(ErrorKind::Invalid)?;
        let namespace = match meta_str(resource, "namespace") {
            _ if !d.namespaced => "",
            namespace => namespace.ok_or(ErrorKind::Invalid)?,
        };
        let k = key(d, namespace, name);
        let stored = self.objects.get(&k).ok_or(ErrorKind::NotFound)?;
        if let Some(uid) = resource.pointer("/metadata/uid") {
            if uid.as_str() != meta_str(stored, "uid") {
                return Err(ErrorKind::Conflict);
            }
        }
        match resource.pointer("/metadata/resourceVersion") {
            Some(Value::String(rv)) if Some(rv.as_str()) == meta_str(stored, "resourceVersion") => {
                Ok(k)
            }
            Some(Value::String(_)) => Err(ErrorKind::Conflict),
            Some(_) => Err(ErrorKind::Invalid),
            None if require_version => Err(ErrorKind::Invalid),
            None => Ok(k),
        }
    }

    /// The status subresource: replaces `.status` only.
    pub(crate) fn write_status(
        &mut self,
        d: &ResourceDescriptor,
        resource: &Value,
        status: &Value,
    ) -> Result<Value, Refusal> {
        let k = self.target(d, resource, true)?;
        let before = self.objects.get(&k).cloned().ok_or(ErrorKind::NotFound)?;
        let mut object = before.clone();
        match status {
            Value::Null => {
                if let Some(fields) = object.as_object_mut() {
                    fields.remove("status");
                }
            }
            status => object["status"] = status.clone(),
        }
        self.admit(d, &mut object)?;
        self.stamp(&mut object);
        self.record(&k, ChangeKind::Modified, &object, Some(before));
        self.objects.insert(k, object.clone());
        Ok(object)
    }

    /// A merge patch of `metadata.finalizers` (resourceVersion optional, as
    /// in a real merge patch).
    pub(crate) fn write_finalizers(
        &mut self,
        d: &ResourceDescriptor,
        resource: &Value,
        list: &[String],
    ) -> Result<Value, Refusal> {
        let k = self.target(d, resource, false)?;
        let before = self.objects.get(&k).cloned().ok_or(ErrorKind::NotFound)?;
        let after = before.clone();
        self.write_finalizers_of(k, &before, after, list)
    }

    /// Stores `after` with finalizers `list`, enforcing the server's rules:
    /// no new finalizer on a deleting object, and a deleting object whose
    /// last finalizer goes is removed (the final state is returned, at the
    /// version it had before, as kube-apiserver answers: the deletion's
    /// own version comes only with the watch's DELETED event).
    fn write_finalizers_of(
        &mut self,
        k: Key,
        before: &Value,
        mut after: Value,
        list: &[String],
    ) -> Result<Value, Refusal> {
        if is_deleting(before) {
            let old = finalizers(before);
            if list.iter().any(|f| !old.contains(f)) {
                return Err(ErrorKind::Invalid);
            }
        }
        set_finalizers(&mut after, list);
        if is_deleting(&after) && list.is_empty() {
            let answer = after.clone();
            self.stamp(&mut after);
            self.record(&k, ChangeKind::Deleted, &after, Some(before.clone()));
            self.objects.remove(&k);
            return Ok(answer);
        }
        self.stamp(&mut after);
        self.record(&k, ChangeKind::Modified, &after, Some(before.clone()));
        self.objects.insert(k, after.clone());
        Ok(after)
    }
}
