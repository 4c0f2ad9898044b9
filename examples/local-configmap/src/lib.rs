//! An example operator built on blue-kubernetes.
//!
//! A `LocalConfigMap` (`localconfigmaps.examples.blue.dev/v1alpha1`) declares
//! a ConfigMap in its own namespace: `spec.config.configMapName` (default:
//! the resource's name) and `spec.config.data` (a string map). The
//! operator's package creates it, repairs drift, empties it while
//! `spec.state` is `stopped`, and deletes it on deletion when
//! `spec.deletionPolicy` is `Destroy`.
//!
//! Ownership is an annotation ([`configmap::OWNER_ANNOTATION`]) holding the
//! resource's UID rather than an `ownerReference`, so that `Retain` really
//! keeps the ConfigMap after the resource is gone, and a ConfigMap someone
//! else owns is never adopted or overwritten.
//!
//! - [`desired`]: validation, identity and the desired ConfigMap (pure);
//! - [`configmap`]: observation and write plans over typed ConfigMaps (pure);
//! - [`package`]: the package trait's implementation, through the pass's
//!   API handle and the client's typed helpers;
//! - [`cli`]: the binary, blue-kubernetes' runner with this package, and
//!   its [`test_hooks`], which exist only for the project's own tests;
//! - [`v1beta1`]: the next release's API (a renamed field and a new one),
//!   stored at `v1beta1` with `v1alpha1` still served, and its runner
//!   ([`cli::v1beta1_runner`]).

pub mod cli;
pub mod configmap;
pub mod desired;
pub mod package;
pub mod test_hooks;
pub mod v1beta1;
