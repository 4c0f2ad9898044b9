//! What a hook sees of one request: the call with its arguments, and the
//! answer the inner client gave.

use crate::{AccessCheck, ApiRequest, ApiResource, ApiResponse, Lease, ResourceDescriptor};
use crate::{ListPage, PageRequest, WatchRequest};
use serde_json::Value;

/// One request through a [`Layered`](super::Layered) client, with the
/// arguments it was given: one variant per [`Client`](crate::Client) method,
/// plus [`Raw`](Call::Raw) for [`RawApi`](crate::RawApi).
///
/// New variants come with new capabilities, so match with a `_` arm.
/// Debug shows the operation and the type only: arguments may hold
/// anything a resource's spec holds.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub enum Call<'a> {
    /// [`Client::list_resources`](crate::Client::list_resources).
    List {
        /// The type listed.
        descriptor: &'a ResourceDescriptor,
        /// The namespace (`""`: every namespace).
        namespace: &'a str,
    },
    /// [`Client::list_page`](crate::Client::list_page).
    ListPage {
        /// The type listed.
        descriptor: &'a ResourceDescriptor,
        /// The namespace (`""`: every namespace).
        namespace: &'a str,
        /// Limit and continue token.
        page: &'a PageRequest,
    },
    /// [`Client::watch`](crate::Client::watch): opening the stream.
    Watch {
        /// The type watched.
        descriptor: &'a ResourceDescriptor,
        /// The namespace (`""`: every namespace).
        namespace: &'a str,
        /// Where the watch starts.
        request: &'a WatchRequest,
    },
    /// [`Client::get_resource`](crate::Client::get_resource).
    Get {
        /// The type read.
        descriptor: &'a ResourceDescriptor,
        /// The object's namespace.
        namespace: &'a str,
        /// The object's name.
        name: &'a str,
    },
    /// [`Client::update_status`](crate::Client::update_status).
    UpdateStatus {
        /// The object's type.
        descriptor: &'a ResourceDescriptor,
        /// The snapshot the write is guarded by.
        resource: &'a Value,
        /// The status to store.
        status: &'a Value,
    },
    /// [`Client::update_finalizers`](crate::Client::update_finalizers).
    UpdateFinalizers {
        /// The object's type.
        descriptor: &'a ResourceDescriptor,
        /// The snapshot the write is guarded by.
        resource: &'a Value,
        /// The finalizers to store.
        finalizers: &'a [String],
    },
    /// [`Client::server_resources`](crate::Client::server_resources).
    ServerResources {
        /// The API group.
        group: &'a str,
        /// The version.
        version: &'a str,
    },
    /// [`Client::can_i`](crate::Client::can_i).
    CanI {
        /// What is asked.
        check: &'a AccessCheck,
    },
    /// [`Client::create_event`](crate::Client::create_event).
    CreateEvent {
        /// The Event's namespace.
        namespace: &'a str,
        /// The Event.
        event: &'a Value,
    },
    /// [`Client::update_event`](crate::Client::update_event).
    UpdateEvent {
        /// The Event's namespace.
        namespace: &'a str,
        /// The Event.
        event: &'a Value,
    },
    /// [`Client::get_lease`](crate::Client::get_lease).
    GetLease {
        /// The Lease's namespace.
        namespace: &'a str,
        /// The Lease's name.
        name: &'a str,
    },
    /// [`Client::list_leases`](crate::Client::list_leases).
    ListLeases {
        /// The namespace listed.
        namespace: &'a str,
    },
    /// [`Client::create_lease`](crate::Client::create_lease).
    CreateLease {
        /// The Lease to create.
        lease: &'a Lease,
    },
    /// [`Client::update_lease`](crate::Client::update_lease).
    UpdateLease {
        /// The Lease to store.
        lease: &'a Lease,
    },
    /// [`Client::release_lease`](crate::Client::release_lease).
    ReleaseLease {
        /// The Lease to give up.
        lease: &'a Lease,
    },
    /// [`RawApi::send`](crate::RawApi::send).
    Raw {
        /// The request.
        request: &'a ApiRequest,
    },
}

impl Call<'_> {
    /// The operation's class, as metrics label it: `list` (whole lists and
    /// pages), `watch`, `get`, `update_status`, `update_finalizers`,
    /// `discovery`, `access_review`, `create_event`, `update_event`,
    /// `get_lease`, `list_leases`, `create_lease`, `update_lease`,
    /// `release_lease`, `raw`.
    pub fn operation(&self) -> &'static str {
        match self {
            Call::List { .. } | Call::ListPage { .. } => "list",
            Call::Watch { .. } => "watch",
            Call::Get { .. } => "get",
            Call::UpdateStatus { .. } => "update_status",
            Call::UpdateFinalizers { .. } => "update_finalizers",
            Call::ServerResources { .. } => "discovery",
            Call::CanI { .. } => "access_review",
            Call::CreateEvent { .. } => "create_event",
            Call::UpdateEvent { .. } => "update_event",
            Call::GetLease { .. } => "get_lease",
            Call::ListLeases { .. } => "list_leases",
            Call::CreateLease { .. } => "create_lease",
            Call::UpdateLease { .. } => "update_lease",
            Call::ReleaseLease { .. } => "release_lease",
            Call::Raw { .. } => "raw",
        }
    }

    /// The resource type a call reads or writes, when it is one of the
    /// managed types (not Events, Leases, discovery or raw requests).
    pub fn descriptor(&self) -> Option<&ResourceDescriptor> {
        match *self {
            Call::List { descriptor, .. }
            | Call::ListPage { descriptor, .. }
            | Call::Watch { descriptor, .. }
            | Call::Get { descriptor, .. }
            | Call::UpdateStatus { descriptor, .. }
            | Call::UpdateFinalizers { descriptor, .. } => Some(descriptor),
            _ => None,
        }
    }
}

/// What the inner client answered a [`Call`] with, when it succeeded.
///
/// The variant follows the call: `Objects` for `List`, `Page` for
/// `ListPage`, `Stream` for `Watch`, `Object` for `Get`, `Written` for the
/// resource and Event writes, `Resources` for discovery, `Allowed` for an
/// access check, `Lease` for the Lease calls but `Leases` for
/// `ListLeases`, `Raw` for a raw request.
/// Debug shows the variant only.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub enum Answer<'a> {
    /// The objects listed.
    Objects(&'a [Value]),
    /// One page.
    Page(&'a ListPage),
    /// The stream is open (its events are not seen by hooks).
    Stream,
    /// The object read, if it exists.
    Object(Option<&'a Value>),
    /// The object as stored after a write.
    Written(&'a Value),
    /// The resources a group/version serves, if it is served.
    Resources(Option<&'a [ApiResource]>),
    /// The authorizer's answer.
    Allowed(bool),
    /// The Lease read or stored.
    Lease(Option<&'a Lease>),
    /// The Leases listed.
    Leases(&'a [Lease]),
    /// A raw request's answer.
    Raw(&'a ApiResponse),
}

impl std::fmt::Debug for Call<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("operation", &self.operation())
            .field("descriptor", &self.descriptor())
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Answer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let variant = match self {
            Answer::Objects(_) => "Objects",
            Answer::Page(_) => "Page",
            Answer::Stream => "Stream",
            Answer::Object(_) => "Object",
            Answer::Written(_) => "Written",
            Answer::Resources(_) => "Resources",
            Answer::Allowed(_) => "Allowed",
            Answer::Lease(_) => "Lease",
            Answer::Leases(_) => "Leases",
            Answer::Raw(_) => "Raw",
        };
        f.write_str(variant)
    }
}
