//! Faults of processes: kube-apiserver and etcd stopped (SIGSTOP) and
//! killed (SIGKILL, then started again with the same flags and data) right
//! after a batch of creates, edits and deletes; and the operator SIGKILLed
//! at seeded random points.

use std::fs;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use blue_envtest::operator::processes_of;
use blue_envtest::Component;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::fleet::Fleet;
use super::order::Recorder;
use super::{after_the_faults, world};
use crate::chaos::{figure, Profile, Seed};
use crate::support::wait::eventually;
use crate::support::{self, World};

#[derive(Clone, Copy, Debug)]
enum Fault {
    Stop,
    Kill,
}

/// On a control plane of its own: the fleet converged, then `component`
/// stopped or killed for the profile's outage right after 2 creates, 2
/// edits and 1 Destroy delete; the fleet converges once it is back (the
/// recovery time a figure), the operator keeps running, and
/// [`after_the_faults`] holds.
fn converges_after(component: Component, fault: Fault) -> Result<()> {
    let outage = Profile::from_env().outage;
    support::run(world(true)?, None, |w| {
        let recorder = Recorder::start(&w.kube);
        let mut fleet = Fleet::default();
        fleet.batch(w, 4, 0, 0)?;
        fleet.wait_converged(w)?;
        fleet.batch(w, 2, 2, 1)?;
        let cp = w.control_plane();
        let pid = cp.pid(component).context("component not running")?;
        let pid = Pid::from_raw(i32::try_from(pid)?);
        // A killed component's replacement, stopped before the control plane.
        let mut respawned = None;
        match fault {
            Fault::Stop => {
                kill(pid, Signal::SIGSTOP)?;
                std::thread::sleep(outage);
                kill(pid, Signal::SIGCONT)?;
            }
            Fault::Kill => {
                kill(pid, Signal::SIGKILL)?;
                std::thread::sleep(outage);
                respawned = Some(cp.respawn(component)?);
            }
        }
        let healed = Instant::now();
        let result = (|| {
            eventually("the API server serving", Duration::from_secs(90), || {
                Ok(w.control_plane().serves("/readyz")?)
            })?;
            fleet.wait_converged(w)?;
            figure(&format!(
                "{} {fault:?} for {}s during a batch of 2 creates, 2 edits, 1 delete: converged {:.1}s after it healed",
                component.name(),
                outage.as_secs(),
                healed.elapsed().as_secs_f64()
            ));
            let running = w.operator()?.is_running();
            ensure!(running, "the operator exited during the outage");
            after_the_faults(w, &mut fleet, &recorder)
        })();
        drop(recorder);
        if let Some(mut p) = respawned {
            let _ = w.stop_operator();
            p.stop(Duration::from_secs(10))?;
        }
        result
    })
}

#[test]
fn converges_after_kube_apiserver_stop() -> Result<()> {
    converges_after(Component::ApiServer, Fault::Stop)
}

#[test]
fn converges_after_kube_apiserver_kill() -> Result<()> {
    converges_after(Component::ApiServer, Fault::Kill)
}

#[test]
fn converges_after_etcd_stop() -> Result<()> {
    converges_after(Component::Etcd, Fault::Stop)
}

#[test]
fn converges_after_etcd_kill() -> Result<()> {
    converges_after(Component::Etcd, Fault::Kill)
}

/// The operator SIGKILLed 0.1-2 s into a batch, repeatedly (the profile's
/// kills, at seeded points): its in-flight kubectl processes die with it,
/// the next start sweeps its private files, and everything converges
/// ([`after_the_faults`]).
#[test]
fn operator_sigkill_at_random_points_loses_nothing() -> Result<()> {
    let mut seed = Seed::for_test("operator_sigkill_at_random_points");
    let kills = Profile::from_env().kills;
    support::run(world(false)?, None, |w| {
        let recorder = Recorder::start(&w.kube);
        let mut fleet = Fleet::default();
        fleet.batch(w, 4, 0, 0)?;
        fleet.wait_converged(w)?;
        let mut stats = Stats::default();
        for i in 0..kills {
            w.ensure_operator()?;
            fleet.batch(w, 1, 1, i % 2)?;
            // 0.1 to 2 s: before, during and after the batch's passes.
            let delay = 100 + seed.below(1900);
            std::thread::sleep(Duration::from_millis(delay));
            kill_and_restart(w, &mut stats)?;
        }
        let restarted = Instant::now();
        fleet.wait_converged(w)?;
        figure(&format!(
            "{kills} operator SIGKILLs: {} kubectl processes in flight at the kills, all gone within {:.1}s; {} private directories left by killed operators, all swept by the next start; converged {:.1}s after the last restart",
            stats.kubectl_in_flight,
            stats.slowest_kubectl_death.as_secs_f64(),
            stats.dirs_left,
            restarted.elapsed().as_secs_f64(),
        ));
        after_the_faults(w, &mut fleet, &recorder)
    })
}

#[derive(Default)]
struct Stats {
    kubectl_in_flight: usize,
    slowest_kubectl_death: Duration,
    dirs_left: usize,
}

fn kill_and_restart(w: &mut World, stats: &mut Stats) -> Result<()> {
    let operator = w.operator()?;
    ensure!(operator.is_running(), "the operator exited on its own");
    let in_flight = processes_of(w.work()).len().saturating_sub(1);
    let killed_at = Instant::now();
    w.operator()?.crash()?;
    stats.kubectl_in_flight += in_flight;
    let what = "the killed operator's kubectl processes to die with it";
    eventually(what, Duration::from_secs(5), || {
        let left = processes_of(w.work());
        ensure!(left.is_empty(), "still running: {left:?}");
        Ok(())
    })?;
    stats.slowest_kubectl_death = stats.slowest_kubectl_death.max(killed_at.elapsed());
    let tmp = w.operator_tmp();
    stats.dirs_left += fs::read_dir(&tmp).map_or(0, |d| d.count());

    w.start_operator(&w.admin_args())?;
    let pid = w.operator()?.pid().context("the operator started")?;
    // The new operator's client sweeps at startup: only its own directory
    // (named after its pid) may remain.
    let what = "the new operator to sweep the killed one's files";
    eventually(what, Duration::from_secs(10), || {
        let foreign: Vec<_> = fs::read_dir(&tmp)?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with(&format!("blue-kubectl-{pid}-")))
            .collect();
        ensure!(foreign.is_empty(), "left behind: {foreign:?}");
        Ok(())
    })
}
