//! The pattern the crate README recommends for two resources that claim one
//! thing ("Shared infrastructure"): identity = the shared thing's key, a
//! claim recorded on the infrastructure, and `validate` refusing another
//! claimant with a user-facing message. The first resource keeps the
//! thing; the second ends Invalid, visibly, and nothing fights.

mod common;

use blue_kubernetes::{
    async_trait, CallbackResult, Context, IdentityContext, Infrastructure, Observation, Outcome,
    Package, Report, ResourceSchema,
};

use blue_kubernetes::package::{NoOutputs, UserFacingMessage, ValidationErrors};

use blue_kubernetes::resource::{Phase, Reason};
use common::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct RoleConfig {
    server: String,
    role: String,
    password: String,
}

struct Role {
    owner: String,
    password: String,
    writes: usize,
}

/// Roles by `server/role`, each recording its owner's uid (the claim).
#[derive(Clone, Default)]
struct Roles(Arc<Mutex<BTreeMap<String, Role>>>);

fn key(c: &RoleConfig) -> String {
    format!("{}/{}", c.server, c.role)
}

impl Roles {
    fn owner(&self, c: &RoleConfig) -> Option<String> {
        self.0.lock().unwrap().get(&key(c)).map(|r| r.owner.clone())
    }

    fn package(&self) -> Package {
        Package::new(self.clone()).unwrap()
    }
}

type Cx = Context<RoleConfig>;

#[async_trait]
impl Infrastructure for Roles {
    type Config = RoleConfig;
    type Outputs = NoOutputs;

    fn schema() -> ResourceSchema {
        ResourceSchema::new(widgets())
    }

    async fn validate(&self, cx: &Cx) -> CallbackResult<ValidationErrors> {
        let (config, me) = (cx.config(), &cx.metadata().uid);
        let mut errors = ValidationErrors::new();
        match self.owner(config) {
            Some(owner) if owner != *me => {
                errors.push_user_facing(UserFacingMessage::new(format!(
                    "role {} on {} is managed by another resource; choose another role",
                    config.role, config.server
                )))
            }
            _ => {}
        }
        Ok(errors)
    }

    async fn identity(
        &self,
        cx: &IdentityContext<RoleConfig>,
    ) -> CallbackResult<Vec<Option<String>>> {
        let config = cx.config();
        Ok(vec![
            Some("postgres".into()),
            Some(config.server.clone()),
            Some("role".into()),
            Some(config.role.clone()),
        ])
    }

    async fn observe(&self, cx: &Cx) -> CallbackResult<Observation<NoOutputs>> {
        let (config, me) = (cx.config(), &cx.metadata().uid);
        let roles = self.0.lock().unwrap();
        let role = roles.get(&key(config));
        let ours = role.is_some_and(|r| r.owner == *me && r.password == config.password);
        Ok(Observation::new(role.is_some(), ours, role.is_some()))
    }

    async fn converge(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        let (config, me) = (cx.config(), &cx.metadata().uid);
        let mut roles = self.0.lock().unwrap();
        let role = roles.entry(key(config)).or_insert(Role {
            owner: me.clone(),
            password: String::new(),
            writes: 0,
        });
        if role.owner != *me {
            return Err("the role is claimed by another resource".into());
        }
        role.password = config.password.clone();
        role.writes += 1;
        Ok(Outcome::done())
    }

    async fn delete(&self, cx: &Cx) -> CallbackResult<Outcome<NoOutputs>> {
        let (config, me) = (cx.config(), &cx.metadata().uid);
        let mut roles = self.0.lock().unwrap();
        if roles.get(&key(config)).is_some_and(|r| r.owner == *me) {
            roles.remove(&key(config));
        }
        Ok(Outcome::done())
    }
}

#[tokio::test]
async fn a_second_resource_claiming_one_role_ends_invalid_visibly_instead_of_fighting() {
    let w = World::new();
    let roles = Roles::default();
    let package = roles.package();
    let controller = build(&w.cluster, w.clock.as_fn(), vec![package.clone()], |c| {
        c.event_component = Some("pg-operator".into())
    });
    let reconcile = |name: &'static str| {
        let (controller, package) = (controller.clone(), package.clone());
        async move {
            blue_kubernetes::reconcile(&controller, &package, NS, name)
                .await
                .unwrap()
        }
    };
    let config = |password: &str| json!({"config": {"server": "db-1", "role": "app-shared", "password": password}});
    w.create("first", config("one"));
    w.create("second", config("two"));

    assert_eq!(
        reconcile("first").await,
        Report::Reconciled(Phase::Ready, Reason::Converged)
    );
    let invalid = Report::Reconciled(Phase::Invalid, Reason::InvalidConfiguration);
    assert_eq!(reconcile("second").await, invalid);
    assert_eq!(condition(&w.status("second"), "Stalled")["status"], "True");

    // Its user reads why, in a Warning Event on their own resource.
    let uid = w.get("second")["metadata"]["uid"].clone();
    let warnings: Vec<Value> = w
        .cluster
        .events()
        .into_iter()
        .filter(|e| e["involvedObject"]["uid"] == uid)
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0]["type"], "Warning");
    assert_eq!(warnings[0]["reason"], "InvalidConfiguration");
    assert_eq!(
        warnings[0]["message"],
        "role app-shared on db-1 is managed by another resource; choose another role"
    );

    // No fight: periodic checks leave the first's password alone, and the
    // second waits for an edit.
    for _ in 0..5 {
        // The interval plus its largest uid stretch (10%).
        w.clock.advance(66_000);
        assert_eq!(
            reconcile("first").await,
            Report::Reconciled(Phase::Ready, Reason::Converged)
        );
        assert_eq!(reconcile("second").await, Report::NotDue);
    }
    let held = roles.0.lock().unwrap();
    let role = &held["db-1/app-shared"];
    assert_eq!((role.password.as_str(), role.writes), ("one", 1));
    assert_eq!(
        Some(&role.owner),
        w.get("first")["metadata"]["uid"]
            .as_str()
            .map(str::to_string)
            .as_ref()
    );
}
