//! What the operator's own metrics say its conversion webhook served:
//! the reviews `/convert` answered and their time there, from
//! `controller_runtime_webhook_latency_seconds` (the `webhook` label is
//! the path served).

use blue_kubernetes::versions::Conversion;

/// Reviews answered at `/convert` and the seconds spent answering them,
/// since the operator started.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Served {
    pub reviews: f64,
    pub seconds: f64,
}

impl Served {
    /// What was served between `self` (earlier) and `later`.
    pub fn until(self, later: Served) -> Served {
        Served {
            reviews: later.reviews - self.reviews,
            seconds: later.seconds - self.seconds,
        }
    }
}

/// The `/convert` histogram's count and sum in a `/metrics` text (zero
/// before its first review).
pub fn parse(text: &str) -> Served {
    let label = format!("webhook=\"{}\"", Conversion::PATH);
    let value = |suffix: &str| -> f64 {
        let name = format!("controller_runtime_webhook_latency_seconds_{suffix}{{");
        let lines = text.lines().filter(|l| l.starts_with(&name));
        let ours = lines.filter(|l| l.split('}').next().is_some_and(|ls| ls.contains(&label)));
        ours.filter_map(|l| l.rsplit(' ').next()?.trim().parse::<f64>().ok())
            .sum()
    };
    Served {
        reviews: value("count"),
        seconds: value("sum"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
# TYPE controller_runtime_webhook_latency_seconds histogram
controller_runtime_webhook_latency_seconds_sum{webhook=\"/validate-examples-blue-dev-v1alpha1-localconfigmap\"} 9.5
controller_runtime_webhook_latency_seconds_count{webhook=\"/validate-examples-blue-dev-v1alpha1-localconfigmap\"} 90
controller_runtime_webhook_latency_seconds_bucket{le=\"0.001\",webhook=\"/convert\"} 2
controller_runtime_webhook_latency_seconds_sum{webhook=\"/convert\"} 0.25
controller_runtime_webhook_latency_seconds_count{webhook=\"/convert\"} 12
controller_runtime_webhook_requests_total{code=\"200\",webhook=\"/convert\"} 12
# EOF
";

    #[test]
    fn only_the_convert_histogram_is_read() {
        assert_eq!(
            parse(TEXT),
            Served {
                reviews: 12.0,
                seconds: 0.25
            }
        );
    }

    #[test]
    fn before_the_first_review_nothing_is_served_and_deltas_subtract() {
        assert_eq!(parse("# EOF\n"), Served::default());
        let later = Served {
            reviews: 22.0,
            seconds: 0.75,
        };
        assert_eq!(
            parse(TEXT).until(later),
            Served {
                reviews: 10.0,
                seconds: 0.5
            }
        );
    }
}
