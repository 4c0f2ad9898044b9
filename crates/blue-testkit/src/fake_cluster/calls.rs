//! Call accounting: what the code under test asked the cluster for.

use super::Operation;

/// One [`Client`](blue_kubernetes_client::Client) call made on a
/// [`FakeCluster`](crate::FakeCluster), faulted or not.
///
/// ```
/// use blue_testkit::{RecordedCall, Operation};
/// let call = RecordedCall::new(Operation::Get, "widgets.example.com", "default", Some("a"));
/// assert_eq!(call.name.as_deref(), Some("a"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RecordedCall {
    /// Which operation.
    pub operation: Operation,
    /// The resource type as `plural.group`, e.g. `widgets.example.com`.
    pub resource: String,
    /// The namespace asked for (for writes: the resource's namespace).
    pub namespace: String,
    /// The object's name; `None` for a list.
    pub name: Option<String>,
}

impl RecordedCall {
    /// Builds a call record; handy for comparing against
    /// [`FakeCluster::call_log`](crate::FakeCluster::call_log).
    ///
    /// ```
    /// use blue_testkit::{RecordedCall, Operation};
    /// let list = RecordedCall::new(Operation::List, "widgets.example.com", "default", None);
    /// assert!(list.name.is_none());
    /// ```
    pub fn new(
        operation: Operation,
        resource: impl Into<String>,
        namespace: impl Into<String>,
        name: Option<&str>,
    ) -> Self {
        Self {
            operation,
            resource: resource.into(),
            namespace: namespace.into(),
            name: name.map(str::to_owned),
        }
    }
}

/// How many calls of each [`Client`](blue_kubernetes_client::Client)
/// operation were made, faulted ones included. Raw requests (a package's
/// own, through [`RawApi`](blue_kubernetes_client::RawApi)) are not
/// counted here; they are in [`FakeCluster::call_log`](crate::FakeCluster::call_log).
///
/// ```
/// use blue_testkit::CallCounts;
/// let counts = CallCounts { list: 1, ..CallCounts::default() };
/// assert_eq!(counts.total(), 1);
/// assert_eq!(counts.writes(), 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CallCounts {
    /// `list_resources` calls.
    pub list: usize,
    /// `get_resource` calls.
    pub get: usize,
    /// `update_status` calls.
    pub update_status: usize,
    /// `update_finalizers` calls.
    pub update_finalizers: usize,
    /// Lease calls (`get_lease`, `create_lease`, `update_lease`).
    pub leases: usize,
    /// `list_page` calls: pages asked for.
    pub list_page: usize,
    /// `watch` calls: watches asked for (refused ones included).
    pub watch: usize,
}

impl CallCounts {
    /// Every call, Lease calls included.
    ///
    /// ```
    /// let c = blue_testkit::CallCounts {
    ///     list: 1, get: 2, update_status: 3, update_finalizers: 4, leases: 5, list_page: 6, watch: 7,
    /// };
    /// assert_eq!(c.total(), 28);
    /// ```
    pub fn total(&self) -> usize {
        self.list
            + self.get
            + self.update_status
            + self.update_finalizers
            + self.leases
            + self.list_page
            + self.watch
    }

    /// Resource write calls (`update_status` and `update_finalizers`).
    ///
    /// ```
    /// let c = blue_testkit::CallCounts { update_status: 3, update_finalizers: 4, ..Default::default() };
    /// assert_eq!(c.writes(), 7);
    /// ```
    pub fn writes(&self) -> usize {
        self.update_status + self.update_finalizers
    }

    /// Counts of the calls in `log`.
    ///
    /// ```
    /// use blue_testkit::{RecordedCall, CallCounts, Operation};
    /// let log = [RecordedCall::new(Operation::List, "widgets.example.com", "default", None)];
    /// assert_eq!(CallCounts::of(&log).list, 1);
    /// ```
    pub fn of(log: &[RecordedCall]) -> Self {
        let mut counts = Self::default();
        for call in log {
            match call.operation {
                Operation::List => counts.list += 1,
                Operation::Get => counts.get += 1,
                Operation::UpdateStatus => counts.update_status += 1,
                Operation::UpdateFinalizers => counts.update_finalizers += 1,
                Operation::ListPage => counts.list_page += 1,
                Operation::Watch => counts.watch += 1,
                Operation::GetLease
                | Operation::ListLeases
                | Operation::CreateLease
                | Operation::UpdateLease => counts.leases += 1,
                // A package's own requests: in the call log, not in the
                // controller's cost counts.
                Operation::RawGet
                | Operation::RawList
                | Operation::RawCreate
                | Operation::RawReplace
                | Operation::RawPatch
                | Operation::RawDelete => {}
            }
        }
        counts
    }
}
