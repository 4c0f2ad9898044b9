//! Fault injection: which calls fail, and how.

use blue_kubernetes_client::{Error, ErrorKind};
use std::collections::{HashMap, VecDeque};

/// One [`Client`](blue_kubernetes_client::Client) operation: the four on
/// resources every transport has, the two a list-and-watch cache is fed by,
/// and the four on Leases; or one kind of [`RawApi`](blue_kubernetes_client::RawApi)
/// request, the six `Raw*` ones (a package's own objects: Secrets, ConfigMaps...).
///
/// ```
/// use blue_testkit::Operation;
/// assert_eq!(Operation::UpdateStatus.kubectl_verb(), "replace");
/// assert_eq!(Operation::ALL.len(), 4);
/// assert_eq!(Operation::WATCHING.len(), 2);
/// assert_eq!(Operation::LEASES.len(), 4);
/// assert_eq!(Operation::RAW.len(), 6);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Operation {
    /// `list_resources` (`kubectl get <type> -n NS -o json`).
    List,
    /// `get_resource` (`kubectl get <type> NAME --ignore-not-found -o json`).
    Get,
    /// `update_status` (`kubectl replace --raw .../status -f FILE`).
    UpdateStatus,
    /// `update_finalizers` (`kubectl patch <type> NAME --type=merge -p ...`).
    UpdateFinalizers,
    /// `list_page`: one page of a paginated list (`GET ...?limit=N&continue=T`).
    ListPage,
    /// `watch`: opening a watch stream (`GET ...?watch=1`); a fault refuses
    /// the watch, so the caller has to list instead.
    Watch,
    /// `get_lease` (`kubectl get --raw .../leases/NAME`).
    GetLease,
    /// `create_lease` (`kubectl create --raw .../leases -f FILE`).
    CreateLease,
    /// `list_leases` (`kubectl get --raw .../namespaces/NS/leases`).
    ListLeases,
    /// `update_lease` and `release_lease` (`kubectl replace --raw .../leases/NAME -f FILE`).
    UpdateLease,
    /// A raw `GET` of one object.
    RawGet,
    /// A raw `GET` of a collection (a list).
    RawList,
    /// A raw `POST` (create).
    RawCreate,
    /// A raw `PUT` (replace).
    RawReplace,
    /// A raw `PATCH`.
    RawPatch,
    /// A raw `DELETE`.
    RawDelete,
}

impl Operation {
    /// Every operation on resources that every transport has, in
    /// declaration order.
    ///
    /// ```
    /// assert_eq!(blue_testkit::Operation::ALL[0], blue_testkit::Operation::List);
    /// ```
    pub const ALL: [Operation; 4] = [
        Operation::List,
        Operation::Get,
        Operation::UpdateStatus,
        Operation::UpdateFinalizers,
    ];

    /// The operations of a list-and-watch cache: pages and watches.
    ///
    /// ```
    /// assert_eq!(blue_testkit::Operation::WATCHING[1], blue_testkit::Operation::Watch);
    /// ```
    pub const WATCHING: [Operation; 2] = [Operation::ListPage, Operation::Watch];

    /// Every Lease operation (leader election), in declaration order.
    ///
    /// ```
    /// assert_eq!(blue_testkit::Operation::LEASES[0], blue_testkit::Operation::GetLease);
    /// ```
    pub const LEASES: [Operation; 4] = [
        Operation::GetLease,
        Operation::CreateLease,
        Operation::ListLeases,
        Operation::UpdateLease,
    ];

    /// Every raw request operation, in declaration order.
    ///
    /// ```
    /// assert_eq!(blue_testkit::Operation::RAW[2], blue_testkit::Operation::RawCreate);
    /// ```
    pub const RAW: [Operation; 6] = [
        Operation::RawGet,
        Operation::RawList,
        Operation::RawCreate,
        Operation::RawReplace,
        Operation::RawPatch,
        Operation::RawDelete,
    ];

    /// The HTTP method of a raw operation; `None` for the others.
    ///
    /// ```
    /// use blue_testkit::Operation;
    /// assert_eq!(Operation::RawDelete.http_method(), Some("DELETE"));
    /// assert_eq!(Operation::Get.http_method(), None);
    /// ```
    pub fn http_method(self) -> Option<&'static str> {
        Some(match self {
            Operation::RawGet | Operation::RawList => "GET",
            Operation::RawCreate => "POST",
            Operation::RawReplace => "PUT",
            Operation::RawPatch => "PATCH",
            Operation::RawDelete => "DELETE",
            _ => return None,
        })
    }

    /// The kubectl verb of this operation, which is the `operation` its
    /// errors carry (`get`, `replace` or `patch`).
    ///
    /// ```
    /// use blue_testkit::Operation;
    /// assert_eq!(Operation::List.kubectl_verb(), "get");
    /// assert_eq!(Operation::UpdateFinalizers.kubectl_verb(), "patch");
    /// ```
    pub fn kubectl_verb(self) -> &'static str {
        match self {
            Operation::List
            | Operation::Get
            | Operation::GetLease
            | Operation::ListLeases
            | Operation::ListPage
            | Operation::Watch
            | Operation::RawGet
            | Operation::RawList => "get",
            Operation::UpdateStatus | Operation::UpdateLease | Operation::RawReplace => "replace",
            Operation::UpdateFinalizers | Operation::RawPatch => "patch",
            Operation::CreateLease | Operation::RawCreate => "create",
            Operation::RawDelete => "delete",
        }
    }
}

/// How an injected failure presents itself.
///
/// ```
/// use blue_kubernetes_client::ErrorKind;
/// use blue_testkit::Fault;
/// assert_eq!(Fault::Conflict.kind(), ErrorKind::Conflict);
/// assert_eq!(Fault::Kind(ErrorKind::Forbidden).kind(), ErrorKind::Forbidden);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Fault {
    /// A lost optimistic-concurrency race (HTTP 409).
    Conflict,
    /// The API server cannot be reached.
    Unavailable,
    /// Any other classified failure.
    Kind(ErrorKind),
}

impl Fault {
    /// The [`ErrorKind`] a call failing with this fault reports.
    ///
    /// ```
    /// use blue_kubernetes_client::ErrorKind;
    /// assert_eq!(blue_testkit::Fault::Unavailable.kind(), ErrorKind::Unavailable);
    /// ```
    pub fn kind(self) -> ErrorKind {
        match self {
            Fault::Conflict => ErrorKind::Conflict,
            Fault::Unavailable => ErrorKind::Unavailable,
            Fault::Kind(kind) => kind,
        }
    }

    /// The error a call of `operation` failing with this fault returns: a
    /// kubectl failure for a [`Client`](blue_kubernetes_client::Client)
    /// operation, and for a raw one the [`Error::Http`] the proxy
    /// transport returns (`Conflict` is 409, `Unavailable` 503, `NotFound`
    /// 404, `Forbidden` 403, `Invalid` 422, `Other` 500...).
    ///
    /// ```
    /// use blue_testkit::{Fault, Operation};
    /// let e = Fault::Conflict.error(Operation::UpdateFinalizers);
    /// assert!(e.is_conflict());
    /// assert_eq!(e.to_string(), "kubectl patch failed with exit code 1 (conflict)");
    /// let raw = Fault::Unavailable.error(Operation::RawCreate);
    /// assert_eq!(raw.to_string(), "POST request failed with http status 503 (unavailable)");
    /// ```
    pub fn error(self, operation: Operation) -> Error {
        match operation.http_method() {
            Some(method) => {
                let http = super::raw::Refused::of_kind(self.kind());
                http.error_named(method)
            }
            None => Error::kubectl(operation.kubectl_verb(), self.kind()),
        }
    }
}

/// Queued one-shot faults and standing faults, per operation.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    queued: HashMap<Operation, VecDeque<Fault>>,
    always: HashMap<Operation, Fault>,
}

impl Faults {
    pub(crate) fn inject(&mut self, operation: Operation, fault: Fault) {
        self.queued.entry(operation).or_default().push_back(fault);
    }

    pub(crate) fn set_always(&mut self, operation: Operation, fault: Option<Fault>) {
        match fault {
            Some(fault) => self.always.insert(operation, fault),
            None => self.always.remove(&operation),
        };
    }

    pub(crate) fn clear(&mut self) {
        self.queued.clear();
        self.always.clear();
    }

    /// The fault the next call of `operation` fails with, consuming a queued
    /// one first.
    pub(crate) fn take(&mut self, operation: Operation) -> Option<Fault> {
        self.queued
            .get_mut(&operation)
            .and_then(VecDeque::pop_front)
            .or_else(|| self.always.get(&operation).copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queued_faults_are_consumed_in_order_before_standing_ones() {
        let mut faults = Faults::default();
        faults.set_always(Operation::Get, Some(Fault::Unavailable));
        faults.inject(Operation::Get, Fault::Conflict);
        assert_eq!(faults.take(Operation::Get), Some(Fault::Conflict));
        assert_eq!(faults.take(Operation::Get), Some(Fault::Unavailable));
        assert_eq!(faults.take(Operation::List), None);
        faults.set_always(Operation::Get, None);
        assert_eq!(faults.take(Operation::Get), None);
    }
}
