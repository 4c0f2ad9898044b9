//! `blue-bench`: what the controller costs and how it scales, run through
//! `cargo xtask bench` (a release build: measurements need optimised code).
//! The parts (`--only`) and what each measures: `args::USAGE` and
//! `BENCHMARKS.md`; the blocks a run writes there, between their markers,
//! and under `target/bench`.

mod api_server;
mod apimetrics;
mod args;
mod block;
mod changes;
mod contender;
mod conversion;
mod conversion_report;
mod convert_metric;
mod election;
mod harness;
mod idle;
mod live;
mod machine;
mod measure;
mod migration;
mod operator_webhook;
mod operators;
mod operators_report;
mod outcome;
mod peer;
mod postgres;
mod progress;
mod random;
mod references;
mod report;
mod resource;
mod scale_out;
mod stage;
mod steady;
mod steady_report;
mod webhook;
mod webhook_report;
mod workspace;

use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;

use args::{Args, USAGE};
use machine::Machine;
use measure::{core_pct, CpuSnapshot};
use progress::timed;
use report::Report;
use workspace::{workspace_root, write_blocks};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("usage (cargo xtask bench runs a release build of this):\n{USAGE}");
        return ExitCode::SUCCESS;
    }
    let result = Args::parse(&args).and_then(|parsed| {
        anyhow::ensure!(
            !cfg!(debug_assertions),
            "measurements need optimised code: run `cargo xtask bench` (a release build)"
        );
        run(&parsed)
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<()> {
    let started = Instant::now();
    let machine = Machine::gather();
    let mut report = Report::default();
    eprintln!(
        "[bench] release build, {} cores, load {}{}",
        machine.cores,
        machine.load_start,
        if args.quick { ", quick mode" } else { "" }
    );
    let cpu0 = CpuSnapshot::take();
    let t = Instant::now();
    let mut live = live::Live::start()?;
    eprintln!(
        "[bench] control plane ready at {} in {:.1}s",
        live.server.cp.server(),
        t.elapsed().as_secs_f64()
    );
    let result = (|| {
        let wants = |part| args.parts.contains(&part);
        if wants("operators") {
            let built = match args.build_peer {
                true => Some(peer::build(&workspace_root())?),
                false => None,
            };
            let options = operators::Options {
                quick: args.quick,
                sizes: args.sizes.clone(),
                reactions_only: args.reactions_only,
                runs: args.runs,
                from: args.from,
                block: args.block.map(std::time::Duration::from_secs),
                contenders: args.contenders.clone(),
                peer: args.peer.as_deref().or(built.as_deref()),
                workers: args.workers,
                log_level: args.operator_log.clone(),
            };
            timed("operators", || {
                operators::run(&mut live, &options, &mut report)
            })?;
        }
        type Part = fn(&live::Live, &Machine) -> Result<report::Block>;
        let own_blocks: [(&str, Part); 5] = [
            ("scale-out", scale_out::run),
            ("references", references::run),
            ("webhook", webhook::run),
            ("migration", migration::run),
            ("conversion", conversion::run),
        ];
        for (part, run) in own_blocks.into_iter().filter(|(p, _)| wants(p)) {
            let block = timed(part, || run(&live, &machine))?;
            println!("{}", block.body);
            write_blocks(&workspace_root().join("BENCHMARKS.md"), &[block])?;
        }
        Ok::<_, anyhow::Error>(())
    })();
    let live::Live { rt, server, .. } = live;
    drop(rt);
    server.cp.stop()?;
    result?;
    report.sections.sort_by_key(|s| s.order);
    let total = started.elapsed().as_secs_f64();
    let whole = cpu0.since();

    let text = report::terminal(&report);
    println!("{text}");
    let other = format!(
        "{} of a core on average over the whole run",
        core_pct(whole.other, whole.wall)
    );
    let mut blocks = vec![machine.block(&args::command(args), total, other)];
    blocks.extend(report::blocks(&report));
    let out = args.out.clone().unwrap_or_else(|| {
        if args.full() {
            workspace_root().join("BENCHMARKS.md")
        } else {
            workspace_root().join("target/bench/BENCHMARKS.partial.md")
        }
    });
    write_blocks(&out, &blocks)?;
    eprintln!("[bench] wrote {} ({:.0}s in all)", out.display(), total);
    Ok(())
}
