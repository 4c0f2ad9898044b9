//! The schemas of the parts every managed resource shares: the common spec
//! fields and the status the controller writes.

use crate::domain::resource::reconcile_interval_pattern;
use crate::resource::Phase;
use serde_json::{json, Value};

/// `spec` with the common fields around `config`, and
/// `writeConnectionSecretToRef` for a package with connection details.
pub(super) fn spec(config: Value, connection: bool) -> Value {
    let mut spec = json!({
        "type": "object",
        "properties": {
            "state": {
                "type": "string",
                "enum": ["running", "stopped"],
                "default": "running",
                "description": "running: converge the infrastructure; stopped: callbacks see the stop event.",
            },
            "suspend": {
                "type": "boolean",
                "default": false,
                "description": "While true nothing runs, except destruction protection.",
            },
            "reconcileInterval": {
                "type": "string",
                "pattern": reconcile_interval_pattern(),
                "default": "60s",
                "description": "How often drift is checked: a positive integer and ms, s, m or h, at most 8760h (365 days).",
            },
            "deletionPolicy": {
                "type": "string",
                "enum": ["Retain", "Destroy"],
                "default": "Retain",
                "description": "Retain keeps the infrastructure when the resource is deleted; Destroy destroys it.",
            },
            "managementPolicy": {
                "type": "string",
                "enum": ["Full", "Observe"],
                "default": "Full",
                "description": "Full: observe, converge and delete. Observe: import existing infrastructure; only observe it and record its outputs, never change or destroy it.",
            },
            "config": config,
        },
    });
    if connection {
        spec["properties"]["writeConnectionSecretToRef"] = json!({
            "type": "object",
            "description": "The Secret (in this namespace) that holds the connection details; default <name>-connection.",
            "properties": {
                "name": {"type": "string", "maxLength": 253, "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"},
            },
        });
    }
    spec
}

/// Everything the controller writes under `status`; `outputs` describes
/// `status.outputs`.
pub(super) fn status(outputs: Value) -> Value {
    let string = json!({"type": "string"});
    let time = json!({"type": "string", "format": "date-time"});
    let generation = json!({"type": "integer", "format": "int64"});
    json!({
        "type": "object",
        "properties": {
            "phase": {"type": "string", "enum": Phase::ALL.map(Phase::as_str)},
            "conditions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["type", "status"],
                    "properties": {
                        "type": string,
                        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                        "reason": string,
                        "message": string,
                        "observedGeneration": generation,
                        "lastTransitionTime": time,
                    },
                },
            },
            "observedGeneration": generation,
            "profile": string,
            "stateIdentity": string,
            // A digest of the accepted immutable config fields, never
            // their values.
            "immutableDigest": string,
            // Older controllers wrote "" here; some 1.20 builds read "" as null.
            "lastHandledRequest": {"type": "string", "nullable": true},
            "lastReconcileTime": time,
            "nextReconcileTime": time,
            "retryCount": {"type": "integer", "minimum": 0},
            "deletionObserved": {"type": "boolean"},
            "outputs": outputs,
        },
    })
}
