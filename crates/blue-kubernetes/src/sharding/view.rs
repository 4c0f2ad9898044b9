//! What one sharding round reads: every Lease of the namespace in one
//! list ([`Client::list_leases`]), or, from a client without that
//! capability (or without RBAC to list Leases), the Leases it needs one
//! by one.
//!
//! A list is one consistent snapshot. Read one by one, the shard Leases
//! come first and the membership slots after: a slot renewal that a shard
//! write of its holder followed is then always seen, so a holder is never
//! judged gone on a slot older than the shard record it is judged by.

use blue_kubernetes_client::{Client, Error, ErrorKind, Lease};
use std::collections::HashMap;

/// The Leases read in one round, by name.
#[derive(Debug, Default)]
pub(crate) struct View {
    /// `None`: read and absent.
    read: HashMap<String, Option<Lease>>,
    /// A list: every name was read (absent if not in it).
    complete: bool,
}

impl View {
    /// `None` when `name` was not read; `Some(None)` when it does not exist.
    pub(crate) fn get(&self, name: &str) -> Option<Option<&Lease>> {
        match self.read.get(name) {
            Some(lease) => Some(lease.as_ref()),
            None => self.complete.then_some(None),
        }
    }
}

/// Reads views; remembers whether the client can list.
#[derive(Debug)]
pub(crate) struct Reader {
    namespace: String,
    listing: bool,
}

impl Reader {
    pub(crate) fn new(namespace: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
            listing: true,
        }
    }

    /// One round's view: a list of the namespace's Leases, or (without
    /// [`Client::list_leases`]) the Leases `shards` and then `slots` name.
    pub(crate) async fn read(
        &mut self,
        client: &dyn Client,
        shards: &[String],
        slots: &[String],
    ) -> Result<View, ErrorKind> {
        if self.listing {
            match client.list_leases(&self.namespace).await {
                Ok(leases) => {
                    let read = leases.into_iter().map(|l| (l.name.clone(), Some(l)));
                    return Ok(View {
                        read: read.collect(),
                        complete: true,
                    });
                }
                Err(Error::Unsupported { .. }) => {
                    tracing::info!(
                        "sharding: the client cannot list Leases; reading them one by one"
                    );
                    self.listing = false;
                }
                // RBAC made for leader election (get, create, update): work
                // on, at the cost of a read per Lease (preflight names it).
                Err(e) if e.kind() == ErrorKind::Forbidden => {
                    tracing::warn!(
                        "sharding: listing Leases is forbidden (RBAC lacks list on leases); \
                         reading them one by one, at a higher request cost"
                    );
                    self.listing = false;
                }
                Err(e) => return Err(e.kind()),
            }
        }
        let mut view = View::default();
        for name in shards.iter().chain(slots) {
            let lease = client
                .get_lease(&self.namespace, name)
                .await
                .map_err(|e| e.kind())?;
            view.read.insert(name.clone(), lease);
        }
        Ok(view)
    }
}
