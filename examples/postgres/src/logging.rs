//! The operator's log: `tracing` events to stderr, as text or JSON lines,
//! filtered by `RUST_LOG` (`target=level,...`; default: info for the
//! operator and the controller, warnings for everything else).

use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

/// The filter used when `RUST_LOG` is unset or empty.
pub const DEFAULT_FILTER: &str =
    "warn,postgres_operator=info,blue_kubernetes=info,blue_kubernetes_client=info";

/// The filter `RUST_LOG` asks for, or [`DEFAULT_FILTER`]. An unparsable
/// value falls back to the default (and says so) rather than silencing
/// the log.
///
/// ```
/// use postgres_operator::logging::filter;
/// assert!(filter(None).1.is_none());
/// assert!(filter(Some("blue_kubernetes=debug")).1.is_none());
/// assert!(filter(Some("=#=")).1.is_some());
/// ```
pub fn filter(rust_log: Option<&str>) -> (Targets, Option<&'static str>) {
    let default = || DEFAULT_FILTER.parse().expect("the default filter parses");
    match rust_log.map(str::trim).filter(|s| !s.is_empty()) {
        None => (default(), None),
        Some(text) => match text.parse() {
            Ok(targets) => (targets, None),
            Err(_) => (
                default(),
                Some("RUST_LOG is not a valid filter; using the default"),
            ),
        },
    }
}

/// Installs the global subscriber. Call once, first thing.
pub fn init(json: bool) {
    let (targets, warning) = filter(std::env::var("RUST_LOG").ok().as_deref());
    let registry = tracing_subscriber::registry().with(targets);
    let layer = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    if json {
        registry.with(layer.json().flatten_event(true)).init();
    } else {
        registry.with(layer).init();
    }
    if let Some(warning) = warning {
        tracing::warn!("{warning}");
    }
}
