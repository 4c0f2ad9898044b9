//! Leader election through the real kubectl transport: `KubectlClient`
//! speaking to a `FakeKubectl` over a `FakeCluster`, so the Lease command
//! lines and the classification of kubectl's error texts are exercised.

use blue_kubernetes::{ElectionStep, LeaseElector};

use blue_kubernetes::replicas::LeaderElectionConfig;
use blue_kubernetes_client::{kubectl_client, Client, KubectlClient, KubectlConfig};
use blue_testkit::{FakeClock, FakeCluster, FakeKubectl, Fault, Operation};

const PATH: &str = "/apis/coordination.k8s.io/v1/namespaces/ops/leases/op";

fn elector(identity: &str) -> LeaseElector {
    let mut settings = LeaderElectionConfig::new("op", "ops");
    settings.identity = identity.into();
    LeaseElector::new(settings).unwrap()
}

fn client(kubectl: &FakeKubectl) -> KubectlClient {
    kubectl_client(KubectlConfig::for_context("dev").with_runner(kubectl.clone())).unwrap()
}

#[tokio::test]
async fn electors_over_kubectl_elect_one_lose_on_conflict_and_hand_over_on_release() {
    let clock = FakeClock::default();
    let now = clock.as_fn();
    let cluster = FakeCluster::new().with_clock(clock.clone());
    let kubectl = FakeKubectl::new(cluster.clone());
    let client = client(&kubectl);
    let (mut a, mut b) = (elector("a"), elector("b"));

    assert_eq!(a.step(&client, &now).await, ElectionStep::Leading);
    let commands = kubectl.commands();
    assert_eq!(commands[0], ["get", "--raw", PATH]);
    assert_eq!(
        commands[1][..3],
        [
            "create",
            "--raw",
            "/apis/coordination.k8s.io/v1/namespaces/ops/leases"
        ]
    );
    assert_eq!(b.step(&client, &now).await, ElectionStep::Following);

    // A conflict reported in kubectl's own words revokes leadership.
    cluster.inject(Operation::UpdateLease, Fault::Conflict);
    clock.advance(2_000);
    assert_eq!(a.step(&client, &now).await, ElectionStep::Lost);
    assert!(!a.may_write(clock.now_ms()));
    assert_eq!(a.step(&client, &now).await, ElectionStep::Leading);
    assert_eq!(
        kubectl.commands().last().unwrap()[..3],
        ["replace", "--raw", PATH]
    );

    assert!(a.release(&client).await.unwrap());
    assert_eq!(b.step(&client, &now).await, ElectionStep::Leading);
    let lease = cluster.lease("ops", "op").unwrap();
    assert_eq!(lease.spec.holder(), Some("b"));
    assert_eq!(lease.spec.lease_transitions, Some(1));
}

#[tokio::test]
async fn a_second_create_fails_as_already_exists_and_leaves_the_loser_following() {
    let clock = FakeClock::default();
    let cluster = FakeCluster::new().with_clock(clock.clone());
    let kubectl = FakeKubectl::new(cluster.clone());
    let client = client(&kubectl);
    let mut a = elector("a");
    // b read "no lease" (an injected NotFound on its read), then a created it.
    assert_eq!(a.step(&client, &clock.as_fn()).await, ElectionStep::Leading);
    cluster.inject(
        Operation::GetLease,
        Fault::Kind(blue_kubernetes_client::ErrorKind::NotFound),
    );
    let mut b = elector("b");
    assert_eq!(
        b.step(&client, &clock.as_fn()).await,
        ElectionStep::Following
    );
    assert_eq!(kubectl.commands().last().unwrap()[0], "create");
    assert_eq!(b.last_failure(), None);
    assert_eq!(cluster.lease("ops", "op").unwrap().spec.holder(), Some("a"));
}

#[tokio::test]
async fn the_lease_collection_lists_over_kubectl_and_a_refusal_keeps_its_kind() {
    let cluster = FakeCluster::new();
    let kubectl = FakeKubectl::new(cluster.clone());
    let client = client(&kubectl);
    let held = blue_kubernetes_client::Lease::new("ops", "op", Default::default());
    cluster.create_lease(&held).await.unwrap();
    let leases = client.list_leases("ops").await.unwrap();
    assert_eq!(leases, [cluster.lease("ops", "op").unwrap()]);
    assert_eq!(
        kubectl.commands().last().unwrap(),
        &[
            "get",
            "--raw",
            "/apis/coordination.k8s.io/v1/namespaces/ops/leases"
        ]
    );
    cluster.inject(
        Operation::ListLeases,
        Fault::Kind(blue_kubernetes_client::ErrorKind::Forbidden),
    );
    let err = client.list_leases("ops").await.unwrap_err();
    assert_eq!(err.kind(), blue_kubernetes_client::ErrorKind::Forbidden);
}
