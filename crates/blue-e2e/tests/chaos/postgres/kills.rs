//! The PostgreSQL operator SIGKILLed at seeded points of its multi-step
//! runs, and what each kill did.

use std::time::{Duration, Instant, SystemTime};

use anyhow::{ensure, Context, Result};
use serde_json::{json, Value};

use super::world::Postgres;
use crate::chaos::Seed;
use crate::support::name_of;
use crate::support::wait::{poll, DEADLINE};
use blue_e2e::postgres::PGDB;
use blue_e2e::stats::percentile;
use blue_envtest::operator::{log_len, log_since};

/// New resources per kill round (their runs overlap, 4 workers).
const NEW_PER_ROUND: usize = 4;
/// A kill strikes up to this long after a round's last create. A run
/// takes about 200 ms, so a late kill misses every run of its round: with
/// 3 resources a round and 600 ms, twelve rounds once cut nothing short
/// (seed 4998565844515874382).
const KILL_WITHIN_MS: u64 = 400;
/// The operator's first retry delay (the controller's default): what a
/// killed run must not wait for, since a process death is not a failure.
const RETRY_DELAY_S: f64 = 1.0;

/// What the kills did.
#[derive(Default)]
pub struct Kills {
    kills: usize,
    /// Converge runs recorded Running at a kill (so cut short), and delete runs.
    converges: usize,
    deletes: usize,
    /// Step attempts that re-ran an interrupted step (the audit).
    reruns: usize,
    /// Seconds from a restart until the operator was up (watching), and
    /// from it until each cut-short converge run was recorded Done.
    startups: Vec<f64>,
    recoveries: Vec<f64>,
    /// `recoveries` less the startup of their restart.
    after_up: Vec<f64>,
    /// From the restarted operator up until each run's first step (or,
    /// with nothing left to run, its end): how long it waited.
    resumed: Vec<f64>,
    /// Killed runs whose steps show an attempt beyond the one the kill cut
    /// short: a failed pass, so a retry delay, came between.
    pub retried: Vec<String>,
}

impl Kills {
    pub fn figure(&self) -> String {
        let spread = |v: &[f64]| {
            let p = |q| percentile(v, q);
            format!(
                "{:.2}/{:.2}/{:.2}/{:.2}s",
                p(0.0),
                p(50.0),
                p(95.0),
                p(100.0)
            )
        };
        format!(
            "postgres-operator SIGKILLed {} times at random points: {} converge and {} delete runs cut short, {} interrupted steps re-run, no Done step twice; the killed converge runs resumed min/p50/p95/max {} and finished {} after the restarted operator was up ({} after the restart, against a {RETRY_DELAY_S:.1}s retry delay; p50 {:.2}s to start)",
            self.kills, self.converges, self.deletes, self.reruns, spread(&self.resumed),
            spread(&self.after_up), spread(&self.recoveries), percentile(&self.startups, 50.0)
        )
    }
}

/// Rounds of: new resources (and a deletion every other round), a SIGKILL
/// at a random point of their runs, a restart, and every resource Ready;
/// then one role and database each, no orphans, every Secret logging in,
/// the audit clean and no password in the log.
pub fn sigkill_during_steps(
    pg: &mut Postgres,
    rounds: usize,
    rng: &mut Seed,
    k: &mut Kills,
) -> Result<()> {
    let spec = json!({"deletionPolicy": "Destroy", "reconcileInterval": "10m"});
    let mut live: Vec<String> = Vec::new();
    // Runs are short: up to three times the rounds, until a kill cut one.
    for round in 0..3 * rounds {
        if round >= rounds && k.converges + k.deletes > 0 {
            break;
        }
        pg.ensure_operator()?;
        for i in 0..NEW_PER_ROUND {
            live.push(format!("kill-{round}-{i}"));
            pg.create(&live[live.len() - 1], spec.clone())?;
        }
        if round % 2 == 1 {
            let gone = live.remove(0);
            pg.kube.delete(PGDB, &gone)?;
        }
        std::thread::sleep(Duration::from_millis(rng.below(KILL_WITHIN_MS)));
        pg.operator.as_mut().context("no operator")?.crash()?;
        k.kills += 1;
        // The runs recorded Running now were cut short: (name, run, event,
        // the step cut short or "").
        let resources = pg.kube.items(&["get", PGDB])?;
        let open: Vec<[String; 4]> = resources.iter().filter_map(open_run).collect();
        k.deletes += open
            .iter()
            .filter(|[.., event, _]| event == "delete")
            .count();
        let offset = log_len(&pg.log());
        pg.start_operator(&[])?;
        let (restarted, clock) = (Instant::now(), SystemTime::now());
        let secs_since = |t: SystemTime| t.duration_since(clock).unwrap_or_default().as_secs_f64();
        let up = || log_since(&pg.log(), offset).contains("watching ");
        let every = Duration::from_millis(10);
        poll("the restarted operator up", DEADLINE, every, || {
            ensure!(up(), "not yet");
            Ok(())
        })?;
        let startup = restarted.elapsed().as_secs_f64();
        k.startups.push(startup);
        let all = pg.wait_all_ready(&live)?;
        for [name, run, _, cut] in open.iter().filter(|[.., event, _]| event == "create") {
            let r = all
                .iter()
                .find(|r| name_of(r) == name)
                .context("a killed run's resource")?;
            let [resumed, end] =
                finished(r, run, clock).with_context(|| format!("{name}'s killed run"))?;
            k.retried
                .extend(retried(r, cut).map(|step| format!("{name}: {step}")));
            let (took, waited) = (secs_since(end), secs_since(resumed));
            k.resumed.push((waited - startup).max(0.0));
            k.converges += 1;
            k.recoveries.push(took);
            k.after_up.push((took - startup).max(0.0));
        }
    }
    live.sort();
    let killed: Vec<&str> = live
        .iter()
        .map(String::as_str)
        .filter(|n| n.starts_with("kill-"))
        .collect();
    let each = (killed.join(","), killed.join(","));
    let found = pg.names_like("kill-%")?;
    ensure!(
        found == each,
        "(roles, databases) are {found:?}, want {each:?}"
    );
    for name in &live {
        pg.app_login(name)
            .with_context(|| format!("{name}'s Secret"))?;
    }
    k.reruns = pg.check_audit()?.reruns;
    pg.log_holds_no_password(&live)?;
    ensure!(
        k.converges + k.deletes > 0,
        "no kill cut a run short in three times the rounds (replay with the seed, or raise NEW_PER_ROUND)"
    );
    Ok(())
}

fn open_run(r: &Value) -> Option<[String; 4]> {
    let workflow = &r["status"]["workflow"];
    let text = |k: &str| workflow[k].as_str().unwrap_or("").to_string();
    let steps = workflow["steps"].as_array().map_or(&[][..], Vec::as_slice);
    let cut = steps.iter().find(|s| s["state"] == "Running");
    let cut = cut.and_then(|s| s["name"].as_str()).unwrap_or("");
    let running = workflow["state"] == "Running";
    let name = name_of(r).to_string();
    running.then(|| [name, text("run"), text("event"), cut.into()])
}

/// The steps of `r`'s finished run started more often than once, or twice
/// for `cut`, the step the kill cut short (`name (n attempts)`).
fn retried<'a>(r: &'a Value, cut: &'a str) -> impl Iterator<Item = String> + 'a {
    let steps = r["status"]["workflow"]["steps"].as_array();
    steps.into_iter().flatten().filter_map(move |s| {
        let (name, attempts) = (s["name"].as_str()?, s["attempts"].as_u64()?);
        let allowed = if name == cut { 2 } else { 1 };
        (attempts > allowed).then(|| format!("{name} ({attempts} attempts)"))
    })
}

/// When the process restarted at `since` resumed `r`'s run `run` (its
/// first step record, or the end when no step was left) and when it
/// recorded it Done: the killed run itself, not a new one.
fn finished(r: &Value, run: &str, since: SystemTime) -> Result<[SystemTime; 2]> {
    let workflow = &r["status"]["workflow"];
    let (id, state) = (&workflow["run"], &workflow["state"]);
    ensure!(id == run && state == "Done", "run {id} is {state}");
    let time = |t: &Value| t.as_str().and_then(|t| humantime::parse_rfc3339(t).ok());
    let end = time(&workflow["endTime"]).context("no endTime")?;
    let steps = workflow["steps"].as_array().map_or(&[][..], Vec::as_slice);
    let started = steps.iter().filter_map(|s| time(&s["startTime"]));
    let resumed = started.filter(|t| *t >= since).min().unwrap_or(end);
    Ok([resumed, end])
}
