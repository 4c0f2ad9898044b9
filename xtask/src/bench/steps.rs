//! Part `steps` (issue 19's overhead target): what a durable step boundary
//! costs on the real API server. New resources are converged one at a
//! time, in process over the proxy transport (the default), by a package
//! that does nothing: as a plain converge, and as a run of 1 and of 5
//! no-op steps. The API server counts the status writes per run; the wall
//! time per run, less the plain converge's, per extra step boundary.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{ensure, Result};
use blue_kubernetes::{controller, reconcile, Config, Phase, Reason, Report as Outcome};
use blue_kubernetes_client::{proxy_client, ProxyOptions};

use super::apimetrics::Scrape;
use super::live::Live;
use super::measure::ms;
use super::package::{self, PLURAL};
use super::pick;
use super::report::{Report, Section};

/// The runs compared: steps per converge (0: a plain converge).
const STEPS: [usize; 3] = [0, 1, 5];

pub fn run(live: &mut Live, quick: bool, report: &mut Report) -> Result<()> {
    let n = pick(quick, 10, 50);
    let client = Arc::new(proxy_client(ProxyOptions::new(
        live.server.kubectl_options(),
    ))?);
    live.rt.block_on(client.start())?;
    let mut section = Section::new(
        "steps",
        &format!("Durable steps: {n} new resources converged one at a time (proxy transport)"),
        "converge | status writes per run | wall per run | per extra step boundary",
    );
    section.order = 90;
    let (mut plain, mut five_writes) = (0.0, 0.0);
    for steps in STEPS {
        let namespace = format!("steps-{steps}");
        live.server
            .create_resources(&namespace, 0..n, |_| "1h", &[])?;
        let package = package::converging(steps);
        let config =
            Config::new(client.clone(), vec![package.clone()]).with_namespace(namespace.as_str());
        let ctl = controller(config)?;
        let before = Scrape::take(&live.server)?;
        let started = Instant::now();
        for i in 0..n {
            let name = package::name(i);
            let got = live
                .rt
                .block_on(reconcile(&ctl, &package, &namespace, &name))?;
            ensure!(
                got == Outcome::Reconciled(Phase::Ready, Reason::Converged),
                "{name}: {got:?}"
            );
        }
        let wall = started.elapsed().as_secs_f64() / n as f64;
        let served = Scrape::take(&live.server)?.since(&before);
        let status = format!("{PLURAL}/status");
        let writes = ["PUT", "PATCH"]
            .map(|v| served.count(v, &status))
            .iter()
            .sum::<f64>()
            / n as f64;
        let (label, extra) = match steps {
            0 => {
                plain = wall;
                ("plain converge".to_string(), String::new())
            }
            s => (
                format!("{s} no-op step{}", if s == 1 { "" } else { "s" }),
                extra_boundary(wall - plain, s),
            ),
        };
        if steps == 5 {
            five_writes = writes;
        }
        section.row(vec![label, format!("{writes:.1}"), ms(wall), extra]);
    }
    section.note("a run of N steps writes status N + 1 times: each step's Running record, the last Done with Ready; a plain converge writes Reconciling and Ready");
    report.sections.push(section);
    report.verdict(
        "a 5-step run makes at most 6 status writes",
        format!("{five_writes:.1} per run"),
        five_writes <= 6.0,
    );
    Ok(())
}

/// The extra wall time of a run of `steps` over a plain converge, per
/// step boundary it adds (a run of N steps has N + 1, a plain one 2).
fn extra_boundary(extra: f64, steps: usize) -> String {
    match steps {
        1 => format!("none added ({:+.1} ms)", extra * 1e3),
        s => format!("{:.1} ms", extra / (s as f64 - 1.0) * 1e3),
    }
}
