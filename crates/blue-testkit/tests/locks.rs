//! The identity lock spans resource types and controller instances of
//! one lock domain: by default the whole process; a controller given a
//! domain of its own contends only with those given the same one.

mod common;

use blue_kubernetes::{is_locked, reconcile, Config, Report};

use blue_kubernetes::config::LockDomain;

use blue_kubernetes::resource::{Phase, Reason};
use blue_testkit::{Callback, FakeCluster};
use common::*;
use serde_json::json;
use std::sync::Arc;

#[tokio::test]
async fn by_default_the_lock_spans_types_and_controller_instances_of_the_process() {
    // What a controller takes unless told otherwise (the tests' builder
    // gives each its own: put the default back).
    let default = Config::new(Arc::new(FakeCluster::new()), vec![]).lock_domain;
    assert!(default.same_as(&LockDomain::process()));
    let w = World::with(|c| c.lock_domain = LockDomain::process());
    let gadget_package = w.infra.package(gadgets());
    let other = build(
        &w.cluster,
        w.clock.as_fn(),
        vec![gadget_package.clone()],
        |c| c.lock_domain = default,
    );
    // Same namespace and name, so the same profile and identity, in two types.
    w.create("web", spec(json!(1)));
    w.cluster.create(&gadgets(), NS, "web", spec(json!(1)));

    w.infra.hold_effects();
    let (first, second) = tokio::join!(w.reconcile("web"), async {
        w.infra.effects_started(1).await;
        assert!(is_locked(&w.infra.identity(&World::profile("web"))));
        let busy = reconcile(&other, &gadget_package, NS, "web").await.unwrap();
        w.infra.release(1);
        busy
    });
    assert_eq!(first, Report::Reconciled(Phase::Ready, Reason::Converged));
    assert_eq!(second, Report::Busy);
    assert_eq!(
        w.cluster.get(&gadgets(), NS, "web").unwrap().get("status"),
        None,
        "busy writes nothing"
    );

    let after = reconcile(&other, &gadget_package, NS, "web").await.unwrap();
    assert_eq!(after, Report::Reconciled(Phase::Ready, Reason::Converged));
    assert_eq!(w.infra.count(Callback::Converge), 1, "no duplicate effect");
    assert_eq!(w.infra.max_concurrent_effects(), 1);
    assert!(!is_locked(&w.infra.identity(&World::profile("web"))));
}

#[tokio::test]
async fn different_identities_do_not_contend() {
    let w = World::new();
    w.create("a", spec(json!(1)));
    w.create("b", spec(json!(2)));
    w.infra.hold_effects();
    // Both effects are in flight at once before either is let through.
    let (a, b, ()) = tokio::join!(w.reconcile("a"), w.reconcile("b"), async {
        w.infra.effects_started(2).await;
        w.infra.release(2);
    });
    assert_eq!(a, Report::Reconciled(Phase::Ready, Reason::Converged));
    assert_eq!(b, Report::Reconciled(Phase::Ready, Reason::Converged));
}

#[tokio::test]
async fn equal_identities_in_lock_domains_of_their_own_both_proceed() {
    let own = LockDomain::new();
    let w = World::with(|c| c.lock_domain = own.clone());
    let gadget_package = w.infra.package(gadgets());
    let packages = vec![gadget_package.clone()];
    let apart = build(&w.cluster, w.clock.as_fn(), packages.clone(), |c| {
        c.lock_domain = LockDomain::new();
    });
    let sharing = build(&w.cluster, w.clock.as_fn(), packages, |c| {
        c.lock_domain = own.clone();
    });
    // Same namespace and name: the same identity in both types.
    w.create("web", spec(json!(1)));
    w.cluster.create(&gadgets(), NS, "web", spec(json!(1)));

    w.infra.hold_effects();
    let (first, (second, busy)) = tokio::join!(w.reconcile("web"), async {
        w.infra.effects_started(1).await;
        let identity = w.infra.identity(&World::profile("web"));
        assert!(own.is_locked(&identity));
        assert!(!is_locked(&identity), "not in the process-wide domain");
        let busy = reconcile(&sharing, &gadget_package, NS, "web")
            .await
            .unwrap();
        let second = reconcile(&apart, &gadget_package, NS, "web");
        let (second, ()) = tokio::join!(second, async {
            w.infra.effects_started(2).await;
            w.infra.release(2);
        });
        (second.unwrap(), busy)
    });
    assert_eq!(first, Report::Reconciled(Phase::Ready, Reason::Converged));
    assert_eq!(second, Report::Reconciled(Phase::Ready, Reason::Converged));
    assert_eq!(busy, Report::Busy, "a clone of the domain is the same lock");
    assert_eq!(w.infra.max_concurrent_effects(), 2, "both held at once");
    assert!(!own.is_locked(&w.infra.identity(&World::profile("web"))));
}
