//! Paginated lists: `limit` and continue tokens that hold the list's
//! revision, so every page is served as of that revision (like the API
//! server reading etcd at the first page's revision), until the history
//! behind it is compacted.

use super::history::Key;
use super::store::{selects, Store};
use blue_kubernetes_client::{ErrorKind, LabelSelector, ListPage, PageRequest, ResourceDescriptor};
use serde_json::Value;
use std::collections::BTreeMap;

/// `REVISION/NAMESPACE/NAME`: the list's revision and the last object
/// served (names and namespaces hold no `/`). Opaque to clients.
fn encode(revision: u64, last: &Key) -> String {
    format!("{revision}/{}/{}", last.2, last.3)
}

fn decode(token: &str) -> Option<(u64, (String, String))> {
    let mut parts = token.splitn(3, '/');
    let revision = parts.next()?.parse().ok()?;
    let namespace = parts.next()?.to_owned();
    let name = parts.next()?.to_owned();
    Some((revision, (namespace, name)))
}

impl Store {
    /// One page of the objects of `d` in `namespace` (`""`: all) that
    /// `selector` matches: the limit counts only those, as the API server
    /// fills a page with matching objects. `Invalid` for a malformed token,
    /// `Gone` for one older than the history.
    pub(crate) fn page(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
        page: &PageRequest,
        selector: &LabelSelector,
    ) -> Result<ListPage, ErrorKind> {
        let (revision, after) = match &page.continue_token {
            None => (self.revision(), None),
            Some(token) => {
                let (revision, after) = decode(token).ok_or(ErrorKind::Invalid)?;
                if !self.history.covers(revision) {
                    return Err(ErrorKind::Gone);
                }
                (revision, Some(after))
            }
        };
        let view = self.view_at(d, namespace, revision);
        let mut rest = view.into_iter().filter(|(k, object)| {
            let later = match &after {
                Some((ns, name)) => (&k.2, &k.3) > (ns, name),
                None => true,
            };
            later && selector.matches(object)
        });
        let limit = match page.limit {
            0 => usize::MAX,
            n => n as usize,
        };
        let mut items = Vec::new();
        let mut last = None;
        for (k, object) in rest.by_ref().take(limit) {
            items.push(object.clone());
            last = Some(k);
        }
        let more = rest.next().is_some();
        Ok(ListPage {
            items,
            resource_version: Some(revision.to_string()),
            continue_token: last.filter(|_| more).map(|k| encode(revision, k)),
        })
    }

    /// The objects of `d` in `namespace` as they were at `revision`: the
    /// current ones, with every later change undone (newest first, so the
    /// earliest change's `previous` wins).
    fn view_at<'a>(
        &'a self,
        d: &'a ResourceDescriptor,
        namespace: &'a str,
        revision: u64,
    ) -> BTreeMap<&'a Key, &'a Value> {
        let mut view: BTreeMap<&Key, Option<&Value>> = self
            .entries(d, namespace)
            .map(|(k, object)| (k, Some(object)))
            .collect();
        for change in self.history.after(revision).rev() {
            if selects(d, namespace, &change.key) {
                view.insert(&change.key, change.previous.as_ref());
            }
        }
        view.into_iter()
            .filter_map(|(k, object)| Some((k, object?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_reject_garbage() {
        let k: Key = ("g".into(), "p".into(), "ns".into(), "a".into());
        assert_eq!(decode(&encode(7, &k)), Some((7, ("ns".into(), "a".into()))));
        assert_eq!(decode("x/ns/a"), None);
        assert_eq!(decode("7"), None);
    }
}
