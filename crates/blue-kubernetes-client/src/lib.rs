//! kubectl transport and the [`Client`] trait for blue-kubernetes.
//!
//! The controller talks to the cluster only through [`Client`]. The production
//! implementation, `KubectlClient`, runs `kubectl` through an injectable
//! [`Runner`] with an explicit context (or in-cluster credentials), request and
//! process deadlines, private input files, and errors that never carry
//! kubectl's output.

mod client;
mod descriptor;
mod error;
mod runner;

pub use client::Client;
pub use descriptor::ResourceDescriptor;
pub use error::{Error, ErrorKind};
pub use runner::{Invocation, Output, Runner};
