//! Chaos checks: faults and hostile input against the example operators on
//! a real API server (blue-envtest's), with assertions. A second test
//! binary beside `tests/e2e`, sharing its fixtures. Randomised checks draw
//! from a seeded generator ([`chaos::Seed`]): a failed one prints its seed,
//! and `BLUE_CHAOS_SEED=N` replays it. `BLUE_CHAOS_PROFILE=long` (what
//! `cargo xtask chaos --long` sets) pushes harder. Figures are printed
//! (`--nocapture` shows them).

mod chaos;
mod local_configmap;
mod postgres;
mod storage_migration;

// The storage migration's fixture, shared with its end-to-end checks;
// this binary uses part of it.
#[allow(dead_code)]
#[path = "../e2e/storage_migration/fixture.rs"]
mod migration_fixture;

// The e2e fixtures; this binary uses part of them.
#[allow(dead_code)]
#[path = "../e2e/support/mod.rs"]
mod support;
