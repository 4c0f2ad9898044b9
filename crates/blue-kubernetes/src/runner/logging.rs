//! The operator's log: `tracing` events to stderr, as text or JSON lines,
//! filtered by `--log-level` (or `RUST_LOG`).

use tracing_subscriber::filter::{EnvFilter, LevelFilter};
use tracing_subscriber::prelude::*;

/// `--log-format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
#[non_exhaustive]
pub enum LogFormat {
    /// Human-readable lines (the default).
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// The crates whose lines a bare level applies to, besides the operator's.
const LIBRARY_TARGETS: [&str; 2] = ["blue_kubernetes", "blue_kubernetes_client"];

/// Accepts a bare level or `tracing` directives (`info,hyper=debug`); an
/// error says which.
pub(crate) fn parse_filter(text: &str) -> Result<String, String> {
    let text = text.trim();
    if text.is_empty() || text.parse::<LevelFilter>().is_ok() {
        return Ok(text.to_string());
    }
    match EnvFilter::builder().parse(text) {
        Ok(_) => Ok(text.to_string()),
        Err(_) => Err("want a level (error, warn, info, debug, trace) or directives such as `info,hyper=debug`".into()),
    }
}

/// The filter `level` means for the operator whose log target is `target`
/// (its crate name): a bare level applies to the operator and the
/// library, other crates log warnings; directives are taken as given.
pub(crate) fn filter(level: &str, target: &str) -> EnvFilter {
    let level = match level.trim() {
        "" => "info",
        level => level,
    };
    let directives = match level.parse::<LevelFilter>() {
        Ok(_) => {
            let ours = LIBRARY_TARGETS.iter().chain([&target]);
            let ours = ours.map(|t| format!("{t}={level}")).collect::<Vec<_>>();
            format!("warn,{}", ours.join(","))
        }
        Err(_) => level.to_string(),
    };
    // Checked by `parse_filter` when the flags were parsed.
    EnvFilter::builder()
        .parse(&directives)
        .unwrap_or_else(|_| EnvFilter::new("info"))
}

/// Installs the global subscriber; later calls (a test that runs two
/// runners) leave the first in place.
pub(crate) fn init(format: LogFormat, level: &str, target: &str) {
    let registry = tracing_subscriber::registry().with(filter(level, target));
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false);
    let _ = match format {
        LogFormat::Json => registry.with(layer.json().flatten_event(true)).try_init(),
        LogFormat::Text => registry.with(layer).try_init(),
    };
}
