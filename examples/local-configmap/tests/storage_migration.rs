//! `manifests/storage-migration.yaml` is what the runner generates: the
//! storage migration as a one-shot Job with a ClusterRole of its own (the
//! operator itself is namespace-scoped, and its Role is not widened).

#[test]
fn the_committed_storage_migration_manifests_are_the_generated_ones() {
    let printed = local_configmap_operator::cli::runner().migration_yaml(
        "default",
        "local-configmap-storage-migration",
        Some("local-configmap-operator:dev"),
    );
    assert!(
        printed == include_str!("../manifests/storage-migration.yaml"),
        "manifests/storage-migration.yaml is stale; regenerate it with\n  \
         cargo run -p local-configmap-operator -- crd --migration-rbac default/local-configmap-storage-migration \
         --migration-job local-configmap-operator:dev\n(the documents after the CRDs)"
    );
}
