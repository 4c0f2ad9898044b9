//! The rows and verdicts of the steady-state windows, the restart and the
//! writes per new resource and per deletion (issue 21's targets; the peer
//! is the yardstick).

use crate::apimetrics::operator_resource;
use crate::contender::Contender;
use crate::measure::{secs, thousands};
use crate::outcome::{Burst, Outcome, Sizes};
use crate::report::{Report, Section};
use crate::steady::{Restart, Steady};

/// A row: its name, one value per contender (NaN: not measured) and how a
/// value is shown.
pub type Row = (String, Vec<f64>, fn(f64) -> String);

fn steady_of(o: &Outcome, n: usize, interval: u64) -> Option<&Steady> {
    o.steady.iter().find(|s| s.n == n && s.interval == interval)
}

pub fn each(results: &[(Contender, Outcome)], f: &dyn Fn(&Outcome) -> f64) -> Vec<f64> {
    results.iter().map(|(_, o)| f(o)).collect()
}

pub fn rows(results: &[(Contender, Outcome)], sizes: &Sizes) -> Vec<Row> {
    let each = |f: &dyn Fn(&Outcome) -> f64| each(results, f);
    let mut out: Vec<Row> = vec![
        (
            format!("writes per new resource ({} new)", sizes.new),
            each(&|o| o.burst(|b| b.writes)),
            per,
        ),
        (
            format!("writes per Destroy deletion ({})", sizes.deletions),
            each(&|o| o.burst(|b| b.deletion_writes)),
            per,
        ),
    ];
    // No bursts ran (the reactions block): no rows of zeros.
    if results.iter().all(|(_, o)| o.burst_rounds.is_empty()) {
        out.clear();
    }
    type Figure = (&'static str, fn(&Steady) -> f64, fn(f64) -> String);
    let figures: [Figure; 9] = [
        ("operator + proxy CPU", |s| s.operator_cpu, pct),
        ("kube-apiserver CPU", |s| s.apiserver_cpu, pct),
        (
            "kube-apiserver CPU before the operator started",
            |s| s.apiserver_idle_cpu,
            pct,
        ),
        ("etcd CPU", |s| s.etcd_cpu, pct),
        (
            "periodic checks per second",
            Steady::checks_per_second,
            rate,
        ),
        ("API requests per second", Steady::requests_per_second, rate),
        ("API writes per second", Steady::writes_per_second, rate),
        (
            "status writes per second",
            Steady::status_writes_per_second,
            rate,
        ),
        (
            "requests per periodic check",
            Steady::requests_per_check,
            per,
        ),
    ];
    for &(n, interval) in &sizes.steady {
        for (what, figure, format) in figures {
            let values = each(&|o| steady_of(o, n, interval).map_or(f64::NAN, figure));
            let name = format!("{} due every {interval} s: {what}", thousands(n as f64));
            out.push((name, values, format));
        }
    }
    let Some((n, interval)) = sizes.restart else {
        return out;
    };
    type Mark = (&'static str, fn(&Restart) -> Option<f64>, fn(f64) -> String);
    let marks: [Mark; 8] = [
        ("10% checked", |r| r.quantiles[0], seconds),
        ("50% checked", |r| r.quantiles[1], seconds),
        ("90% checked", |r| r.quantiles[2], seconds),
        ("all checked", |r| r.all_checked, seconds),
        ("peak checks per second", |r| Some(r.peak_checks), rate),
        (
            "peak API requests per second",
            |r| Some(r.peak_requests),
            rate,
        ),
        ("peak requests in flight", |r| Some(r.peak_in_flight), rate),
        (
            "API requests per second until all checked",
            |r| r.all_checked.map(|_| r.requests_per_second),
            rate,
        ),
    ];
    for (what, mark, format) in marks {
        let values = each(&|o| o.restart.as_ref().and_then(mark).unwrap_or(f64::NAN));
        let name = format!(
            "restart on {} Ready due every {interval} s: {what}",
            thousands(n as f64)
        );
        out.push((name, values, format));
    }
    out
}

/// Requests per second by verb in each steady window.
pub fn requests_section(results: &[(Contender, Outcome)], verbs: &[&str]) -> Section {
    let mut header = vec!["contender", "resources", "interval"];
    header.extend(verbs);
    let mut s = Section::new(
        "steady-requests",
        "API requests per second in the steady state",
        &header.join(" | "),
    );
    s.order = 6;
    for (c, o) in results {
        for st in &o.steady {
            let by_verb = st.served.by_verb(operator_resource);
            let mut cells = vec![
                c.label.to_string(),
                thousands(st.n as f64),
                format!("{} s", st.interval),
            ];
            for verb in verbs {
                let n = by_verb.get(*verb).copied().unwrap_or(0.0);
                cells.push(rate(n / st.wall.max(1e-9)));
            }
            s.row(cells);
        }
    }
    s
}

/// Issue 21's steady-state, restart and write targets for `ours` against
/// `peer`.
pub fn verdicts(o: &Outcome, who: &str, peer: Option<&Outcome>, report: &mut Report) {
    // Zero: the new-resources stage did not run (`--from`, or it failed).
    let new_measured = !o.burst_rounds.is_empty();
    let new_writes = o.burst(|b| b.writes);
    if new_measured {
        report.verdict(
            &format!("writes per new resource ({who}): at most 5 with Events on"),
            per(new_writes),
            new_writes <= 5.0,
        );
    }
    if let Some(s) = steady_of(o, 1_000, 10) {
        report.verdict(
            &format!(
                "1,000 due every 10 s ({who}): at most 0.05 requests per periodic check, \
                 heartbeat writes included"
            ),
            per(s.requests_per_check()),
            // Judged as shown, to two decimals.
            (s.requests_per_check() * 100.0).round() <= 5.0,
        );
        // At the default heartbeat (10 minutes), each resource once per period.
        let bound = s.n as f64 / 600.0;
        report.verdict(
            &format!(
                "1,000 due every 10 s ({who}): status writes at most 1,000 per heartbeat \
                 period ({} a second)",
                rate(bound)
            ),
            rate(s.status_writes_per_second()),
            s.status_writes_per_second() <= bound,
        );
        if let Some(p) = peer.and_then(|p| steady_of(p, 1_000, 10)) {
            let above = |s: &Steady| (s.apiserver_cpu - s.apiserver_idle_cpu).max(0.0);
            report.verdict(
                &format!(
                    "1,000 due every 10 s ({who}): kube-apiserver CPU above its idle at most \
                     a quarter of the peer's"
                ),
                format!("{} vs {}", pct(above(s)), pct(above(p))),
                above(s) <= 0.25 * above(p),
            );
            let bound = if who == "kube" { 1.0 } else { 1.5 };
            report.verdict(
                &format!(
                    "1,000 due every 10 s ({who}): operator tree CPU at most {bound}x the peer's"
                ),
                format!("{} vs {}", pct(s.operator_cpu), pct(p.operator_cpu)),
                s.operator_cpu <= bound * p.operator_cpu,
            );
        }
    }
    if let Some(p) = peer.filter(|p| new_measured && !p.burst_rounds.is_empty()) {
        let wall: fn(&Burst) -> f64 = |b| b.wall;
        let gone: fn(&Burst) -> f64 = |b| b.gone;
        for (what, of) in [
            ("created at once to Ready", wall),
            ("Destroy deletions finished", gone),
        ] {
            let (ours, theirs) = (o.burst(of), p.burst(of));
            let rounds = |o: &Outcome| {
                let each: Vec<_> = o.burst_rounds.iter().map(|b| secs(of(b))).collect();
                each.join(" / ")
            };
            report.verdict(
                &format!(
                    "{what} ({who}): median of {} rounds, at most 1.3x the peer's time",
                    o.burst_rounds.len()
                ),
                format!(
                    "{} vs {} (rounds {} vs {})",
                    secs(ours),
                    secs(theirs),
                    rounds(o),
                    rounds(p)
                ),
                ours <= 1.3 * theirs,
            );
        }
    }
    if let Some(r) = &o.restart {
        report.verdict(
            &format!(
                "restart on {} Ready ({who}): every one checked within one interval ({} s)",
                thousands(r.n as f64),
                r.interval
            ),
            r.all_checked
                .map_or("not within 3 intervals".into(), seconds),
            r.all_checked.is_some_and(|t| t <= r.interval as f64),
        );
    }
}

/// Cores as a percentage of one, to 0.1% (idle figures are small).
pub fn pct(cores: f64) -> String {
    format!("{:.1}%", 100.0 * cores)
}

fn rate(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

fn per(v: f64) -> String {
    format!("{v:.2}")
}

fn seconds(v: f64) -> String {
    format!("{v:.0} s")
}
