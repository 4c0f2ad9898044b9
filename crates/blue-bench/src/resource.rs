//! The resource the bench creates: the example's `LocalConfigMap`, its
//! API coordinates, the body of a new one, the names of a population and
//! when one is Ready.

use blue_kubernetes_client::ResourceDescriptor;
use serde_json::{json, Value};

/// The example's API group.
pub const GROUP: &str = "examples.blue.dev";
/// Its version the bench writes.
pub const VERSION: &str = "v1alpha1";
/// Its resource (plural).
pub const PLURAL: &str = "localconfigmaps";

/// The LocalConfigMap resource, for watches.
pub fn descriptor() -> ResourceDescriptor {
    ResourceDescriptor::new(GROUP, VERSION, PLURAL, "LocalConfigMap")
}

/// What a created resource asks for.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    pub interval: &'static str,
    pub destroy: bool,
}

impl Spec {
    /// Ready resources nobody touches: nothing is due for an hour.
    pub const IDLE: Spec = Spec {
        interval: "1h",
        destroy: false,
    };

    pub fn body(self, name: &str, value: &str) -> Value {
        let mut spec = json!({
            "reconcileInterval": self.interval,
            "config": {"data": {"v": value}},
        });
        if self.destroy {
            spec["deletionPolicy"] = json!("Destroy");
        }
        json!({
            "apiVersion": format!("{GROUP}/{VERSION}"), "kind": "LocalConfigMap",
            "metadata": {"name": name}, "spec": spec,
        })
    }
}

/// Ready for `generation` or a later one.
pub fn ready_for(r: &Value, generation: Option<i64>) -> bool {
    r["status"]["phase"] == "Ready" && r["status"]["observedGeneration"].as_i64() >= generation
}

/// The name of the `i`th resource of a population (`r-00000`...).
pub fn name(i: usize) -> String {
    format!("r-{i:05}")
}

/// Ready for its current generation.
pub fn is_ready(r: &Value) -> bool {
    r["status"]["phase"] == "Ready"
        && r["status"]["observedGeneration"].as_i64() == r["metadata"]["generation"].as_i64()
}
