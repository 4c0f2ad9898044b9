#![doc = include_str!("../README.md")]
//!
//! Register trusted [`Package`]s (one per custom resource kind, with a
//! typed config via [`PackageBuilder::config`]), generate their CRDs with
//! [`crd`], build a [`Controller`] with [`controller`], and either
//! [`reconcile`] one resource or [`start`] the [`Runtime`] (watches where the
//! client can watch, periodic lists otherwise).

mod callback;
mod client_stack;
mod config;
mod controller;
mod crd;
mod due;
mod error;
#[cfg(feature = "http")]
mod http;
mod leader;
mod lock;
mod names;
mod namespaces;
mod options;
mod package;
mod preflight;
mod reconcile;
mod resource;
mod runtime;
mod setters;
mod spec;
mod status;
mod telemetry;
mod time;
mod typed;

pub use config::{system_clock, Clock, Config};
pub use controller::{controller, Controller};
pub use crd::{crd, to_yaml, CrdOptions, PrinterColumn};
pub use due::is_due;
pub use error::Error;
#[cfg(feature = "http")]
pub use http::{serve_http, HttpServer};
pub use leader::LeaderElection;
pub use names::{Names, DESTROY_PROTECTION_KEY, FINALIZER, REQUEST_ANNOTATION};
pub use namespaces::Namespaces;
pub use options::{Event, Options, EVENT_KEY, RESOURCE_KEY};
pub use package::{
    CallbackError, CallbackResult, Observation, Package, PackageBuilder, WorkflowOutcome,
};
pub use preflight::{preflight, Problem};
/// The Prometheus client the [`Metrics`] are built with, for registering more.
pub use prometheus_client;
pub use reconcile::{reconcile, Report};
pub use runtime::{start, Health, Runtime, Stats};
pub use spec::{reconcile_interval_pattern, MAX_RECONCILE_INTERVAL_MS};
pub use status::{Phase, Reason};
pub use telemetry::Metrics;
pub use typed::TypedPackageBuilder;
/// The elector and the identity lock, for the controller's own behaviour
/// tests (the `testing` feature); not part of the supported API.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub use {
    leader::{ElectionStep, LeaseElector},
    lock::is_locked,
};
