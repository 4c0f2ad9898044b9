//! The `webhook` part's block: the median of its rounds against the
//! targets (with the spread), then each round.

use std::time::Duration;

use super::machine::Machine;
use super::measure::median;
use super::report::{markdown_table, Block};

// The shape of a run lives beside the block that states it, so the part
// imports its report and never the other way round.
/// Creates timed per leg and round (`BLUE_BENCH_WEBHOOK_CREATES` for a
/// small proving run).
pub fn creates() -> usize {
    std::env::var("BLUE_BENCH_WEBHOOK_CREATES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(50)
}
/// Rounds measured; the block reports their median.
pub const ROUNDS: usize = 3;
/// Invalid creates sent at once per round.
pub const BURST: usize = 100;

const ADDED_TARGET_MS: f64 = 3.0;
const BURST_TARGET: Duration = Duration::from_secs(1);
const RSS_TARGET_KIB: u64 = 2048;

/// What one round measured.
pub struct Round {
    /// The p50 of the creates without the webhook, ms.
    pub without: f64,
    /// The p50 of the creates through it, ms.
    pub with: f64,
    /// The operator's CPU per admitted review, ms.
    pub admitted_cpu_ms: Option<f64>,
    /// The operator's CPU per refusal in the burst, ms.
    pub refused_cpu_ms: Option<f64>,
    /// The slowest refusal of the burst.
    pub slowest: Duration,
    pub rss_before: u64,
    pub rss_after: u64,
}

impl Round {
    fn added(&self) -> f64 {
        self.with - self.without
    }

    fn grew(&self) -> u64 {
        self.rss_after.saturating_sub(self.rss_before)
    }
}

fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.3} ms"))
}

/// The median of `f` over `rounds`, and the rounds' values.
fn over(rounds: &[Round], f: impl Fn(&Round) -> f64) -> (f64, Vec<f64>) {
    let values: Vec<f64> = rounds.iter().map(f).collect();
    (median(&values), values)
}

fn listed(values: &[f64], unit: &str, digits: usize) -> String {
    let each: Vec<String> = values.iter().map(|v| format!("{v:.digits$}")).collect();
    format!("{} {unit}", each.join(", "))
}

pub fn block(machine: &Machine, took: Duration, rounds: &[Round]) -> Block {
    let creates = creates();
    let (added, each_added) = over(rounds, Round::added);
    let spread = each_added.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        - each_added.iter().copied().fold(f64::INFINITY, f64::min);
    let (without, _) = over(rounds, |r| r.without);
    let (with, _) = over(rounds, |r| r.with);
    let cpu = |f: fn(&Round) -> Option<f64>| {
        let values: Vec<f64> = rounds.iter().filter_map(f).collect();
        (values.len() == rounds.len()).then(|| median(&values))
    };
    let (admitted, refused) = (cpu(|r| r.admitted_cpu_ms), cpu(|r| r.refused_cpu_ms));
    let (slowest, each_slowest) = over(rounds, |r| r.slowest.as_secs_f64() * 1e3);
    let (grew, each_grew) = over(rounds, |r| r.grew() as f64);
    let rows = vec![
        (
            format!("a create through the webhook, p50 added ({creates} creates each way per round, alternated)"),
            format!(
                "{added:.2} ms (rounds: {}; spread {spread:.2} ms); p50 {without:.2} ms without, {with:.2} ms with",
                listed(&each_added, "ms", 2)
            ),
            "at most 3 ms",
            Some(added <= ADDED_TARGET_MS),
        ),
        (
            "the operator's CPU per review".to_string(),
            format!(
                "{} admitted (valid dry-run creates, one after another), {} refused (the burst of {BURST}, new connections' TLS handshakes included)",
                ms(admitted),
                ms(refused)
            ),
            "reported",
            None,
        ),
        (
            format!("{BURST} invalid creates at once: the slowest refusal"),
            format!("{slowest:.0} ms (rounds: {})", listed(&each_slowest, "ms", 0)),
            "each within 1 s",
            Some(slowest <= BURST_TARGET.as_secs_f64() * 1e3),
        ),
        (
            format!("operator RSS after the {BURST} refusals, above before"),
            format!("{grew:.0} KiB (rounds: {})", listed(&each_grew, "KiB", 0)),
            "at most 2 MiB",
            Some(grew <= RSS_TARGET_KIB as f64),
        ),
    ];
    let title = ("webhook", "Admission webhook");
    let mut block = machine.part_block(title, took, rows);
    let header = [
        "round",
        "p50 without",
        "p50 with",
        "added",
        "CPU per admitted review",
        "CPU per refusal",
        "slowest refusal",
        "RSS above before",
    ]
    .map(String::from);
    let each: Vec<Vec<String>> = rounds
        .iter()
        .enumerate()
        .map(|(i, r)| {
            vec![
                (i + 1).to_string(),
                format!("{:.2} ms", r.without),
                format!("{:.2} ms", r.with),
                format!("{:.2} ms", r.added()),
                ms(r.admitted_cpu_ms),
                ms(r.refused_cpu_ms),
                format!("{} ms", r.slowest.as_millis()),
                format!("{} KiB ({} KiB)", r.grew(), r.rss_before),
            ]
        })
        .collect();
    block.body.push_str(&format!(
        "\nMedians of {ROUNDS} rounds on one operator. The creates without the \
         webhook are the same objects labelled to bypass it (an `objectSelector` \
         the bench adds), alternated with the ones through it; each create waits \
         until the operator made the one before Ready.\n\n{}",
        markdown_table(&header, &each)
    ));
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> Machine {
        let text = |s: &str| s.to_string();
        Machine {
            cores: 2,
            cpu_model: text("cpu"),
            kernel: text("6"),
            memory: text("8 GiB"),
            date: text("2026-12-07 00:00 UTC"),
            commit: text("abc1234"),
            rustc: text("rustc"),
            kubectl: text("1.32"),
            load_start: text("0.1 0.1 0.1"),
        }
    }

    fn round(without: f64, with: f64, slowest_ms: u64, grew: u64) -> Round {
        Round {
            without,
            with,
            admitted_cpu_ms: Some(0.1),
            refused_cpu_ms: None,
            slowest: Duration::from_millis(slowest_ms),
            rss_before: 10_000,
            rss_after: 10_000 + grew,
        }
    }

    #[test]
    fn the_verdicts_judge_the_median_round_and_the_spread_is_shown() {
        let rounds = [
            round(5.0, 9.0, 300, 100),
            round(6.0, 7.5, 1_500, 3_000),
            round(7.0, 8.0, 200, 50),
        ];
        let block = block(&machine(), Duration::from_secs(60), &rounds);
        let row = |what: &str| {
            let found = block.body.lines().find(|l| l.contains(what));
            found.unwrap_or_default().to_string()
        };
        let added = row("p50 added");
        assert!(
            added.contains("| 1.50 ms (rounds: 4.00, 1.50, 1.00 ms; spread 3.00 ms)"),
            "{added}"
        );
        assert!(added.ends_with("| at most 3 ms | met |"), "{added}");
        assert!(row("slowest refusal |").contains("300 ms (rounds: 300, 1500, 200 ms)"));
        assert!(row("RSS after").ends_with("| met |"));
        // A round without a CPU figure leaves the median unknown.
        assert!(row("CPU per review").contains("0.100 ms admitted"));
        assert!(row("CPU per review").contains("- refused"));
        assert_eq!(
            block
                .body
                .matches("\n| 2 | 6.00 ms | 7.50 ms | 1.50 ms |")
                .count(),
            1
        );
    }
}
