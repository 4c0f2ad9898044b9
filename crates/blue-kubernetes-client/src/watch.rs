//! Paginated lists and watch streams: what a cache of one resource type is
//! fed from.
//!
//! A namespace of `""` means every namespace (for a namespaced type) or the
//! type's only scope (for a cluster-scoped one), as in the Kubernetes API.

use crate::Error;
use futures::stream::BoxStream;
use serde_json::Value;

/// The page size a list asks for unless told otherwise (the API server's
/// and kubectl's default chunk size).
pub const DEFAULT_PAGE_LIMIT: u32 = 500;

/// Which page of a list to read.
///
/// ```
/// use blue_kubernetes_client::PageRequest;
/// let first = PageRequest::first(500).with_label_selector("app=web");
/// assert_eq!(first.continue_token, None);
/// assert_eq!(first.label_selector.as_deref(), Some("app=web"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageRequest {
    /// At most this many items (`limit`); 0 asks for all at once.
    pub limit: u32,
    /// The previous page's continue token; `None` for the first page.
    pub continue_token: Option<String>,
    /// Only objects whose labels match this selector (`labelSelector`,
    /// e.g. `app=web,tier!=cache`; see [`LabelSelector`](crate::LabelSelector));
    /// `None` lists every object. Every page of one list must carry the
    /// same selector as the first.
    pub label_selector: Option<String>,
}

impl PageRequest {
    /// The first page, with at most `limit` items, of every object.
    pub fn first(limit: u32) -> Self {
        Self {
            limit,
            ..Self::default()
        }
    }

    /// The same request for only the objects `selector` matches.
    pub fn with_label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }
}

/// One page of a list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListPage {
    /// The objects of this page.
    pub items: Vec<Value>,
    /// The list's `metadata.resourceVersion`: a watch from it sees every
    /// change after the list. `None` when the transport cannot tell (then
    /// nothing can be watched from it).
    pub resource_version: Option<String>,
    /// Set when more pages follow: pass it in the next [`PageRequest`]. An
    /// expired token fails with [`ErrorKind::Gone`](crate::ErrorKind::Gone).
    pub continue_token: Option<String>,
}

/// Where and how long to watch.
///
/// ```
/// use blue_kubernetes_client::WatchRequest;
/// let request = WatchRequest {
///     resource_version: "7".into(),
///     timeout_seconds: 300,
///     ..WatchRequest::default()
/// }
/// .with_label_selector("example.com/owner");
/// assert!(!request.bookmarks);
/// assert_eq!(request.label_selector.as_deref(), Some("example.com/owner"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchRequest {
    /// Changes after this resourceVersion are streamed. A version the
    /// server no longer has fails (at once or as the first item) with
    /// [`ErrorKind::Gone`](crate::ErrorKind::Gone).
    pub resource_version: String,
    /// The server ends the stream after this many seconds (`timeoutSeconds`);
    /// the caller then watches again from the last version it saw.
    pub timeout_seconds: u32,
    /// Ask for `BOOKMARK` events (`allowWatchBookmarks=true`), which move the
    /// resourceVersion forward without an object change.
    pub bookmarks: bool,
    /// Only changes of objects whose labels match this selector
    /// (`labelSelector`); `None` watches every object. An object that stops
    /// matching arrives as [`WatchEvent::Deleted`] (its last matching
    /// state, at the change's resourceVersion), one that starts matching as
    /// [`WatchEvent::Added`].
    pub label_selector: Option<String>,
}

impl WatchRequest {
    /// The same request for only the objects `selector` matches.
    pub fn with_label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }
}

/// One change seen by a watch.
#[derive(Clone, Debug, PartialEq)]
pub enum WatchEvent {
    /// An object was created (or first seen).
    Added(Value),
    /// An object changed.
    Modified(Value),
    /// An object was removed; its last state.
    Deleted(Value),
    /// Nothing changed up to this resourceVersion.
    Bookmark {
        /// Watch again from here.
        resource_version: String,
    },
}

impl WatchEvent {
    /// The resourceVersion this event brings the watcher to.
    ///
    /// ```
    /// use blue_kubernetes_client::WatchEvent;
    /// let e = WatchEvent::Modified(serde_json::json!({"metadata": {"resourceVersion": "7"}}));
    /// assert_eq!(e.resource_version(), Some("7"));
    /// ```
    pub fn resource_version(&self) -> Option<&str> {
        match self {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => o
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str),
            WatchEvent::Bookmark { resource_version } => Some(resource_version),
        }
    }
}

/// The events of one watch, in order. It ends when the server closes it
/// (e.g. at `timeout_seconds`); an `Err` item (a `410 Gone` `ERROR` event,
/// a broken connection, undecodable data) is the last item.
pub type WatchStream = BoxStream<'static, Result<WatchEvent, Error>>;

/// The error of a transport that cannot watch.
pub(crate) fn unsupported_watch() -> Error {
    Error::Unsupported { operation: "watch" }
}
