//! `cargo xtask demo`: the example operator on a local control plane, its
//! sample resource, status, ConfigMap and log shown as they change.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use blue_testbed::cluster::manifests::SAMPLE;
use blue_testbed::cluster::Mode;
use blue_testbed::support::interrupt;
use blue_testbed::support::kube::{Kube, LCM};
use blue_testbed::world::operator::{log_since, Operator};
use blue_testbed::world::{Testbed, Transport};

pub const USAGE: &str = "\
cargo xtask demo                      local control plane + example operator + a sample resource; Ctrl-C cleans up
cargo xtask demo --once               ... exit (and clean up) once the sample is Ready
    [--transport proxy|kubectl]       the operator's transport (default proxy)";

/// The sample's name (`manifests/sample.yaml`).
const SAMPLE_NAME: &str = "demo";
const WATCH_EVERY: Duration = Duration::from_millis(300);
/// How long `--once` waits for Ready.
const ONCE_DEADLINE: Duration = Duration::from_secs(120);

pub fn main(args: &[String]) -> Result<()> {
    interrupt::install()?;
    let (once, transport) = parse(args)?;
    say("the very first run builds kube-apiserver (about 4 minutes)");
    let testbed = Testbed::up("demo", &Mode::Local, Some("default"))?;
    let mut world = testbed.world(transport);
    let kube = world.kube.clone();
    // The operator's defaults (poll period and all), as a user would run it.
    world.start_operator(&world.connect_args())?;
    say("operator started");

    kube.apply(SAMPLE)?;
    say("created the sample: examples/local-configmap/manifests/sample.yaml");
    hints(&kube, once);

    let mut log_offset = 0;
    let op = world.operator()?;
    let outcome = watch(&kube, op, once, &mut log_offset);
    print_new_log(op, &mut log_offset, false);

    say("cleaning up");
    let status = op.stop()?;
    print_new_log(op, &mut log_offset, true);
    drop(world);
    testbed.down()?;
    say(&format!(
        "operator exited ({status}); control plane stopped; temporary files removed"
    ));
    outcome
}

/// `--transport X` anywhere, and whether to stop once Ready (`--once`).
fn parse(args: &[String]) -> Result<(bool, Transport)> {
    let mut transport = Transport::Proxy;
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "--transport" {
            transport = Transport::parse(it.next().context("--transport needs a value")?)?;
        } else {
            rest.push(arg.clone());
        }
    }
    match &rest[..] {
        [] => Ok((false, transport)),
        [once] if once == "--once" => Ok((true, transport)),
        _ => bail!("usage:\n{USAGE}"),
    }
}

fn say(message: &str) {
    println!("[demo] {message}");
}

fn hints(kube: &Kube, once: bool) {
    let k = kube.display_prefix();
    println!("       try, from another terminal while it runs:");
    println!("         {k} get localconfigmaps");
    println!(
        "         {k} patch localconfigmap {SAMPLE_NAME} --type=merge -p '{{\"spec\":{{\"config\":{{\"data\":{{\"greeting\":\"bonjour\"}}}}}}}}'"
    );
    println!(
        "         {k} patch configmap {SAMPLE_NAME} --type=merge -p '{{\"data\":{{\"greeting\":\"drift\"}}}}'   # repaired within 10s"
    );
    println!(
        "         {k} patch localconfigmap {SAMPLE_NAME} --type=merge -p '{{\"spec\":{{\"state\":\"stopped\"}}}}'"
    );
    match once {
        false => say("watching; press Ctrl-C to stop and clean up"),
        true => say("watching until the sample is Ready (--once)"),
    }
}

/// Prints status, ConfigMap and operator log changes until Ctrl-C (or,
/// `once`, until the sample is Ready).
fn watch(kube: &Kube, op: &mut Operator, once: bool, log_offset: &mut u64) -> Result<()> {
    let started = Instant::now();
    let mut last_status = String::new();
    let mut last_data = String::new();
    let mut ready = false;
    loop {
        print_new_log(op, log_offset, false);
        let at = started.elapsed().as_secs_f64();
        match kube.get(LCM, SAMPLE_NAME) {
            Ok(Some(r)) => {
                let line = summary(&r);
                if line != last_status {
                    println!("[+{at:5.1}s] localconfigmap/{SAMPLE_NAME}: {line}");
                    last_status = line;
                }
                ready = r["status"]["phase"] == "Ready"
                    && r["status"]["observedGeneration"] == r["metadata"]["generation"];
            }
            Ok(None) => {
                if last_status != "absent" {
                    println!("[+{at:5.1}s] localconfigmap/{SAMPLE_NAME}: absent");
                    last_status = "absent".into();
                }
            }
            Err(err) => println!("[+{at:5.1}s] reading the resource failed: {err:#}"),
        }
        if let Ok(cm) = kube.get("configmap", SAMPLE_NAME) {
            let data = cm.map_or("absent".to_string(), |cm| {
                format!("data {}", cm.get("data").cloned().unwrap_or(Value::Null))
            });
            if data != last_data {
                println!("[+{at:5.1}s] configmap/{SAMPLE_NAME}: {data}");
                last_data = data;
            }
        }
        if !op.is_running() {
            bail!("the operator exited unexpectedly; see its log above");
        }
        if once && ready {
            return Ok(());
        }
        if once && started.elapsed() > ONCE_DEADLINE {
            bail!("the sample was not Ready within {ONCE_DEADLINE:?}");
        }
        if interrupt::sleep(WATCH_EVERY) {
            return Ok(());
        }
    }
}

/// `phase=Ready Ready=True/Converged Reconciling=False Stalled=False generation 1/1 retries 0`.
fn summary(r: &Value) -> String {
    let s = &r["status"];
    if s.is_null() {
        return "no status yet".into();
    }
    let conditions: Vec<String> = s["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let (kind, status) = (
                c["type"].as_str().unwrap_or("?"),
                c["status"].as_str().unwrap_or("?"),
            );
            if kind == "Ready" {
                format!("{kind}={status}/{}", c["reason"].as_str().unwrap_or("?"))
            } else {
                format!("{kind}={status}")
            }
        })
        .collect();
    let number = |v: &Value| v.as_i64().map_or("-".to_string(), |n| n.to_string());
    format!(
        "phase={} {} generation {}/{} retries {}",
        s["phase"].as_str().unwrap_or("?"),
        conditions.join(" "),
        number(&s["observedGeneration"]),
        number(&r["metadata"]["generation"]),
        number(&s["retryCount"])
    )
}

/// Prints the operator's log lines written since `offset` (complete lines
/// only, unless `all`).
fn print_new_log(op: &Operator, offset: &mut u64, all: bool) {
    let new = log_since(op.log(), *offset);
    let end = match all {
        true => new.len(),
        false => new.rfind('\n').map_or(0, |i| i + 1),
    };
    for line in new[..end].lines() {
        if !line.starts_with("===") {
            println!("           operator | {line}");
        }
    }
    *offset += end as u64;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_choose_when_to_stop() {
        let args = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(parse(&[]).unwrap(), (false, Transport::Proxy));
        assert_eq!(
            parse(&args(&["--once", "--transport", "kubectl"])).unwrap(),
            (true, Transport::Kubectl)
        );
        assert!(parse(&args(&["--transport", "http"])).is_err());
        assert!(parse(&args(&["--for", "5"])).is_err());
        assert!(parse(&args(&["--once", "--once"])).is_err());
    }

    #[test]
    fn summaries_show_phase_conditions_and_generations() {
        let r = serde_json::json!({
            "metadata": {"generation": 2},
            "status": {
                "phase": "Ready", "observedGeneration": 2, "retryCount": 0,
                "conditions": [
                    {"type": "Ready", "status": "True", "reason": "Converged"},
                    {"type": "Stalled", "status": "False", "reason": "Converged"}
                ]
            }
        });
        assert_eq!(
            summary(&r),
            "phase=Ready Ready=True/Converged Stalled=False generation 2/2 retries 0"
        );
        assert_eq!(summary(&serde_json::json!({})), "no status yet");
    }
}
