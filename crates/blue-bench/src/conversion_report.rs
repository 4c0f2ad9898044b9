//! The `conversion` part's block: each run's figures, the median of the
//! runs, and the list ratio against its target. Pure, so the rendering
//! is tested without a control plane.

use crate::measure::{median, thousands};
use crate::report::markdown_table;

/// A list at the old version may take at most this many times the same
/// list at the stored version.
pub const RATIO_TARGET: f64 = 2.0;

/// What one run measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Run {
    /// p50 of the lists at the old version (through the webhook), ms.
    pub old_ms: f64,
    /// p50 of the same lists at the stored version (no conversion), ms.
    pub stored_ms: f64,
    /// The same two p50s for lists served from the watch cache
    /// (`resourceVersion=0`), ms.
    pub cached_old_ms: f64,
    pub cached_stored_ms: f64,
    /// Reviews `/convert` answered across the cached lists.
    pub cached_reviews: f64,
    /// The operator's CPU across the old-version lists, above its idle
    /// baseline over the same wall time, per object converted, µs.
    pub cpu_us_per_object: f64,
    /// Reviews `/convert` answered across those lists (its latency
    /// histogram's count), and their time there per object (its sum), µs.
    pub reviews: f64,
    pub served_us_per_object: f64,
}

impl Run {
    /// The old-version list's p50 over the stored one's.
    pub fn ratio(&self) -> f64 {
        self.old_ms / self.stored_ms
    }

    /// The same ratio for lists served from the watch cache.
    pub fn cached_ratio(&self) -> f64 {
        self.cached_old_ms / self.cached_stored_ms
    }
}

/// How the runs were made, for the block's text.
#[derive(Clone, Debug)]
pub struct Setup {
    /// Objects in the namespace (each list holds them all).
    pub objects: usize,
    /// Lists timed at each version per run (interleaved).
    pub lists: usize,
    /// Old-version lists the CPU is measured across, per run.
    pub cpu_lists: usize,
    /// The line naming when, on which commit and under which load.
    pub context: String,
    /// The load average at the start was above the core count.
    pub busy: bool,
}

/// The block's body: a sentence on the setup, then one row per figure
/// with each run, the median of the runs, the target and the verdict.
pub fn render(setup: &Setup, runs: &[Run]) -> String {
    let runs_header = (1..=runs.len()).map(|i| format!("run {i}"));
    let header: Vec<String> = std::iter::once("measure".to_string())
        .chain(runs_header)
        .chain(["median of the runs", "target", "verdict"].map(String::from))
        .collect();
    let column = |f: fn(&Run) -> f64| -> (Vec<f64>, f64) {
        let values: Vec<f64> = runs.iter().map(f).collect();
        let mid = median(&values);
        (values, mid)
    };
    let row = |what: String, values: &[f64], mid: f64, unit: &str, target: &str, verdict: &str| {
        let cells = values.iter().map(|v| format!("{v:.2}{unit}"));
        std::iter::once(what)
            .chain(cells)
            .chain([format!("{mid:.2}{unit}"), target.into(), verdict.into()])
            .collect::<Vec<String>>()
    };
    let (ratios, ratio) = column(Run::ratio);
    let (olds, old) = column(|r| r.old_ms);
    let (storeds, stored) = column(|r| r.stored_ms);
    let (cpus, cpu) = column(|r| r.cpu_us_per_object);
    let (served, served_mid) = column(|r| r.served_us_per_object);
    let (n, objects) = (setup.objects, thousands(setup.objects as f64));
    let (cached_ratios, cached_ratio) = column(Run::cached_ratio);
    let (cached_olds, cached_old) = column(|r| r.cached_old_ms);
    let (cached_storeds, cached_stored) = column(|r| r.cached_stored_ms);
    let verdict = |ratio: f64| match ratio <= RATIO_TARGET {
        true => "met",
        false => "**missed**",
    };
    let rows = vec![
        row(
            format!(
                "a list of {objects} at v1alpha1 over the same at v1beta1 (p50s), read from etcd"
            ),
            &ratios,
            ratio,
            "x",
            "at most 2x",
            verdict(ratio),
        ),
        row(
            format!(
                "a list of {objects} at v1alpha1 over the same at v1beta1 (p50s), \
                 from the watch cache"
            ),
            &cached_ratios,
            cached_ratio,
            "x",
            "at most 2x",
            verdict(cached_ratio),
        ),
        row(
            format!("the list of {objects} at v1alpha1 (converted), p50"),
            &olds,
            old,
            " ms",
            "",
            "",
        ),
        row(
            format!("the list of {objects} at v1beta1 (stored), p50"),
            &storeds,
            stored,
            " ms",
            "",
            "",
        ),
        row(
            format!("the list of {objects} at v1alpha1 from the watch cache, p50"),
            &cached_olds,
            cached_old,
            " ms",
            "",
            "",
        ),
        row(
            format!("the list of {objects} at v1beta1 from the watch cache, p50"),
            &cached_storeds,
            cached_stored,
            " ms",
            "",
            "",
        ),
        row(
            "the operator's CPU per object converted, above idle".into(),
            &cpus,
            cpu,
            " µs",
            "reported",
            "",
        ),
        row(
            "its /convert latency per object (the webhook's metric)".into(),
            &served,
            served_mid,
            " µs",
            "reported",
            "",
        ),
    ];
    let per_list = |r: &Run| r.reviews / setup.cpu_lists as f64;
    let reviews: Vec<String> = runs.iter().map(|r| thousands(per_list(r))).collect();
    let per_review = median(&runs.iter().map(per_list).collect::<Vec<_>>());
    let per_review = thousands(n as f64 / per_review.max(1.0));
    let cached_reviews: Vec<String> = (runs.iter())
        .map(|r| thousands(r.cached_reviews / setup.lists as f64 / 2.0))
        .collect();
    let busy = match setup.busy {
        true => {
            " **A busy machine** (load above its cores at the start): the figures \
                  are noisy, for a rerun on a quiet one."
        }
        false => "",
    };
    format!(
        "{context}.{busy}\n\n\
         The v1beta1 operator (release build) serving conversion at `/convert`, its CRD \
         stored at v1beta1, {objects} LocalConfigMaps written at v1beta1 in one namespace. \
         Each run: {lists} lists at each version, interleaved, timed from the client, \
         read from etcd (no `resourceVersion`: what `kubectl get` asks for); the same from \
         the API server's watch cache (`resourceVersion=0`: how informers and reflectors \
         list; the API server keeps a cache per served version, its objects converted once \
         as they enter it: reviews per cached list, per run: {cached_reviews}); then \
         the operator's utime+stime (`/proc/PID/stat`) across {cpu_lists} more lists at \
         v1alpha1, minus the same over an idle wall time as long, divided by the objects \
         converted. Reviews `/convert` answered per list, per run: {reviews} \
         (objects per review, median: {per_review}).\n\n{table}",
        context = setup.context,
        lists = setup.lists,
        cpu_lists = setup.cpu_lists,
        reviews = reviews.join(" / "),
        cached_reviews = cached_reviews.join(" / "),
        table = markdown_table(&header, &rows),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(old_ms: f64, stored_ms: f64, cpu: f64) -> Run {
        Run {
            old_ms,
            stored_ms,
            cpu_us_per_object: cpu,
            cached_old_ms: stored_ms * 1.1,
            cached_stored_ms: stored_ms,
            cached_reviews: 0.0,
            reviews: 10_000.0,
            served_us_per_object: cpu / 2.0,
        }
    }

    fn setup(busy: bool) -> Setup {
        Setup {
            objects: 1000,
            lists: 10,
            cpu_lists: 10,
            context: "3 runs, 2026-12-07".into(),
            busy,
        }
    }

    #[test]
    fn the_verdict_follows_the_median_ratio_not_a_single_run() {
        // Ratios 1.5, 3.0 and 1.8: one run over the target, the median under.
        let runs = [
            run(30.0, 20.0, 4.0),
            run(60.0, 20.0, 6.0),
            run(36.0, 20.0, 5.0),
        ];
        let body = render(&setup(false), &runs);
        let first = body.lines().find(|l| l.contains("over the same")).unwrap();
        assert_eq!(
            first,
            "| a list of 1,000 at v1alpha1 over the same at v1beta1 (p50s), read from etcd \
             | 1.50x | 3.00x | 1.80x | 1.80x | at most 2x | met |"
        );
        let missed = render(&setup(false), &[run(50.0, 20.0, 1.0)]);
        assert!(missed.contains("| 2.50x | 2.50x | at most 2x | **missed** |"));
    }

    #[test]
    fn each_run_and_the_median_are_shown_for_every_figure() {
        let runs = [
            run(30.0, 20.0, 4.0),
            run(60.0, 20.0, 6.0),
            run(36.0, 20.0, 5.0),
        ];
        let body = render(&setup(false), &runs);
        assert!(body.contains("| measure | run 1 | run 2 | run 3 | median of the runs |"));
        assert!(body.contains("| 30.00 ms | 60.00 ms | 36.00 ms | 36.00 ms |"));
        assert!(body.contains("| 4.00 µs | 6.00 µs | 5.00 µs | 5.00 µs | reported |"));
        assert!(body.contains("| 2.00 µs | 3.00 µs | 2.50 µs | 2.50 µs | reported |"));
        assert!(body
            .contains("per list, per run: 1,000 / 1,000 / 1,000 (objects per review, median: 1)"));
    }

    #[test]
    fn the_objects_each_review_held_follow_the_reviews_per_list() {
        let whole_lists = Run {
            reviews: 10.0,
            ..run(30.0, 20.0, 4.0)
        };
        let body = render(&setup(false), &[whole_lists]);
        assert!(body.contains("per list, per run: 1 (objects per review, median: 1,000)"));
    }

    #[test]
    fn lists_from_the_watch_cache_get_a_verdict_of_their_own() {
        // From etcd 2.5x (missed); from the cache 30 over 20 ms, 1.5x (met).
        let runs = [Run {
            cached_old_ms: 30.0,
            cached_reviews: 20.0,
            ..run(50.0, 20.0, 1.0)
        }];
        let body = render(&setup(false), &runs);
        let row = |what: &str| {
            let mut rows = body.lines().filter(|l| l.starts_with('|'));
            rows.find(|l| l.contains(what)).unwrap().to_string()
        };
        assert!(row("read from etcd").ends_with("| 2.50x | 2.50x | at most 2x | **missed** |"));
        assert!(row("over the same at v1beta1 (p50s), from the watch cache")
            .ends_with("| 1.50x | 1.50x | at most 2x | met |"));
        assert!(row("at v1alpha1 from the watch cache, p50").contains("| 30.00 ms |"));
        // 20 reviews over 10 lists at each version: one per cached list.
        assert!(body.contains("reviews per cached list, per run: 1)"));
    }

    #[test]
    fn a_busy_machine_is_said_in_the_text() {
        let runs = [run(30.0, 20.0, 4.0)];
        assert!(render(&setup(true), &runs).contains("**A busy machine**"));
        assert!(!render(&setup(false), &runs).contains("busy"));
    }
}
