//! A package on the trait, for the immutable-field tests: DNS records by
//! profile, each its `kind` and `content`. `kind` is immutable and not
//! part of the identity (the profile is): only the immutable-field rule
//! protects it, also where the server has no CEL.
#![allow(dead_code)]

use blue_kubernetes::package::NoOutputs;
use blue_kubernetes::{
    async_trait, CallbackResult, Context, IdentityContext, Infrastructure, Observation, Outcome,
    Package, ResourceSchema,
};
use blue_kubernetes_client::ResourceDescriptor;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The records of `group`.
pub fn records_of(group: &str) -> ResourceDescriptor {
    ResourceDescriptor::new(group, "v1", "records", "Record")
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct RecordConfig {
    pub kind: Option<String>,
    pub content: Option<String>,
}

/// A DNS server: records by profile, each its `kind` and `content`.
#[derive(Clone, Default)]
pub struct Dns {
    records: Arc<Mutex<HashMap<String, Value>>>,
    converges: Arc<Mutex<usize>>,
}

impl Dns {
    pub fn record(&self, profile: &str) -> Option<Value> {
        self.records.lock().unwrap().get(profile).cloned()
    }

    pub fn converges(&self) -> usize {
        *self.converges.lock().unwrap()
    }

    /// The package of records of `group` over this server.
    pub fn package(&self, group: &str) -> Package {
        let schema = ResourceSchema::new(records_of(group)).immutable("kind");
        Package::with_schema(self.clone(), schema).expect("a structural package")
    }
}

fn wanted(config: &RecordConfig) -> Value {
    json!({"kind": config.kind, "content": config.content})
}

type Cx = Context<RecordConfig>;

#[async_trait]
impl Infrastructure for Dns {
    type Config = RecordConfig;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(records_of("dns.example.com")).immutable("kind")
    }

    async fn identity(
        &self,
        cx: &IdentityContext<RecordConfig>,
    ) -> CallbackResult<Vec<Option<String>>> {
        Ok(vec![Some(cx.profile().into())])
    }

    async fn observe(&self, cx: &Cx) -> CallbackResult<Observation<NoOutputs>> {
        let stored = self.record(cx.profile());
        let matches = stored.as_ref() == Some(&wanted(cx.config()));
        Ok(Observation::new(stored.is_some(), matches, true))
    }

    async fn converge(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        *self.converges.lock().unwrap() += 1;
        let mut records = self.records.lock().unwrap();
        records.insert(cx.profile().to_string(), wanted(cx.config()));
        Ok(Outcome::done())
    }

    async fn delete(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        self.records.lock().unwrap().remove(cx.profile());
        Ok(Outcome::done())
    }
}
