//! Part `references` (issue 20): how soon a resource waiting for the one
//! it refers to starts converging once that one is Ready. The PostgreSQL
//! example (release build) on the bench's API server: per round, a
//! `PostgresDatabase` naming a `PostgresServer` that does not exist yet
//! waits; the server is created; the figure runs from the watch event
//! showing the server Ready to the one showing the database leave
//! `Waiting` (its publish just before `converge`). Writes its own block.

use std::time::{Duration, Instant};

use anyhow::Result;
use postgres_operator::{package, postgres_server};
use serde_json::{json, Value};

use crate::changes::{named, Changes};
use crate::live::Live;
use crate::machine::Machine;
use crate::measure::median;
use crate::postgres::Postgres;
use crate::report::Block;
use blue_e2e::stats::percentile;
use blue_e2e::status::phase;
use blue_testbed::world::{operator, Transport};

const ROUNDS: usize = 20;
const TIMEOUT: Duration = Duration::from_secs(60);
const TARGET_MS: f64 = 50.0;

pub fn run(live: &Live, machine: &Machine) -> Result<Block> {
    let started = Instant::now();
    let bed = live.testbed("bench-references")?;
    let mut world = bed.world(Transport::Proxy);
    world.pg_binary = operator::build(&[operator::PG_PACKAGE], true)?.remove(0);
    let client = live.proxy()?;
    let samples = (|| {
        let pg = Postgres::up(&world)?;
        let ns = pg.kube.namespace().to_string();
        let open = |d| Changes::open(&live.rt, &client, &d, &ns, TIMEOUT);
        let (mut dbs, mut servers) = (
            open(package::descriptor())?,
            open(postgres_server::descriptor())?,
        );
        let is = |o: &Value, name: &str, p: &str| named(o, name) && phase(o) == p;
        let mut samples = Vec::new();
        for i in 0..ROUNDS {
            let (db, server) = (format!("referrer-{i}"), format!("referenced-{i}"));
            pg.create(&db, json!({"config": {"serverRef": {"name": server}}}))?;
            dbs.until(&format!("{db} Waiting"), |o| is(o, &db, "Waiting"))?;
            pg.create_server(&server)?;
            let ready = servers.until(&format!("{server} Ready"), |o| is(o, &server, "Ready"))?;
            let moved = dbs.until(&format!("{db} converging"), |o| {
                named(o, &db) && phase(o) != "Waiting"
            })?;
            samples.push(moved.duration_since(ready).as_secs_f64() * 1e3);
            pg.wait_ready(&db)?;
        }
        Ok::<_, anyhow::Error>(samples)
    })();
    live.rt.block_on(client.shutdown());
    drop(world);
    bed.down()?;
    let samples = samples?;
    let (p50, p95) = (median(&samples), percentile(&samples, 95.0));
    let what =
        format!("referenced resource Ready to its referrer's converge starting ({ROUNDS} rounds)");
    let row = (
        what,
        format!("p50 {p50:.1} ms, p95 {p95:.1} ms"),
        "p50 at most 50 ms",
    );
    let rows = vec![(row.0, row.1, row.2, Some(p50 <= TARGET_MS))];
    let title = ("references", "References between resources");
    Ok(machine.part_block(title, started.elapsed(), rows))
}
