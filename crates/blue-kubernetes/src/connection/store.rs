//! What the controller knows each resource's connection Secret must hold,
//! so a deleted or altered Secret comes back with the same values (a
//! generated password included) while the process lives.

use super::secret::Data;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// Connection values by resource uid.
#[derive(Debug, Default)]
pub(crate) struct Store {
    known: Mutex<HashMap<String, Data>>,
}

impl Store {
    pub(crate) fn get(&self, uid: &str) -> Option<Data> {
        self.lock().get(uid).cloned()
    }

    pub(crate) fn put(&self, uid: &str, data: Data) {
        self.lock().insert(uid.to_string(), data);
    }

    /// Forgets a resource that is gone.
    pub(crate) fn forget(&self, uid: &str) {
        self.lock().remove(uid);
    }

    #[cfg(feature = "testing")]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Data>> {
        self.known.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
