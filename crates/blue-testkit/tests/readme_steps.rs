//! The crate README's durable-steps example ("Durable steps: converge and
//! delete that resume where they stopped"), run against a fake cloud: it
//! must do what that section promises. `readme_steps/machines.rs` is the
//! example's visible code, copied verbatim; the README's hidden lines are
//! the cloud helpers, defined here instead. Keep the two in sync: the
//! first test fails when they differ.

use blue_kubernetes::{controller, reconcile, CallbackResult, Config, Controller};

use blue_kubernetes::crd::{self, CrdConfig};
use blue_kubernetes::resource::{Phase, Reason};
use blue_kubernetes::{Package, Report};
use blue_kubernetes_client::{Client, ResourceDescriptor};
use blue_testkit::{Crash, CrashAt, FakeClock, FakeCluster};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

// `CallbackResult` is imported for the README's hidden helpers.
#[allow(unused_imports)]
mod readme {
    use super::cloud::{create_machine, create_network, find_network, machine_state};
    include!("readme_steps/machines.rs");

    pub(crate) fn package() -> Package {
        machines().expect("the README's package builds")
    }
}

/// The cloud the README's hidden helpers stand for: it assigns its own
/// IDs and takes client tokens (a create repeated with a token makes
/// nothing new), and it records every create.
mod cloud {
    use super::*;

    #[derive(Default)]
    pub(crate) struct Cloud {
        /// Client token -> network ID.
        pub(crate) networks: BTreeMap<String, String>,
        /// Machine name -> the token that made it.
        pub(crate) machines: BTreeMap<String, String>,
        /// Every create call, in order: (kind, token).
        pub(crate) creates: Vec<(&'static str, String)>,
    }

    pub(crate) static CLOUD: Mutex<Cloud> = Mutex::new(Cloud {
        networks: BTreeMap::new(),
        machines: BTreeMap::new(),
        creates: Vec::new(),
    });

    pub(crate) async fn find_network(token: &str) -> CallbackResult<Option<String>> {
        Ok(CLOUD.lock().unwrap().networks.get(token).cloned())
    }

    pub(crate) async fn create_network(_name: &str, token: &str) -> CallbackResult<String> {
        let mut cloud = CLOUD.lock().unwrap();
        cloud.creates.push(("network", token.to_string()));
        let next = format!("net-{}", cloud.networks.len() + 1);
        Ok(cloud.networks.entry(token.into()).or_insert(next).clone())
    }

    /// A machine is running as soon as it exists.
    pub(crate) async fn machine_state(name: &str) -> CallbackResult<Option<String>> {
        let cloud = CLOUD.lock().unwrap();
        Ok(cloud.machines.get(name).map(|_| "running".to_string()))
    }

    pub(crate) async fn create_machine(
        name: &str,
        _network: &str,
        token: &str,
    ) -> CallbackResult<()> {
        let mut cloud = CLOUD.lock().unwrap();
        cloud.creates.push(("machine", token.to_string()));
        let made = cloud.machines.entry(name.into()).or_insert(token.into());
        match made == token {
            true => Ok(()),
            false => Err(format!("machine {name} exists").into()),
        }
    }
}

const NS: &str = "infra";

fn machines() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "machines", "Machine")
}

/// The README's package over a fake cluster with its CRD installed, a
/// fake clock and a crash switch.
struct Bed {
    cluster: FakeCluster,
    clock: FakeClock,
    crash: Crash,
    client: Arc<dyn Client>,
    package: Package,
    controller: Controller,
}

impl Bed {
    fn new() -> Self {
        let clock = FakeClock::default();
        let cluster = FakeCluster::new().with_clock(clock.clone());
        let package = readme::package();
        cluster.install_crd(
            &crd::generate(&package, &CrdConfig::default()).unwrap(),
            "v1",
        );
        let crash = Crash::new();
        let client = crash.client(Arc::new(cluster.clone()));
        let controller = build(&client, &clock, &package);
        Self {
            cluster,
            clock,
            crash,
            client,
            package,
            controller,
        }
    }

    /// A new process: nothing in memory.
    fn restart(&mut self) {
        self.controller = build(&self.client, &self.clock, &self.package);
    }

    async fn reconcile(&self, name: &str) -> Report {
        reconcile(&self.controller, &self.package, NS, name)
            .await
            .unwrap()
    }

    fn workflow(&self, name: &str) -> Value {
        self.cluster.get(&machines(), NS, name).unwrap()["status"]["workflow"].clone()
    }
}

fn build(client: &Arc<dyn Client>, clock: &FakeClock, package: &Package) -> Controller {
    let mut config = Config::new(client.clone(), vec![package.clone()]);
    config.namespace = NS.into();
    config.now = clock.as_fn();
    controller(config).unwrap()
}

/// The creates the cloud saw with the keys of `workflow`'s steps.
fn creates_of(workflow: &Value) -> Vec<(&'static str, String)> {
    let keys: Vec<&str> = workflow["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["key"].as_str())
        .collect();
    let cloud = cloud::CLOUD.lock().unwrap();
    let ours = |(_, token): &&(&str, String)| keys.contains(&token.as_str());
    cloud.creates.iter().filter(ours).cloned().collect()
}

const READY: Report = Report::Reconciled(Phase::Ready, Reason::Converged);

#[test]
fn the_tested_package_is_the_readme_example_verbatim() {
    let readme = include_str!("../../blue-kubernetes/README.md");
    let section = readme
        .split("\n## Durable steps")
        .nth(1)
        .expect("the README has its durable-steps section");
    let block = section
        .split("```rust")
        .nth(1)
        .and_then(|rest| rest.split("\n```\n").next())
        .expect("the section opens with a rust block");
    // Rustdoc hides lines that start with `# `: the cloud helpers.
    let visible: Vec<&str> = block
        .lines()
        .skip(1)
        .filter(|line| !(line.starts_with("# ") || *line == "#"))
        .collect();
    let copy = include_str!("readme_steps/machines.rs");
    assert_eq!(
        visible.join("\n"),
        copy.trim_end(),
        "crates/blue-kubernetes/README.md's durable-steps example and \
         tests/readme_steps/machines.rs differ: copy the README's visible lines"
    );
}

#[tokio::test]
async fn a_later_pass_of_the_readme_example_runs_no_step_again() {
    let bed = Bed::new();
    bed.cluster.create(
        &machines(),
        NS,
        "later",
        json!({"reconcileInterval": "60s"}),
    );
    assert_eq!(bed.reconcile("later").await, READY);
    let first = bed.workflow("later");
    assert_eq!(first["state"], "Done", "{first}");
    // Three periodic checks, each once the interval (stretched by at
    // most a tenth) has passed.
    for check in 1..=3 {
        bed.clock.advance(66_000);
        assert_eq!(bed.reconcile("later").await, READY, "check {check}");
        assert_eq!(bed.workflow("later"), first, "check {check} started a run");
    }
    let creates = creates_of(&first);
    assert_eq!(creates.len(), 2, "one network, one machine: {creates:?}");
}

#[tokio::test]
async fn a_crash_mid_run_resumes_at_the_step_it_cut_short() {
    let mut bed = Bed::new();
    bed.cluster.create(
        &machines(),
        NS,
        "crashed",
        json!({"reconcileInterval": "60s"}),
    );
    // The machine step is recorded `Running`; the process dies before
    // its closure starts.
    bed.crash.arm(CrashAt::StepStarted("machine".into()));
    let pass = reconcile(&bed.controller, &bed.package, NS, "crashed");
    assert!(bed.crash.run(pass).await.is_none(), "the pass died");
    bed.crash.disarm();
    let cut_short = bed.workflow("crashed");
    bed.restart();
    assert_eq!(bed.reconcile("crashed").await, READY);
    let workflow = bed.workflow("crashed");
    assert_eq!(workflow["state"], "Done", "{workflow}");
    assert_eq!(workflow["run"], cut_short["run"], "the same run went on");
    let steps = workflow["steps"].as_array().unwrap();
    // The network, done before the crash, was not made again; the
    // machine step ran again under the same key.
    assert_eq!(steps[0]["attempts"], 1, "{workflow}");
    assert_eq!(steps[1]["attempts"], 2, "{workflow}");
    assert_eq!(steps[1]["key"], cut_short["steps"][1]["key"]);
    let kinds: Vec<&str> = creates_of(&workflow).iter().map(|c| c.0).collect();
    assert_eq!(kinds, ["network", "machine"]);
}
