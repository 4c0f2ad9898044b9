//! A package on the trait, for the trait's behaviour tests: silences in
//! an alert manager that assigns their IDs itself (no idempotency key),
//! so the package finds its silence by the external name.
#![allow(dead_code)]

use blue_kubernetes::{
    async_trait, CallbackResult, Context, Infrastructure, Observation, Outcome, ResourceSchema,
};

use crate::common::World;
use blue_kubernetes::resource::{ManagementPolicy, Metadata};
use blue_kubernetes::Package;
use blue_kubernetes_client::ResourceDescriptor;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

pub fn silences() -> ResourceDescriptor {
    ResourceDescriptor::new("alerts.example.com", "v1", "silences", "Silence")
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SilenceConfig {
    /// What the silence matches.
    pub matcher: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SilenceOutputs {
    pub id: String,
}

/// The alert manager's package over a fake cluster and clock.
pub struct Rig {
    world: World,
    pub manager: AlertManager,
}

impl Rig {
    pub fn new() -> Self {
        let manager = AlertManager::default();
        let package = |_: &_| Package::new(manager.clone()).expect("a structural package");
        let world = World::of(package, |_| {});
        Self { world, manager }
    }
}

impl std::ops::Deref for Rig {
    type Target = World;

    fn deref(&self) -> &World {
        &self.world
    }
}

/// What one callback saw in its context.
#[derive(Clone, Debug)]
pub struct Seen {
    pub callback: &'static str,
    pub metadata: Metadata,
    pub policy: ManagementPolicy,
    pub now_ms: u64,
    pub external_name: Option<String>,
    pub has_api: bool,
}

/// Something a test does while a callback runs.
pub type Interjection = Box<dyn FnOnce() + Send>;

/// The alert manager: silences by server-assigned ID.
#[derive(Clone, Default)]
pub struct AlertManager {
    pub silences: Arc<Mutex<BTreeMap<String, String>>>,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// Runs once inside the next converge (a test's concurrent edit).
    pub during_converge: Arc<Mutex<Option<Interjection>>>,
    next: Arc<Mutex<u32>>,
}

impl AlertManager {
    pub fn add(&self, id: &str, matcher: &str) {
        let mut silences = self.silences.lock().unwrap();
        silences.insert(id.into(), matcher.into());
    }

    pub fn count(&self) -> usize {
        self.silences.lock().unwrap().len()
    }

    pub fn seen(&self, callback: &str) -> Vec<Seen> {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .filter(|s| s.callback == callback)
            .cloned()
            .collect()
    }

    fn saw(&self, callback: &'static str, cx: &Context<SilenceConfig>) {
        self.seen.lock().unwrap().push(Seen {
            callback,
            metadata: cx.metadata().clone(),
            policy: cx.management_policy(),
            now_ms: cx.now_ms(),
            external_name: cx.external_name().map(str::to_string),
            has_api: cx.api().is_some(),
        });
    }
}

#[async_trait]
impl Infrastructure for AlertManager {
    type Config = SilenceConfig;
    type Outputs = SilenceOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(silences())
    }

    async fn observe(
        &self,
        cx: &Context<SilenceConfig>,
    ) -> CallbackResult<Observation<SilenceOutputs>> {
        self.saw("observe", cx);
        let Some(id) = cx.external_name() else {
            return Ok(Observation::ABSENT);
        };
        let silences = self.silences.lock().unwrap();
        Ok(match silences.get(id) {
            None => Observation::ABSENT,
            Some(matcher) => Observation::new(true, *matcher == cx.config().matcher, true)
                .with(SilenceOutputs { id: id.to_string() }),
        })
    }

    async fn converge(
        &self,
        cx: &Context<SilenceConfig>,
    ) -> CallbackResult<Outcome<SilenceOutputs>> {
        self.saw("converge", cx);
        if let Some(during) = self.during_converge.lock().unwrap().take() {
            during();
        }
        let id = match cx.external_name() {
            Some(id) => id.to_string(),
            None => {
                let mut next = self.next.lock().unwrap();
                *next += 1;
                format!("s-{next}")
            }
        };
        self.add(&id, &cx.config().matcher);
        Ok(Outcome::done()
            .with(SilenceOutputs { id: id.clone() })
            .with_external_name(id))
    }

    async fn delete(&self, cx: &Context<SilenceConfig>) -> CallbackResult<Outcome<SilenceOutputs>> {
        self.saw("delete", cx);
        if let Some(id) = cx.external_name() {
            self.silences.lock().unwrap().remove(id);
        }
        Ok(Outcome::done())
    }
}
