//! Typed core objects (the `k8s-openapi` feature): get, list, create,
//! replace, patch and delete k8s-openapi types such as `ConfigMap` and
//! `Secret` over any [`RawApi`](crate::RawApi), with the same errors as raw
//! requests.
//!
//! A package manages its own objects through the [`RawApi`](crate::RawApi)
//! it captured; [`TypedApi`] spares it the JSON: paths from the type's
//! `Resource` constants, bodies serialized and answers decoded by
//! k8s-openapi (a Secret's `data` as bytes, base64 on the wire), a replace
//! always guarded by the resourceVersion it was computed from, deletes
//! with uid and resourceVersion [`preconditions_of`] what was read. Paths
//! are built from validated segments like every [`ApiPath`](crate::ApiPath).
//!
//! The feature enables no Kubernetes version of k8s-openapi: the final
//! binary picks one, as k8s-openapi requires (`k8s-openapi = { version =
//! "0.29", features = ["v1_33"] }`), so this crate never conflicts with the
//! version another dependency (kube-rs, say) was built for.
//!
//! - `api`: [`TypedApi`] and its requests.
//! - `path`: the API path of a type, from its `Resource` constants.
//! - `body`: objects to bodies and back, [`preconditions_of`], [`ListParams`].

mod api;
mod body;
mod path;

pub use api::TypedApi;
pub use body::{preconditions_of, ListParams};

#[cfg(test)]
mod tests;
