//! Outputs: the non-secret facts a package reports about the
//! infrastructure (endpoint, external ID, version), recorded in
//! `status.outputs` in the status write a pass makes anyway.
//!
//! The latest outputs of a pass win: those of the last `observe` that
//! returned any, else those `converge` returned. A pass that produced none
//! keeps what is recorded, so a resource that is deleted, Invalid or
//! failing shows the outputs it last had.

use crate::package::observation::Outputs;
use crate::package::schema::OutputsType;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The largest serialized outputs recorded (16 KiB, as JSON): status is
/// stored in etcd beside the whole object and read by every watcher, so
/// outputs hold facts, not documents. Larger outputs fail the pass
/// (`Failed` / `InvalidOutputs`); they are never truncated.
pub const MAX_OUTPUTS_BYTES: usize = 16 * 1024;

/// The schema of `status.outputs` in the generated CRD: the declared type's,
/// or any object for a package that declares none.
pub(crate) fn status_schema(declared: Option<&OutputsType>) -> Value {
    match declared {
        Some(t) => (t.schema)(),
        None => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    }
}

/// Why outputs were not recorded; logged, never written anywhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rejected {
    /// They did not serialize.
    Unserializable,
    /// They are not the declared type.
    WrongType,
    /// Their serialized size, above [`MAX_OUTPUTS_BYTES`].
    TooLarge(usize),
    /// They hold a connection value generated in the pass (see
    /// [`Connection`](crate::connection::Connection)).
    HoldsSecret,
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejected::Unserializable => write!(f, "outputs did not serialize"),
            Rejected::WrongType => write!(f, "outputs are not the declared outputs type"),
            Rejected::TooLarge(n) => write!(
                f,
                "outputs are {n} bytes as JSON, more than {MAX_OUTPUTS_BYTES}"
            ),
            Rejected::HoldsSecret => write!(f, "outputs hold a connection secret value"),
        }
    }
}

/// The value to record for `outputs`, checked against `declared`.
pub(crate) fn accept(declared: Option<&OutputsType>, outputs: Outputs) -> Result<Value, Rejected> {
    let Outputs::Value(value) = outputs else {
        return Err(Rejected::Unserializable);
    };
    if declared.is_some_and(|t| !(t.fits)(&value)) {
        return Err(Rejected::WrongType);
    }
    let size = value.to_string().len();
    if size > MAX_OUTPUTS_BYTES {
        return Err(Rejected::TooLarge(size));
    }
    Ok(value)
}

/// The outputs type of a package that reports none: `status.outputs` keeps
/// any object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoOutputs {}

// Written out: the crate does not build schemars' derive macros. (Never
// used for a CRD: a package with `NoOutputs` declares no outputs type.)
impl JsonSchema for NoOutputs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NoOutputs".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "object"})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Endpoint {
        host: String,
        port: u16,
    }

    fn endpoint() -> Outputs {
        Outputs::of(&Endpoint {
            host: "db".into(),
            port: 5432,
        })
    }

    #[test]
    fn outputs_of_the_declared_type_are_recorded_as_serialized() {
        let declared = OutputsType::of::<Endpoint>();
        let value = accept(Some(&declared), endpoint()).unwrap();
        assert_eq!(value, json!({"host": "db", "port": 5432}));
    }

    #[test]
    fn outputs_of_another_shape_are_refused() {
        let declared = OutputsType::of::<Endpoint>();
        let other = Outputs::of(&json!({"host": 1}));
        assert_eq!(accept(Some(&declared), other), Err(Rejected::WrongType));
        assert!(accept(None, Outputs::of(&json!({"host": 1}))).is_ok());
    }

    #[test]
    fn outputs_above_the_bound_are_refused_never_truncated() {
        let just = "x".repeat(MAX_OUTPUTS_BYTES - 2);
        assert!(accept(None, Outputs::of(&json!(just))).is_ok());
        let over = "x".repeat(MAX_OUTPUTS_BYTES - 1);
        let refused = accept(None, Outputs::of(&json!(over)));
        assert_eq!(refused, Err(Rejected::TooLarge(MAX_OUTPUTS_BYTES + 1)));
    }

    #[test]
    fn the_crd_describes_declared_outputs_and_keeps_undeclared_ones() {
        let declared = status_schema(Some(&OutputsType::of::<Endpoint>()));
        assert_eq!(declared["properties"]["port"]["type"], "integer");
        let undeclared = status_schema(None);
        assert_eq!(undeclared["x-kubernetes-preserve-unknown-fields"], true);
    }
}
