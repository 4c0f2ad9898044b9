//! Faults of processes: kube-apiserver and etcd stopped (SIGSTOP) and
//! killed (SIGKILL, then started again) right after a batch of creates,
//! edits and deletes; and the operator SIGKILLed at random points.

use std::fs;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::fleet::Fleet;
use super::{Figures, Profile};
use crate::cluster::control_plane::process::ManagedProcess;
use crate::cluster::control_plane::{Component, ControlPlane};
use crate::support::interrupt;
use crate::support::random::XorShift;
use crate::support::suite::Suite;
use crate::support::wait::eventually;
use crate::world::operator::processes_of;
use crate::world::World;

#[derive(Clone, Copy, Debug)]
enum Fault {
    Stop,
    Kill,
}

/// The control plane's processes stopped and killed.
pub fn control_plane(
    w: &mut World<'_>,
    cp: &ControlPlane,
    fleet: &mut Fleet,
    profile: &Profile,
    suite: &mut Suite,
    figures: &mut Figures,
    respawned: &mut Vec<ManagedProcess>,
) {
    let cases = [
        (Component::ApiServer, Fault::Stop),
        (Component::ApiServer, Fault::Kill),
        (Component::Etcd, Fault::Stop),
        (Component::Etcd, Fault::Kill),
    ];
    for (component, fault) in cases {
        let name = format!(
            "converges-after-{}-{}",
            component.name(),
            format!("{fault:?}").to_lowercase()
        );
        let mut recovery = None;
        suite.check_on(w, &name, (World::diagnose, None), |w| {
            w.ensure_operator()?;
            fleet.batch(w, 2, 2, 1)?;
            // The process as it is now: the original, or its latest replacement.
            let latest = respawned
                .iter()
                .rev()
                .find(|p| p.name() == component.name());
            let pid = latest
                .map(ManagedProcess::pid)
                .or_else(|| cp.pid(component));
            let pid = Pid::from_raw(i32::try_from(pid.context("component not running")?)?);
            match fault {
                Fault::Stop => {
                    kill(pid, Signal::SIGSTOP)?;
                    interrupt::sleep(profile.outage);
                    kill(pid, Signal::SIGCONT)?;
                }
                Fault::Kill => {
                    kill(pid, Signal::SIGKILL)?;
                    interrupt::sleep(profile.outage);
                    respawned.push(cp.respawn(component)?);
                }
            }
            let healed = Instant::now();
            eventually("the API server serving", Duration::from_secs(90), || {
                Ok(cp.serves("/readyz")?)
            })?;
            fleet.wait_converged(w)?;
            recovery = Some(healed.elapsed());
            let running = w.operator()?.is_running();
            ensure!(running, "the operator exited during the outage");
            Ok(())
        });
        if let Some(took) = recovery {
            figures.add(format!(
                "{} {fault:?} for {}s during a batch of 2 creates, 2 edits, 1 delete: converged {:.1}s after it healed",
                component.name(),
                profile.outage.as_secs(),
                took.as_secs_f64()
            ));
        }
    }
}

/// The operator SIGKILLed at random points while resources change: its
/// kubectl children must die with it, the next operator must sweep its
/// private files, and everything must converge once it stays up.
pub fn operator_kills(
    w: &mut World<'_>,
    fleet: &mut Fleet,
    profile: &Profile,
    rng: &mut XorShift,
    suite: &mut Suite,
    figures: &mut Figures,
) {
    let mut stats = Stats::default();
    let name = "operator-sigkill-at-random-points";
    suite.check_on(w, name, (World::diagnose, None), |w| {
        for i in 0..profile.kills {
            w.ensure_operator()?;
            fleet.batch(w, 1, 1, i % 2)?;
            // 0.1 to 2 s: before, during and after the batch's passes.
            let delay = 100 + rng.below(1900);
            interrupt::sleep(Duration::from_millis(delay));
            kill_and_restart(w, &mut stats)?;
        }
        let restarted = Instant::now();
        fleet.wait_converged(w)?;
        stats.recovery = Some(restarted.elapsed());
        Ok(())
    });
    figures.add(format!(
        "{} operator SIGKILLs: {} kubectl processes in flight at the kills, all gone within {:.1}s; {} private directories left by killed operators, all swept by the next start{}",
        profile.kills,
        stats.kubectl_in_flight,
        stats.slowest_kubectl_death.as_secs_f64(),
        stats.dirs_left,
        stats
            .recovery
            .map(|r| format!("; converged {:.1}s after the last restart", r.as_secs_f64()))
            .unwrap_or_default(),
    ));
}

#[derive(Default)]
struct Stats {
    kubectl_in_flight: usize,
    slowest_kubectl_death: Duration,
    dirs_left: usize,
    recovery: Option<Duration>,
}

fn kill_and_restart(w: &mut World<'_>, stats: &mut Stats) -> Result<()> {
    let operator = w.operator()?;
    ensure!(operator.is_running(), "the operator exited on its own");
    let in_flight = processes_of(&w.work).len().saturating_sub(1);
    let killed_at = Instant::now();
    w.operator()?.crash()?;
    stats.kubectl_in_flight += in_flight;
    let what = "the killed operator's kubectl processes to die with it";
    eventually(what, Duration::from_secs(5), || {
        let left = processes_of(&w.work);
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
