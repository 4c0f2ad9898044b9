//! The benchmark's resource type and its no-op package.
//!
//! The package does no infrastructure work (observe reports READY, converge
//! and delete do nothing), so every measured cost is the controller's and the
//! transport's, never a callback's.

use blue_kubernetes::{Observation, Package, WorkflowOutcome};
use blue_kubernetes_client::ResourceDescriptor;

pub const GROUP: &str = "bench.blue.dev";
pub const PLURAL: &str = "benchwidgets";

pub fn descriptor() -> ResourceDescriptor {
    ResourceDescriptor::new(GROUP, "v1", PLURAL, "BenchWidget")
}

/// `plural.group`, as kubectl takes it.
pub fn resource_type() -> String {
    format!("{PLURAL}.{GROUP}")
}

/// The resource names of a population, `w-00000`... (sorted = creation order).
pub fn name(i: usize) -> String {
    format!("w-{i:05}")
}

/// A no-op package, with async callbacks (run inline, not on
/// `spawn_blocking` threads).
pub fn noop() -> Package {
    let package = Package::builder(descriptor())
        .identity_async(|opts| async move { Ok(vec![Some(opts.profile().into())]) })
        .observe_async(|_| async { Ok(Observation::READY) })
        .converge_async(|_| async { Ok(WorkflowOutcome::new()) })
        .delete_async(|_| async { Ok(WorkflowOutcome::new()) })
        .build();
    // Every required callback is set above, so build cannot fail.
    package.expect("complete package")
}
