//! API versions of a custom resource: the version its config is stored at
//! and older served versions, each with its own config type and
//! conversions to and from the stored one ([`Versions`], declared by
//! [`Infrastructure::versions`](crate::Infrastructure::versions)), the
//! lossless round trip the library keeps for them, and the answer to an
//! API server's `ConversionReview` ([`Conversion::review`]).
//!
//! The controller and the package always see the stored version; the
//! common spec fields (`state`, `suspend`, ...), the reserved config keys
//! and the status are the library's and the same in every version.

mod lossless;
mod merge;
pub(crate) mod old;
mod review;

pub use review::{Conversion, MAX_REVIEW_BYTES, MAX_REVIEW_OBJECTS};

use crate::package::schema::openapi_schema;
use old::OldVersion;
use schemars::JsonSchema;
use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;
use std::marker::PhantomData;

/// The versions a package serves: the one its
/// [`Config`](crate::Infrastructure::Config) is stored at (the
/// descriptor's version) and older ones, each an own config type `O` with
/// `From<&C> for O` (down: total, an old client can read every object)
/// and `From<O> for C` (up: total for everything `O`'s schema admits).
/// What a down-conversion cannot express is kept on the object by the
/// library and restored on the way up, so an old client's
/// read-modify-write loses nothing.
///
/// ```
/// use blue_kubernetes::{versions::Versions, *};
/// use blue_kubernetes::package::NoOutputs;
/// use blue_kubernetes_client::ResourceDescriptor;
///
/// /// v1: `replicas` (renamed from `size`) and a new `zone`.
/// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// struct WidgetConfig { replicas: u32, zone: Option<String> }
///
/// /// v1alpha1: `size`, no zone.
/// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// struct WidgetConfigV1alpha1 { size: u32 }
///
/// impl From<&WidgetConfig> for WidgetConfigV1alpha1 {
///     fn from(v1: &WidgetConfig) -> Self { Self { size: v1.replicas } }
/// }
/// impl From<WidgetConfigV1alpha1> for WidgetConfig {
///     fn from(old: WidgetConfigV1alpha1) -> Self { Self { replicas: old.size, zone: None } }
/// }
///
/// struct Widgets;
///
/// #[async_trait]
/// impl Infrastructure for Widgets {
///     type Config = WidgetConfig;
///     type Outputs = NoOutputs;
///     fn schema() -> ResourceSchema {
///         // The stored version is the descriptor's.
///         ResourceSchema::new(ResourceDescriptor::new("example.com", "v1", "widgets", "Widget"))
///     }
///     fn versions() -> Versions<WidgetConfig> {
///         Versions::stored().served::<WidgetConfigV1alpha1>("v1alpha1")
///     }
/// #   async fn observe(&self, _: &Context<WidgetConfig>) -> CallbackResult<Observation<NoOutputs>> { Ok(Observation::ABSENT) }
/// #   async fn converge(&self, _: &Context<WidgetConfig>) -> CallbackResult<Outcome<NoOutputs>> { Ok(Outcome::done()) }
/// #   async fn delete(&self, _: &Context<WidgetConfig>) -> CallbackResult<Outcome<NoOutputs>> { Ok(Outcome::done()) }
/// }
///
/// let schema = ResourceSchema::of::<Widgets>();
/// assert_eq!(schema.served_versions(), ["v1", "v1alpha1"]);
/// ```
pub struct Versions<C> {
    old: Vec<OldVersion>,
    stored: PhantomData<fn() -> C>,
}

impl<C> Versions<C> {
    /// Only the stored version: what a package serves unless it declares
    /// more (the default of
    /// [`Infrastructure::versions`](crate::Infrastructure::versions)).
    pub fn stored() -> Self {
        Self {
            old: Vec::new(),
            stored: PhantomData,
        }
    }

    /// The older versions declared, erased.
    pub(crate) fn into_old(self) -> Vec<OldVersion> {
        self.old
    }
}

impl<C> Versions<C>
where
    C: Serialize + DeserializeOwned + 'static,
{
    /// Also serves version `name` (e.g. `v1alpha1`) of the same kind, its
    /// `spec.config` of type `O`: deprecated in the generated CRD, with a
    /// warning naming the stored version. Declare each older version once;
    /// the order is the order of the CRD's versions after the stored one.
    ///
    /// The contract: `O::from(&C::from(o))` gives `o` back for every `o`
    /// the old schema admits (so old -> stored -> old is the identity; the
    /// library keeps what the other direction loses). Mark an `Option`
    /// field `#[serde(skip_serializing_if = "Option::is_none")]` so a
    /// converted object carries no `null` its author never wrote.
    #[must_use]
    pub fn served<O>(mut self, name: impl Into<String>) -> Self
    where
        O: Serialize + DeserializeOwned + JsonSchema + 'static,
        for<'a> O: From<&'a C>,
        C: From<O>,
    {
        self.old.push(OldVersion {
            name: name.into(),
            schema: openapi_schema::<O>,
            down: down::<C, O>,
            up: up::<C, O>,
        });
        self
    }
}

fn down<C, O>(stored: &Value) -> Result<Value, serde_json::Error>
where
    C: DeserializeOwned,
    O: Serialize + for<'a> From<&'a C>,
{
    let stored: C = serde_json::from_value(stored.clone())?;
    serde_json::to_value(O::from(&stored))
}

fn up<C, O>(old: &Value) -> Result<Value, serde_json::Error>
where
    C: Serialize + From<O>,
    O: DeserializeOwned,
{
    let old: O = serde_json::from_value(old.clone())?;
    serde_json::to_value(C::from(old))
}

#[cfg(test)]
pub(crate) mod tests;
