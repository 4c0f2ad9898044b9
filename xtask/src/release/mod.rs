//! Release checks: the published crates package (`cargo xtask package`)
//! and their public API keeps the last release's unless the version
//! says it may not (`cargo xtask api`).

pub mod api;
mod crates;
pub mod package;
