//! `cargo xtask chaos`: faults and hostile input against a real API server,
//! on the e2e testbed with a schema-less CRD (so malformed input reaches the
//! controller). The checks and figures: `xtask/README.md`, "Chaos".

mod faults;
mod fleet;
mod hostile;
mod order;
mod permissions;

use std::fs;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};

use crate::cluster::{manifests, Mode};
use crate::support::interrupt;
use crate::support::kube::Kube;
use crate::support::processes::nothing_left;
use crate::support::random::XorShift;
use crate::support::suite::Suite;
use crate::support::wait::eventually;
use crate::world::operator::processes_of;
use crate::world::{Testbed, Transport, World};
use blue_envtest::random_hex;
use fleet::Fleet;

pub const USAGE: &str = "\
cargo xtask chaos                     faults and hostile input against a local control plane (about 3 minutes)
cargo xtask chaos --long              ... longer outages, more operator kills, every missing permission
    [--only postgres]                 only the PostgreSQL scenarios
    [--seed N]                        replay a run's random kill points (each run prints its seed)";

/// How hard to push.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    /// How long each control-plane fault lasts.
    pub outage: Duration,
    /// Operator SIGKILLs.
    pub kills: usize,
    /// How long the operator runs with each missing permission.
    pub forbidden_window: Duration,
    /// Every permission in turn (else the two writes only).
    pub every_permission: bool,
}

impl Profile {
    const SHORT: Profile = Profile {
        outage: Duration::from_secs(5),
        kills: 4,
        forbidden_window: Duration::from_secs(24),
        every_permission: false,
    };
    const LONG: Profile = Profile {
        outage: Duration::from_secs(20),
        kills: 40,
        forbidden_window: Duration::from_secs(90),
        every_permission: true,
    };
}

#[derive(Debug, PartialEq, Eq)]
struct Args {
    profile: Profile,
    seed: Option<u64>,
    only_postgres: bool,
}

fn parse(args: &[String]) -> Result<Args> {
    let mut parsed = Args {
        profile: Profile::SHORT,
        seed: None,
        only_postgres: false,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match (arg.as_str(), it.clone().next().map(String::as_str)) {
            ("--long", _) => parsed.profile = Profile::LONG,
            ("--only", Some("postgres")) => parsed.only_postgres = it.next().is_some(),
            ("--seed", Some(n)) if n.parse::<u64>().is_ok() => {
                parsed.seed = n.parse().ok();
                it.next();
            }
            _ => bail!("usage:\n{USAGE}"),
        }
    }
    Ok(parsed)
}

/// Figures printed at the end (and quoted in the README).
#[derive(Default)]
pub struct Figures(Vec<String>);

impl Figures {
    fn add(&mut self, line: String) {
        println!("  figure: {line}");
        self.0.push(line);
    }
}

pub fn main(args: &[String]) -> Result<()> {
    interrupt::install()?;
    let parsed = parse(args)?;
    let random = u64::from_str_radix(&random_hex(8)?, 16)?;
    let seed = parsed.seed.unwrap_or(random);
    let (profile, only_postgres) = (parsed.profile, parsed.only_postgres);
    println!("seed {seed}: `--seed {seed}` replays this run's kill points");
    if only_postgres {
        return run_tests(&parsed, seed);
    }
    let rng = &mut XorShift::new(seed);
    let started = Instant::now();
    let testbed = Testbed::up("chaos", &Mode::Local, None)?;
    // One kubectl per request, so the counting wrapper sees every call.
    let mut world = testbed.world(Transport::Kubectl);
    let mut suite = Suite::default();
    let mut figures = Figures::default();
    let mut respawned = Vec::new();
    if !only_postgres {
        let cp = testbed.cluster.control_plane();
        let cp = cp.context("chaos runs against its own local control plane")?;
        loosen_crd(&world.kube)?;
        let counter = permissions::Counter::install(&world.work)?;
        let recorder = order::Recorder::start(&world.kube);
        world.cel = false;
        world.operator_env = counter.env("admin");
        world.start_operator(&world.admin_args())?;
        println!(
            "setup: schema-less CRD, operator log {} ({:.1}s)",
            world.operator_log().display(),
            started.elapsed().as_secs_f64()
        );
        let (w, fleet) = (&mut world, &mut Fleet::default());
        suite.check("fleet-converges-before-faults", || {
            fleet.batch(w, 4, 0, 0)?;
            fleet.wait_converged(w).map(drop)
        });
        let (suite, figures) = (&mut suite, &mut figures);
        faults::control_plane(w, cp, fleet, &profile, suite, figures, &mut respawned);
        faults::operator_kills(w, fleet, &profile, rng, suite, figures);
        hostile::run(w, suite);
        permissions::run(w, &counter, fleet, &profile, suite, figures);
        suite.check("every-resource-converges-after-the-faults", || {
            w.ensure_operator()?;
            let took = fleet.wait_converged(w)?;
            let (n, secs) = (fleet.live_count(), took.as_secs_f64());
            println!("  ({n} resources, {secs:.1}s)");
            Ok(())
        });
        suite.check("finalizers-removed-only-after-absence-observed", || {
            let (verified, unverified) = recorder.check_finalizer_order()?;
            figures.add(format!(
                "{verified} Destroy deletions: ConfigMap deleted at a lower resourceVersion than the finalizer removal ({unverified} fell into watch gaps during outages)"
            ));
            ensure!(verified > 0, "no deletion was observed completely");
            Ok(())
        });
    }
    if !only_postgres {
        final_checks(&mut world, &mut suite);
    }

    drop(world);
    for mut p in respawned {
        let _ = p.stop(Duration::from_secs(10));
    }
    let gone = testbed.down()?;
    suite.run("cleanup", || Ok(nothing_left(&gone)?));

    println!("figures:");
    for line in &figures.0 {
        println!("  {line}");
    }
    let took = started.elapsed().as_secs_f64();
    let harness = suite.finish("chaos", &format!("in {took:.1}s (seed {seed})"));
    // The checks that are `#[test]`s of blue-e2e (`tests/chaos`), with the
    // same profile and seed.
    let tests = run_tests(&parsed, seed);
    harness.and(tests)
}

/// `cargo test -p blue-e2e --test chaos`, the profile and the seed passed
/// as the environment variables the tests read (figures shown).
fn run_tests(parsed: &Args, seed: u64) -> Result<()> {
    crate::support::debian::ensure_postgres()?;
    let profile = match parsed.profile == Profile::LONG {
        true => "long",
        false => "short",
    };
    let filter = parsed.only_postgres.then_some("postgres::");
    let mut cargo = crate::support::cargo::command();
    cargo
        .args(["test", "--package", "blue-e2e", "--test", "chaos", "--"])
        .args(filter)
        .args(["--nocapture", "--test-threads=4"])
        .env("BLUE_CHAOS_PROFILE", profile)
        .env("BLUE_CHAOS_SEED", seed.to_string());
    // The tests stop their operators with SIGTERM: not blocked in them.
    let status = interrupt::with_default_mask(|| cargo.status()).context("running cargo test")?;
    ensure!(status.success(), "the chaos tests failed ({status})");
    Ok(())
}

/// Replaces the CRD's schema with "anything goes", as on a cluster whose
/// CRD has no structural schema: the controller alone must refuse bad input.
fn loosen_crd(kube: &Kube) -> Result<()> {
    let mut crd = kube
        .get("crd", manifests::CRD_NAME)?
        .context("the CRD is installed")?;
    for version in crd["spec"]["versions"]
        .as_array_mut()
        .context("CRD versions")?
    {
        version["schema"] = serde_json::json!({"openAPIV3Schema": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
        }});
    }
    kube.ok(&["replace", "-f", "-"], Some(&crd.to_string()))?;
    // The API server serves the new schema after a moment.
    let what = "the loose schema is served";
    eventually(what, Duration::from_secs(30), || {
        let probe = crate::cluster::manifests::manifest("chaos-probe", serde_json::json!("text"));
        let run = kube.run(&["create", "--dry-run=server", "-f", "-"], Some(&probe))?;
        ensure!(run.ok, "a string spec is still refused");
        Ok(())
    })?;
    Ok(())
}

/// What a crashed or stopped operator must not leave behind, checked at the
/// end of the run (the operator still running until then).
fn final_checks(w: &mut World<'_>, suite: &mut Suite) {
    suite.check("operator-never-exited-on-its-own", || {
        let running = w.operator.as_mut().is_some_and(|o| o.is_running());
        ensure!(running, "the operator is not running");
        w.stop_operator_cleanly()
    });
    suite.check("no-panic-in-the-operator-log", || {
        let log = fs::read_to_string(w.operator_log())?;
        let panics: Vec<&str> = log.lines().filter(|l| l.contains("panicked")).collect();
        ensure!(
            panics.is_empty(),
            "{} panic lines, first: {}",
            panics.len(),
            panics[0]
        );
        Ok(())
    });
    suite.check("no-kubectl-or-temp-file-left-by-the-operators", || {
        let procs = processes_of(&w.work);
        ensure!(procs.is_empty(), "processes left: {procs:?}");
        let left: Vec<_> = fs::read_dir(w.operator_tmp())?
            .flatten()
            .map(|e| e.path())
            .collect();
        ensure!(left.is_empty(), "files or directories left: {left:?}");
        Ok(())
    });
}
