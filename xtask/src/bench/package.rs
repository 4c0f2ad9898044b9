//! The benchmark's resource type and its package.
//!
//! The package does no infrastructure work (converge and delete do nothing
//! but run no-op durable steps), so every measured cost is the controller's
//! and the transport's, never a callback's.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

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

/// A package that must converge each resource once: observe reports it
/// absent until converge ran for its uid. Converge does nothing but, with
/// `steps > 0`, run that many no-op durable steps (the `steps` part);
/// `steps == 0` is a plain converge.
pub fn converging(steps: usize) -> Package {
    let done: Arc<Mutex<HashSet<String>>> = Arc::default();
    let seen = done.clone();
    let uid = |opts: &blue_kubernetes::Options| {
        opts.resource()["metadata"]["uid"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    let builder = Package::builder(descriptor());
    let builder = if steps > 0 { builder.steps() } else { builder };
    let package = builder
        .identity_async(|opts| async move { Ok(vec![Some(opts.profile().into())]) })
        .observe_async(move |opts| {
            let converged = seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(&uid(&opts));
            async move {
                Ok(if converged {
                    Observation::READY
                } else {
                    Observation::ABSENT
                })
            }
        })
        .converge_async(move |opts| {
            let done = done.clone();
            async move {
                for i in 0..steps {
                    let name = format!("step-{i}");
                    opts.steps().run(&name, |_| async { Ok(()) }).await?;
                }
                done.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(uid(&opts));
                Ok(WorkflowOutcome::new())
            }
        })
        .delete_async(|_| async { Ok(WorkflowOutcome::new()) })
        .build();
    package.expect("complete package")
}
