//! Model-based property test of the controller: due-ness, the ordered
//! rules of a pass, publish before effect, absence before release and
//! stale results that never acknowledge new desired state.
//!
//! Random sequences (up to 40 steps) of user actions on three resources of
//! two types sharing one fake infrastructure (`widgets/a` and `gadgets/a`
//! share a profile and so an identity; `config.profile` edits make more
//! identities collide): value, `suspend`, `state`, `deletionPolicy`,
//! `compute-prevent-destroy`, `invalid`, `profile` and `reconcileInterval`
//! edits, request tokens, someone else's finalizer, deletion and
//! recreation; clock advances; drift and unreadiness; injected `Conflict` /
//! `Unavailable` faults; scripted callback errors, panics, `blue/exit 1`
//! and a lying `blue/exit 0`, and failing or panicking durable steps; and
//! reconciles by two controller instances: lone ones, two racing ones
//! (mostly of one identity), ones with a user edit landing mid-pass,
//! crashed ones (the process dies just after or before a status write, or
//! while an effect is held, and starts again with nothing in memory), and
//! cycles of the polling runtime. Widgets converge in one callback,
//! gadgets in durable steps (`steps.rs` audits their records: no `Done`
//! step runs again within its run, a step is recorded `Done` only after
//! its effect, keys are stable within a run and never shared across runs,
//! progress is told in fixed words; and no step starts after a lost
//! record). Safety is checked after every step, liveness at the end.
//!
//! - `world.rs`: the fake cluster, clock, infrastructure and controllers;
//! - `drive.rs`: the operations, how each is applied, a whole case;
//! - `invariants.rs`: the safety checks after every step;
//! - `liveness.rs`: the convergence checks at the end;
//! - `strategies.rs`: how cases are drawn;
//! - `audit.rs`, `hook.rs`: the hook on the client that checks every cluster call as
//!   it is made; `oracle.rs`: the rules it judges a write by; `steps.rs`:
//!   the durable-steps record of each write against the steps run;
//!   `object.rs`: reading objects;
//! - `watching.rs`: a second property, the started runtime with watches
//!   throughout, under lost, duplicated and delayed events, closed,
//!   expired and silent streams, refused watches, bookmarks and compaction:
//!   the same audited invariants plus liveness within one resync period,
//!   reaction to an edit with no time passing, and at most one list per
//!   reflector per resync period while idle;
//! - `related.rs`: a third property, related objects and references under
//!   watch faults: every related change handled within a resync period,
//!   no callback while a reference is unresolved (`related_world.rs`: its
//!   server, databases and ConfigMaps);
//! - `sharding.rs`: a fourth property, two to four sharded runtime
//!   replicas under starts, graceful stops, crashes, partitions, lease
//!   expiries and slow callbacks: no widget in flight in two replicas, no
//!   fenced write landing, every widget converged once membership settles
//!   (`sharding_world.rs`: its replicas, their wires and the ledger).
//!
//! Runs 64 cases by default (the sharding property 16: it starts real
//! runtimes; a few seconds each in a debug build). Search longer:
//! `PROPTEST_CASES=2000 cargo test -p blue-testkit --test model --release`.

mod audit;
#[path = "../common/mod.rs"]
mod common;
mod drive;
mod hook;
mod invariants;
mod liveness;
mod object;
mod oracle;
mod related;
mod related_world;
mod sharding;
mod sharding_world;
mod steps;
mod strategies;
mod watching;
mod world;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use strategies::{arb_initial, arb_op};

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(64)
}

/// Proptest looks for `main.rs`'s seeds in `tests/proptest-regressions/`
/// by default; they stay beside the source, as they were for `model.rs`.
fn proptest_config() -> ProptestConfig {
    ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::with_cases(cases())
    }
}

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn controller_keeps_its_invariants(
        initial in arb_initial(),
        ops in proptest::collection::vec(arb_op(), 0..=40),
    ) {
        drive::run_case(initial, &ops)?;
    }

    /// See `watching.rs`.
    #[test]
    fn watching_runtime_keeps_its_invariants_and_the_resync_backstop(
        initial in arb_initial(),
        ops in proptest::collection::vec(watching::arb_watch_op(), 0..=40),
    ) {
        watching::run_watch_case(initial, &ops)?;
    }

    /// See `related.rs`.
    #[test]
    fn related_changes_are_handled_within_a_resync_and_nothing_runs_while_a_reference_waits(
        server in any::<bool>(),
        ops in proptest::collection::vec(related::arb_related_op(), 0..=40),
    ) {
        related::run_related_case(server, &ops)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: sharding::cases(),
        ..proptest_config()
    })]

    /// See `sharding.rs`.
    #[test]
    fn sharded_replicas_never_share_a_widget_never_land_a_fenced_write_and_converge_once_settled(
        replicas in 1usize..=3,
        ops in proptest::collection::vec(sharding::arb_shard_op(), 0..=30),
    ) {
        sharding::run_shard_case(replicas, ops)?;
    }
}
