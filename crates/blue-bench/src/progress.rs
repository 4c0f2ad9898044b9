//! What the bench tells while it runs: each part and stage timed on stderr.

use std::time::Instant;

use anyhow::Result;

/// Runs `f` and logs how long `what` took.
pub fn timed<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let started = Instant::now();
    let result = f();
    let took = started.elapsed().as_secs_f64();
    eprintln!("[bench] {what} done in {took:.1}s");
    result
}
