//! kube-apiserver and etcd stopped (SIGSTOP) and killed (SIGKILL, then
//! started again) right after a batch of creates, edits and deletes.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::fleet::Fleet;
use super::{Figures, Profile};
use crate::cluster::control_plane::process::ManagedProcess;
use crate::cluster::control_plane::{Component, ControlPlane};
use crate::support::interrupt;
use crate::support::suite::Suite;
use crate::support::wait::eventually;
use crate::world::World;

#[derive(Clone, Copy, Debug)]
enum Fault {
    Stop,
    Kill,
}

pub fn run(
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
                cp.serves("/readyz")
            })?;
            fleet.wait_converged(w)?;
            recovery = Some(healed.elapsed());
            ensure!(
                w.operator()?.is_running(),
                "the operator exited during the outage"
            );
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
