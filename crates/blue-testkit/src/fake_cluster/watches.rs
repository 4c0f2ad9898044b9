//! Watch streams: each open watch is a slot with a cursor into the store's
//! history. A stream replays the changes after its cursor, then waits on
//! the history's bell for more; the faults of [`WatchFaults`] and each
//! slot's state decide what it actually delivers.

use super::history::{Change, ChangeKind};
use super::store::{selects, Store};
use super::{FakeCluster, Fault, Operation};
use blue_kubernetes_client::{
    Error, ErrorKind, LabelSelector, ResourceDescriptor, WatchEvent, WatchStream,
};
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use tokio::sync::watch;
use tokio::time::Instant;

/// Counts of what the watches of a [`FakeCluster`] did.
///
/// ```
/// let stats = blue_testkit::FakeCluster::new().watch_stats();
/// assert_eq!(stats, blue_testkit::WatchStats::default());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WatchStats {
    /// Watches opened (refused ones not included).
    pub opened: usize,
    /// Watch streams open now: neither ended nor dropped by the client.
    pub open: usize,
    /// `ADDED`/`MODIFIED`/`DELETED` events delivered, duplicates included.
    pub events: usize,
    /// `BOOKMARK` events delivered.
    pub bookmarks: usize,
    /// Events swallowed by [`FakeCluster::drop_watch_events`].
    pub dropped: usize,
    /// Streams ended with a `410 Gone` error item.
    pub gone: usize,
}

/// Faults applying to every stream, consumed in delivery order.
#[derive(Debug, Default)]
pub(crate) struct WatchFaults {
    pub(crate) drop: usize,
    pub(crate) duplicate: usize,
    pub(crate) hold: bool,
    pub(crate) timeouts: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlotState {
    Open,
    /// Open, delivering nothing more.
    Stalled,
    /// Ends cleanly at the next read.
    Closing,
    /// Ends with `Gone` at the next read.
    Expiring,
}

#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) descriptor: ResourceDescriptor,
    namespace: String,
    /// Only changes of objects this matches are delivered.
    selector: LabelSelector,
    /// Every change up to this revision was delivered or skipped.
    cursor: u64,
    bookmarks: bool,
    /// A bookmark is sent when the stream next catches up.
    pub(crate) bookmark_due: bool,
    /// Delivered before anything else: duplicates, initial `ADDED`s.
    pending: VecDeque<WatchEvent>,
    pub(crate) state: SlotState,
}

#[derive(Debug)]
pub(crate) struct Watches {
    pub(crate) slots: BTreeMap<u64, Slot>,
    next_id: u64,
    pub(crate) faults: WatchFaults,
    /// A channel, so a test can wait for a count to be reached.
    pub(crate) stats: watch::Sender<WatchStats>,
}

impl Default for Watches {
    fn default() -> Self {
        Self {
            slots: BTreeMap::new(),
            next_id: 0,
            faults: WatchFaults::default(),
            stats: watch::channel(WatchStats::default()).0,
        }
    }
}

/// What a stream does next.
enum Step {
    Deliver(WatchEvent),
    Fail(Error),
    End,
    Wait,
}

fn gone() -> Error {
    Fault::Kind(ErrorKind::Gone).error(Operation::Watch)
}

/// What a watch through `selector` sees of `change`, as the API server's
/// watch cache decides it: nothing when the object matched neither before
/// nor after; `DELETED` when it stops matching (its last matching state at
/// the change's resourceVersion) and `ADDED` when it starts.
fn event(change: &Change, selector: &LabelSelector) -> Option<WatchEvent> {
    let object = change.object.clone();
    let was = change
        .previous
        .as_ref()
        .is_some_and(|previous| selector.matches(previous));
    let is = selector.matches(&change.object);
    match change.kind {
        ChangeKind::Added => is.then_some(WatchEvent::Added(object)),
        ChangeKind::Deleted => (was || is).then_some(WatchEvent::Deleted(object)),
        ChangeKind::Modified => match (was, is) {
            (true, true) => Some(WatchEvent::Modified(object)),
            (false, true) => Some(WatchEvent::Added(object)),
            (true, false) => Some(WatchEvent::Deleted(left_behind(change))),
            (false, false) => None,
        },
    }
}

/// The state before `change`, carrying the change's resourceVersion.
fn left_behind(change: &Change) -> Value {
    let mut last = change.previous.clone().unwrap_or_default();
    last["metadata"]["resourceVersion"] = Value::from(change.revision.to_string());
    last
}

impl Watches {
    /// Registers a watch of `d` in `namespace` from `resource_version`
    /// (`""` or `"0"`: the current objects as `ADDED`, then what follows),
    /// of the objects `selector` matches.
    fn open(
        &mut self,
        store: &Store,
        d: &ResourceDescriptor,
        namespace: &str,
        resource_version: &str,
        bookmarks: bool,
        selector: LabelSelector,
    ) -> Result<u64, ErrorKind> {
        let (cursor, pending) = match resource_version {
            "" | "0" => {
                let current = store.list(d, namespace).into_iter();
                let current = current.filter(|object| selector.matches(object));
                (store.revision(), current.map(WatchEvent::Added).collect())
            }
            rv => (rv.parse().map_err(|_| ErrorKind::Invalid)?, VecDeque::new()),
        };
        let state = match store.history.covers(cursor) {
            true => SlotState::Open,
            // The API server answers such a watch with a 410 ERROR event.
            false => SlotState::Expiring,
        };
        self.next_id += 1;
        self.slots.insert(
            self.next_id,
            Slot {
                descriptor: d.clone(),
                namespace: namespace.to_owned(),
                selector,
                cursor,
                bookmarks,
                bookmark_due: bookmarks,
                pending,
                state,
            },
        );
        self.stats.send_modify(|s| {
            s.opened += 1;
            s.open += 1;
        });
        Ok(self.next_id)
    }

    fn close(&mut self, id: u64) {
        if self.slots.remove(&id).is_some() {
            self.stats.send_modify(|s| s.open -= 1);
        }
    }

    fn step(&mut self, id: u64, store: &Store) -> Step {
        let Some(slot) = self.slots.get_mut(&id) else {
            return Step::End;
        };
        match slot.state {
            SlotState::Closing => return Step::End,
            SlotState::Expiring => {
                self.stats.send_modify(|s| s.gone += 1);
                return Step::Fail(gone());
            }
            SlotState::Stalled => return Step::Wait,
            SlotState::Open if self.faults.hold => return Step::Wait,
            SlotState::Open => {}
        }
        if let Some(event) = slot.pending.pop_front() {
            self.stats.send_modify(|s| s.events += 1);
            return Step::Deliver(event);
        }
        loop {
            if !store.history.covers(slot.cursor) {
                self.stats.send_modify(|s| s.gone += 1);
                return Step::Fail(gone());
            }
            let next = store
                .history
                .after(slot.cursor)
                .find(|c| selects(&slot.descriptor, &slot.namespace, &c.key));
            let Some(change) = next else {
                break;
            };
            slot.cursor = change.revision;
            let Some(event) = event(change, &slot.selector) else {
                continue;
            };
            if self.faults.drop > 0 {
                self.faults.drop -= 1;
                self.stats.send_modify(|s| s.dropped += 1);
                continue;
            }
            if self.faults.duplicate > 0 {
                self.faults.duplicate -= 1;
                slot.pending.push_back(event.clone());
            }
            self.stats.send_modify(|s| s.events += 1);
            return Step::Deliver(event);
        }
        // Caught up: nothing of this type changed after the head.
        slot.cursor = slot.cursor.max(store.revision());
        if slot.bookmarks && slot.bookmark_due {
            slot.bookmark_due = false;
            self.stats.send_modify(|s| s.bookmarks += 1);
            return Step::Deliver(WatchEvent::Bookmark {
                resource_version: slot.cursor.to_string(),
            });
        }
        Step::Wait
    }
}

/// A stream's handle on its slot; dropping it (the client dropping the
/// stream, or the stream ending) closes the slot.
struct Reader {
    cluster: FakeCluster,
    id: u64,
    bell: watch::Receiver<u64>,
    deadline: Option<Instant>,
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.cluster.lock().watches.close(self.id);
    }
}

impl Reader {
    fn step(&mut self) -> Step {
        self.bell.borrow_and_update();
        let mut state = self.cluster.lock();
        let super::State { store, watches, .. } = &mut *state;
        watches.step(self.id, store)
    }

    /// The next item, or `None` when the stream ends.
    async fn next(&mut self) -> Option<Result<WatchEvent, Error>> {
        loop {
            match self.step() {
                Step::Deliver(event) => return Some(Ok(event)),
                Step::Fail(error) => return Some(Err(error)),
                Step::End => return None,
                Step::Wait => {}
            }
            let rung = match self.deadline {
                Some(deadline) => tokio::time::timeout_at(deadline, self.bell.changed()).await,
                None => Ok(self.bell.changed().await),
            };
            // Timed out; the bell's sender lives as long as the cluster.
            if !matches!(rung, Ok(Ok(()))) {
                return None;
            }
        }
    }
}

impl FakeCluster {
    /// Opens a watch slot and its stream (the call is already counted and
    /// faulted, its selector parsed, by the caller).
    pub(super) fn open_watch(
        &self,
        d: &ResourceDescriptor,
        namespace: &str,
        request: &blue_kubernetes_client::WatchRequest,
        selector: LabelSelector,
    ) -> Result<WatchStream, ErrorKind> {
        let (id, bell, timeouts) = {
            let mut state = self.lock();
            let super::State { store, watches, .. } = &mut *state;
            let id = watches.open(
                store,
                d,
                namespace,
                &request.resource_version,
                request.bookmarks,
                selector,
            )?;
            (id, store.history.subscribe(), watches.faults.timeouts)
        };
        let seconds = u64::from(request.timeout_seconds);
        let reader = Reader {
            cluster: self.clone(),
            id,
            bell,
            deadline: (timeouts && seconds > 0)
                .then(|| Instant::now() + std::time::Duration::from_secs(seconds)),
        };
        let stream = futures::stream::unfold(Some(reader), |reader| async move {
            let mut reader = reader?;
            match reader.next().await? {
                Ok(event) => Some((Ok(event), Some(reader))),
                // An error is the last item.
                Err(error) => Some((Err(error), None)),
            }
        });
        Ok(Box::pin(stream))
    }
}
