//! What `observe` reports: three facts about the infrastructure, and
//! optionally its outputs and its external name; and what is recorded of
//! outputs.
//!
//! Outputs are the non-secret facts a package reports about the
//! infrastructure (endpoint, external ID, version), recorded in
//! `status.outputs` in the status write a pass makes anyway. The latest
//! outputs of a pass win: those of the last `observe` that returned any,
//! else those `converge` returned. A pass that produced none keeps what
//! is recorded, so a resource that is deleted, Invalid or failing shows
//! the outputs it last had.

use crate::package::schema::OutputsType;
use serde::Serialize;
use serde_json::{json, Value};

/// What `observe` reports about the infrastructure. Observing is read-only.
///
/// Build one with [`Observation::exists`] and its chained
/// [`matching`](Observation::matching) and [`ready`](Observation::ready)
/// (or [`READY`](Observation::READY), [`ABSENT`](Observation::ABSENT),
/// [`new`](Observation::new) with the three in order) and add to it with the `with_*`
/// methods; the three facts are public fields, the rest is reached through
/// methods, so a new kind of report is never a breaking change.
///
/// `O` is the package's outputs type: an [`Infrastructure`](crate::Infrastructure)
/// reports its own `Outputs` with [`with`](Observation::with); the closure
/// form reports any serializable value with
/// [`with_outputs`](Observation::with_outputs). Outputs are recorded in
/// `status.outputs`.
///
/// ```
/// use blue_kubernetes::Observation;
/// #[derive(serde::Serialize)]
/// struct Endpoint { host: String, port: u16 }
///
/// let seen: Observation = Observation::exists(true).matching(true).ready(true)
///     .with_outputs(&Endpoint { host: "db.internal".into(), port: 5432 });
/// assert!(seen.is_ready());
/// assert_eq!(seen.outputs().unwrap()["port"], 5432);
///
/// // Typed: the outputs are the package's own type.
/// let typed = Observation::READY
///     .with(Endpoint { host: "db.internal".into(), port: 5432 })
///     .with_external_name("16384");
/// assert_eq!(typed.output().unwrap().port, 5432);
/// assert_eq!(typed.external_name(), Some("16384"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Observation<O = Value> {
    /// The infrastructure exists.
    pub exists: bool,
    /// It matches the desired state.
    pub matches: bool,
    /// It is ready to use.
    pub ready: bool,
    outputs: Option<Outputs<O>>,
    external_name: Option<String>,
}

impl<O> Default for Observation<O> {
    fn default() -> Self {
        Self::ABSENT
    }
}

/// Outputs as a callback handed them over.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Outputs<O = Value> {
    /// Serialized (or, typed, as given).
    Value(O),
    /// `serde` could not serialize them: the pass fails (never a partial record).
    Unserializable,
}

impl Outputs {
    pub(crate) fn of(outputs: &impl Serialize) -> Self {
        match serde_json::to_value(outputs) {
            Ok(value) => Outputs::Value(value),
            Err(_) => Outputs::Unserializable,
        }
    }
}

impl<O: Serialize> Outputs<O> {
    /// Serialized for the record.
    pub(crate) fn erase(self) -> Outputs {
        match self {
            Outputs::Value(o) => Outputs::of(&o),
            Outputs::Unserializable => Outputs::Unserializable,
        }
    }
}

impl<O> Observation<O> {
    /// Exists, matches and is ready.
    pub const READY: Self = Self::new(true, true, true);
    /// Does not exist.
    pub const ABSENT: Self = Self::new(false, false, false);

    /// An observation without outputs, from its three facts in order;
    /// [`exists`](Self::exists) reads better where they are computed.
    pub const fn new(exists: bool, matches: bool, ready: bool) -> Self {
        Self {
            exists,
            matches,
            ready,
            outputs: None,
            external_name: None,
        }
    }

    /// Starts an observation by whether the infrastructure exists, not yet
    /// matching nor ready: chain [`matching`](Self::matching) and
    /// [`ready`](Self::ready), so each fact is named where it is computed.
    ///
    /// ```
    /// use blue_kubernetes::Observation;
    /// let (have, want) = (Some(3), 3);
    /// let seen: Observation = Observation::exists(have.is_some())
    ///     .matching(have == Some(want))
    ///     .ready(have.is_some());
    /// assert!(seen.is_ready());
    /// assert!(!Observation::<()>::exists(true).is_ready());
    /// ```
    pub const fn exists(exists: bool) -> Self {
        Self::new(exists, false, false)
    }

    /// Whether it matches the desired state.
    #[must_use]
    pub fn matching(mut self, matches: bool) -> Self {
        self.matches = matches;
        self
    }

    /// Whether it is ready to use.
    #[must_use]
    pub fn ready(mut self, ready: bool) -> Self {
        self.ready = ready;
        self
    }

    /// Attaches the package's outputs: non-secret facts about the
    /// infrastructure (endpoint, external ID, version), never credentials.
    #[must_use]
    pub fn with(mut self, outputs: O) -> Self {
        self.outputs = Some(Outputs::Value(outputs));
        self
    }

    /// Reports the infrastructure's own ID (a database's OID, a cloud
    /// resource's ID): the controller records it on the resource as its
    /// external name, and hands it back to later passes.
    #[must_use]
    pub fn with_external_name(mut self, name: impl Into<String>) -> Self {
        self.external_name = Some(name.into());
        self
    }

    /// Exists, matches and is ready, whatever the outputs.
    pub fn is_ready(&self) -> bool {
        self.exists && self.matches && self.ready
    }

    /// The outputs attached (`None` without, or when they did not
    /// serialize).
    pub fn output(&self) -> Option<&O> {
        match &self.outputs {
            Some(Outputs::Value(v)) => Some(v),
            _ => None,
        }
    }

    /// The external name reported, if any.
    pub fn external_name(&self) -> Option<&str> {
        self.external_name.as_deref()
    }

    pub(crate) fn take_external_name(&mut self) -> Option<String> {
        self.external_name.take()
    }
}

impl<O: Serialize> Observation<O> {
    /// The same observation with its outputs serialized: what the
    /// controller records.
    pub(crate) fn erase(self) -> Observation {
        Observation {
            exists: self.exists,
            matches: self.matches,
            ready: self.ready,
            outputs: self.outputs.map(Outputs::erase),
            external_name: self.external_name,
        }
    }
}

impl Observation {
    /// Attaches outputs, serialized: non-secret facts about the
    /// infrastructure (endpoint, external ID, version), never credentials.
    /// They must serialize to the package's declared outputs type.
    #[must_use]
    pub fn with_outputs(mut self, outputs: &impl Serialize) -> Self {
        self.outputs = Some(Outputs::of(outputs));
        self
    }

    /// The outputs attached, serialized (`None` without, or when they did
    /// not serialize).
    pub fn outputs(&self) -> Option<&Value> {
        self.output()
    }

    pub(crate) fn take_outputs(&mut self) -> Option<Outputs> {
        self.outputs.take()
    }
}

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
