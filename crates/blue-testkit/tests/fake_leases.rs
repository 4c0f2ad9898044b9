//! The fake cluster's Leases follow the API server: create once, updates
//! guarded by a current resourceVersion, faults and call accounting apply.

use blue_kubernetes_client::{Client, ErrorKind, Lease, LeaseSpec};
use blue_testkit::{FakeCluster, Fault, Operation};

fn lease(holder: &str) -> Lease {
    Lease::new(
        "default",
        "op",
        LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(15),
            ..LeaseSpec::default()
        },
    )
}

#[tokio::test]
async fn a_lease_is_created_once_and_the_second_create_fails() {
    let cluster = FakeCluster::new();
    assert_eq!(cluster.get_lease("default", "op").await.unwrap(), None);
    let created = cluster.create_lease(&lease("a")).await.unwrap();
    assert_eq!(created.resource_version.as_deref(), Some("1"));
    let second = cluster.create_lease(&lease("b")).await.unwrap_err();
    assert_eq!(second.kind(), ErrorKind::Other, "AlreadyExists");
    assert_eq!(
        cluster.lease("default", "op").unwrap().spec.holder(),
        Some("a")
    );
    assert_eq!(cluster.calls().leases, 3);
}

#[tokio::test]
async fn an_update_from_a_stale_read_conflicts_and_changes_nothing() {
    let cluster = FakeCluster::new();
    let read = cluster.create_lease(&lease("a")).await.unwrap();
    let mut renewed = read.clone();
    renewed.spec.renew_time = Some("2024-01-01T00:00:02.000000Z".into());
    let renewed = cluster.update_lease(&renewed).await.unwrap();
    assert_ne!(renewed.resource_version, read.resource_version);

    let mut stolen = read.clone();
    stolen.spec.holder_identity = Some("b".into());
    assert!(cluster
        .update_lease(&stolen)
        .await
        .unwrap_err()
        .is_conflict());
    let mut unguarded = stolen.clone();
    unguarded.resource_version = None;
    assert_eq!(
        cluster.update_lease(&unguarded).await.unwrap_err().kind(),
        ErrorKind::Invalid
    );
    assert_eq!(cluster.lease("default", "op").unwrap(), renewed);
}

#[tokio::test]
async fn lease_faults_fail_calls_without_effect_and_user_writes_bump_the_version() {
    let cluster = FakeCluster::new();
    let read = cluster.create_lease(&lease("a")).await.unwrap();
    cluster.inject(Operation::UpdateLease, Fault::Unavailable);
    let err = cluster.update_lease(&read).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(cluster.lease("default", "op").unwrap(), read);

    cluster.put_lease(&lease("b"));
    assert!(cluster
        .release_lease(&read)
        .await
        .unwrap_err()
        .is_conflict());
    let current = cluster.get_lease("default", "op").await.unwrap().unwrap();
    let released = cluster.release_lease(&current).await.unwrap();
    assert_eq!(released.spec.holder(), None);
}

#[tokio::test]
async fn a_list_returns_the_namespace_s_leases_in_one_counted_call() {
    let cluster = FakeCluster::new();
    cluster.create_lease(&lease("a")).await.unwrap();
    let mut other = lease("b");
    other.name = "op-2".into();
    cluster.create_lease(&other).await.unwrap();
    let mut elsewhere = lease("c");
    elsewhere.namespace = "kube-system".into();
    cluster.create_lease(&elsewhere).await.unwrap();
    let listed = cluster.list_leases("default").await.unwrap();
    let holders: Vec<_> = listed.iter().map(|l| l.spec.holder()).collect();
    assert_eq!(holders, [Some("a"), Some("b")]);
    assert_eq!(cluster.calls().leases, 4);
    let ops = cluster.call_log();
    assert_eq!(ops.last().unwrap().operation, Operation::ListLeases);
    cluster.inject(Operation::ListLeases, Fault::Unavailable);
    let err = cluster.list_leases("default").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
}

#[tokio::test]
async fn a_lease_keeps_its_uid_and_annotations_until_it_is_deleted_and_created_again() {
    let cluster = FakeCluster::new();
    let mut first = lease("a");
    first
        .annotations
        .insert("example.com/note".into(), "kept".into());
    let created = cluster.create_lease(&first).await.unwrap();
    let uid = created.uid.clone().expect("the server assigns a uid");
    let updated = cluster.update_lease(&created).await.unwrap();
    assert_eq!(updated.uid.as_deref(), Some(uid.as_str()));
    assert_eq!(updated.annotations["example.com/note"], "kept");
    let put = cluster.put_lease(&lease("b"));
    assert_eq!(
        put.uid.as_deref(),
        Some(uid.as_str()),
        "a user write keeps it"
    );

    assert!(cluster.delete_lease("default", "op").is_some());
    let again = cluster.create_lease(&lease("c")).await.unwrap();
    assert_ne!(again.uid.as_deref(), Some(uid.as_str()));
    let mut stale = again.clone();
    stale.uid = Some(uid);
    assert!(
        cluster
            .update_lease(&stale)
            .await
            .unwrap_err()
            .is_conflict(),
        "an update naming the old object's uid"
    );
}
