//! The LocalConfigMap example under faults: the control plane's processes
//! stopped and killed, the operator SIGKILLed, permissions taken away and
//! hostile input. Every check runs the operator on one kubectl per request
//! (so a counting wrapper sees every call) and ends with what must hold
//! after any fault ([`after_the_faults`]).

mod faults;
mod fleet;
mod hostile;
mod order;
mod permissions;

use std::fs;

use anyhow::{ensure, Result};

use crate::chaos::figure;
use crate::support::{Transport, World};
use blue_envtest::operator::processes_of;
use fleet::Fleet;
use order::Recorder;

/// A check's world: a namespace on the shared control plane, or a control
/// plane of its own (`own`) for checks that break one; the operator runs.
fn world(own: bool) -> Result<World> {
    let mut w = match own {
        true => World::on_own_control_plane("chaos")?,
        false => World::new("chaos")?,
    };
    w.transport = Transport::Kubectl;
    w.start_operator(&w.admin_args())?;
    Ok(w)
}

/// What every fault must leave: each live resource Ready for its
/// generation with exactly one ConfigMap holding its latest data (none
/// lost, duplicated or rolled back) and deleted ones gone with theirs;
/// one more Destroy deletion with the watches healthy, and every Destroy
/// release observed after its ConfigMap's deletion; then
/// [`nothing_left_behind`].
fn after_the_faults(w: &mut World, fleet: &mut Fleet, recorder: &Recorder) -> Result<()> {
    w.ensure_operator()?;
    let took = fleet.wait_converged(w)?;
    println!(
        "every resource converged after the faults ({} resources, {:.1}s)",
        fleet.live_count(),
        took.as_secs_f64()
    );
    fleet.batch(w, 0, 0, 1)?;
    fleet.wait_converged(w)?;
    let (verified, unverified) = recorder.check_finalizer_order()?;
    figure(&format!(
        "{verified} Destroy deletions: ConfigMap deleted at a lower resourceVersion than the finalizer removal ({unverified} fell into watch gaps during outages)"
    ));
    ensure!(verified > 0, "no deletion was observed completely");
    nothing_left_behind(w)
}

/// The operator never exited on its own (and stops cleanly), its log has
/// no panic, and no kubectl process or private file of it is left.
fn nothing_left_behind(w: &mut World) -> Result<()> {
    let running = w.operator.as_mut().is_some_and(|o| o.is_running());
    ensure!(running, "the operator is not running");
    w.stop_operator_cleanly()?;
    let log = fs::read_to_string(w.operator_log())?;
    let panics: Vec<&str> = log.lines().filter(|l| l.contains("panicked")).collect();
    ensure!(
        panics.is_empty(),
        "{} panic lines, first: {}",
        panics.len(),
        panics[0]
    );
    let procs = processes_of(w.work());
    ensure!(procs.is_empty(), "processes left: {procs:?}");
    let left: Vec<_> = fs::read_dir(w.operator_tmp())?
        .flatten()
        .map(|e| e.path())
        .collect();
    ensure!(left.is_empty(), "files or directories left: {left:?}");
    Ok(())
}
