//! A kind at `v1` serving two older versions: `v1beta1` lacks the tags,
//! `v1alpha1` also the zone and calls `replicas` `size`.

use crate::domain::names::Names;
use crate::package::infrastructure::NoOutputs;
use crate::versions::{Conversion, Versions};
use crate::ResourceSchema;
use crate::{async_trait, CallbackResult, Context, Infrastructure, Observation, Outcome};
use blue_kubernetes_client::ResourceDescriptor;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

mod crd;
mod review;
mod round_trips;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(super) struct WidgetV1 {
    pub(super) replicas: u32,
    pub(super) zone: Option<String>,
    #[serde(default)]
    pub(super) tags: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(super) struct WidgetV1beta1 {
    pub(super) replicas: u32,
    pub(super) zone: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(super) struct WidgetV1alpha1 {
    pub(super) size: u32,
}

impl From<&WidgetV1> for WidgetV1beta1 {
    fn from(v1: &WidgetV1) -> Self {
        Self {
            replicas: v1.replicas,
            zone: v1.zone.clone(),
        }
    }
}

impl From<WidgetV1beta1> for WidgetV1 {
    fn from(old: WidgetV1beta1) -> Self {
        Self {
            replicas: old.replicas,
            zone: old.zone,
            tags: BTreeMap::new(),
        }
    }
}

impl From<&WidgetV1> for WidgetV1alpha1 {
    fn from(v1: &WidgetV1) -> Self {
        Self { size: v1.replicas }
    }
}

impl From<WidgetV1alpha1> for WidgetV1 {
    fn from(old: WidgetV1alpha1) -> Self {
        Self {
            replicas: old.size,
            zone: None,
            tags: BTreeMap::new(),
        }
    }
}

pub(super) struct Widgets;

#[async_trait]
impl Infrastructure for Widgets {
    type Config = WidgetV1;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(ResourceDescriptor::new(
            "example.com",
            "v1",
            "widgets",
            "Widget",
        ))
        .immutable("zone")
        .immutable("tags")
    }

    fn versions() -> Versions<WidgetV1> {
        Versions::stored()
            .served::<WidgetV1beta1>("v1beta1")
            .served::<WidgetV1alpha1>("v1alpha1")
    }

    async fn observe(&self, _: &Context<WidgetV1>) -> CallbackResult<Observation<NoOutputs>> {
        Ok(Observation::ABSENT)
    }

    async fn converge(&self, _: &Context<WidgetV1>) -> CallbackResult<Outcome<NoOutputs>> {
        Ok(Outcome::done())
    }

    async fn delete(&self, _: &Context<WidgetV1>) -> CallbackResult<Outcome<NoOutputs>> {
        Ok(Outcome::done())
    }
}

pub(super) const OLD: [&str; 2] = ["v1beta1", "v1alpha1"];

pub(super) fn names() -> Names {
    Names::for_domain("example.com")
}

pub(super) fn conversion() -> Conversion {
    Conversion::new([&ResourceSchema::of::<Widgets>()], names())
}

/// A Widget at `version` with `config`, common spec fields, labels, an
/// annotation and a status that no conversion may touch.
pub(super) fn widget(version: &str, config: Value) -> Value {
    json!({
        "apiVersion": format!("example.com/{version}"),
        "kind": "Widget",
        "metadata": {
            "name": "w", "namespace": "infra", "uid": "8a6c", "generation": 4,
            "labels": {"team": "a"}, "annotations": {"note": "kept"},
        },
        "spec": {"state": "present", "suspend": false, "config": config},
        "status": {"phase": "Ready", "observedGeneration": 4},
    })
}

pub(super) fn review_body(desired: &str, objects: Vec<Value>) -> Vec<u8> {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "705ab4f5", "desiredAPIVersion": desired, "objects": objects},
    })
    .to_string()
    .into_bytes()
}

/// `object` converted to `version` through a review that must succeed.
pub(super) fn convert(object: Value, version: &str) -> Value {
    let answer = conversion().review(&review_body(
        &format!("example.com/{version}"),
        vec![object],
    ));
    let response = &answer["response"];
    assert_eq!(response["result"]["status"], "Success", "{answer}");
    assert_eq!(response["uid"], "705ab4f5");
    response["convertedObjects"][0].clone()
}
