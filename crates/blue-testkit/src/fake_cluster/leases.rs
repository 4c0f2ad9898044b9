//! Leases (`coordination.k8s.io/v1`) in the fake cluster: the API server's
//! create and guarded-update rules, sharing the cluster's resourceVersion
//! counter.

use super::store::Store;
use blue_kubernetes_client::{ErrorKind, Lease};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub(crate) struct Leases {
    by_name: BTreeMap<(String, String), Lease>,
}

/// A uid unique in the process, as real ones are unique everywhere.
fn new_uid() -> String {
    static UIDS: AtomicU64 = AtomicU64::new(0);
    let n = UIDS.fetch_add(1, Ordering::Relaxed) + 1;
    format!("00000000-0000-4000-9000-{n:012x}")
}

fn key(lease: &Lease) -> (String, String) {
    (lease.namespace.clone(), lease.name.clone())
}

impl Leases {
    pub(crate) fn get(&self, namespace: &str, name: &str) -> Option<Lease> {
        self.by_name
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
    }

    /// Every Lease in `namespace`, by name.
    pub(crate) fn list(&self, namespace: &str) -> Vec<Lease> {
        (self.by_name.iter())
            .filter(|((ns, _), _)| ns == namespace)
            .map(|(_, lease)| lease.clone())
            .collect()
    }

    /// Stores `lease` unconditionally with a fresh resourceVersion. The
    /// uid is the stored Lease's, or a new one for a new Lease, as the API
    /// server assigns it.
    pub(crate) fn put(&mut self, store: &mut Store, lease: &Lease) -> Lease {
        let mut stored = lease.clone();
        stored.resource_version = Some(store.next_revision().to_string());
        stored.uid = match self.by_name.get(&key(lease)) {
            Some(current) => current.uid.clone(),
            None => Some(new_uid()),
        };
        self.by_name.insert(key(&stored), stored.clone());
        stored
    }

    /// A POST: `AlreadyExists` (which the transport classifies as
    /// [`ErrorKind::Other`]) when the name is taken.
    pub(crate) fn create(&mut self, store: &mut Store, lease: &Lease) -> Result<Lease, ErrorKind> {
        if lease.name.is_empty() || lease.namespace.is_empty() {
            return Err(ErrorKind::Invalid);
        }
        if self.by_name.contains_key(&key(lease)) {
            return Err(ErrorKind::Other);
        }
        Ok(self.put(store, lease))
    }

    /// Removes `namespace/name`, returning it as it was.
    pub(crate) fn delete(&mut self, namespace: &str, name: &str) -> Option<Lease> {
        self.by_name
            .remove(&(namespace.to_owned(), name.to_owned()))
    }

    /// A PUT: the resourceVersion must be present and current, and a uid
    /// sent must be the stored one.
    pub(crate) fn update(&mut self, store: &mut Store, lease: &Lease) -> Result<Lease, ErrorKind> {
        let current = self.by_name.get(&key(lease)).ok_or(ErrorKind::NotFound)?;
        match &lease.resource_version {
            None => Err(ErrorKind::Invalid),
            Some(rv) if Some(rv) != current.resource_version.as_ref() => Err(ErrorKind::Conflict),
            Some(_) if lease.uid.is_some() && lease.uid != current.uid => Err(ErrorKind::Conflict),
            Some(_) => Ok(self.put(store, lease)),
        }
    }
}
