//! The runner's storage migration: `crd --migration-rbac` (and
//! `--migration-job`) generated from the declared kinds, the
//! `migrate-storage` subcommand and the `--migrate-storage` flag, and the
//! rights the preflight checks.

use super::*;
use crate::migration::MigrationManifests;
use blue_kubernetes_client::ResourceDescriptor;

fn widgets() -> ResourceDescriptor {
    ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
}

fn runner() -> Runner {
    Runner::new("widget-operator").crd(ResourceSchema::new(widgets()), CrdConfig::default())
}

fn parsed(args: &[&str]) -> Invocation<NoFlags> {
    let line = std::iter::once("widget-operator").chain(args.iter().copied());
    match runner().parse_from(line) {
        Ok(invocation) => invocation,
        Err(e) => panic!("{args:?}: {e}"),
    }
}

fn crd_migration(args: &[&str]) -> Option<MigrationManifests> {
    let mut all = vec!["crd"];
    all.extend_from_slice(args);
    match parsed(&all) {
        Invocation::Crd { migration, .. } => migration,
        _ => panic!("not crd"),
    }
}

#[test]
fn crd_prints_the_migration_rights_and_job_only_when_asked() {
    assert_eq!(crd_migration(&[]), None);
    let rbac = crd_migration(&["--migration-rbac", "ops/widget-operator"]).unwrap();
    assert_eq!(
        rbac,
        MigrationManifests::new("widget-operator", "ops", "widget-operator", vec![widgets()])
    );
    let yaml = crd::migration_yaml(&rbac);
    for line in [
        "kind: ClusterRole",
        "name: widget-operator-storage-migration",
        "- customresourcedefinitions/status",
        "- widgets.example.com",
        "kind: Role",
        "- leases",
    ] {
        assert!(yaml.contains(line), "{line}: {yaml}");
    }
    assert!(!yaml.contains("kind: Job"), "{yaml}");
    let job = crd_migration(&[
        "--migration-rbac",
        "ops/widget-migration",
        "--migration-job",
        "widget-operator:1.2",
    ])
    .unwrap();
    let yaml = crd::migration_yaml(&job);
    for line in [
        "kind: ServiceAccount",
        "kind: Job",
        "image: \"widget-operator:1.2\"",
        "serviceAccountName: widget-migration",
        "- migrate-storage",
    ] {
        assert!(yaml.contains(line), "{line}: {yaml}");
    }
    assert_eq!(yaml.matches("---\n").count(), 6, "{yaml}");
}

#[test]
fn a_wrong_service_account_or_a_job_without_rights_is_refused() {
    let refused = |args: &[&str]| {
        let line = ["widget-operator", "crd"]
            .into_iter()
            .chain(args.iter().copied());
        runner().parse_from(line).err().map(|e| e.to_string())
    };
    let wrong = refused(&["--migration-rbac", "just-a-name"]).unwrap();
    assert!(wrong.contains("NAMESPACE/NAME"), "{wrong}");
    assert!(refused(&["--migration-rbac", "ops/../x"]).is_some());
    let job = refused(&["--migration-job", "img"]).unwrap();
    assert!(job.contains("--migration-rbac"), "{job}");
}

#[test]
fn migrate_storage_is_a_subcommand_with_the_standard_flags() {
    match parsed(&[
        "--context",
        "dev",
        "--migration-rate",
        "7",
        "migrate-storage",
    ]) {
        Invocation::MigrateStorage(flags) => {
            assert_eq!(flags.context.as_deref(), Some("dev"));
            let settings =
                flags
                    .migration
                    .settings("widget-operator", "ops", &TestHookSet::default());
            assert_eq!(settings.rate_per_second, 7);
            assert_eq!(
                settings.lease.lease_name,
                "widget-operator-storage-migration"
            );
            assert_eq!(settings.lease.lease_namespace, "ops");
        }
        _ => panic!("not migrate-storage"),
    }
    let help = runner().command_line().render_long_help().to_string();
    for word in ["migrate-storage", "--migrate-storage", "--migration-rate"] {
        assert!(help.contains(word), "{word}: {help}");
    }
    let hooks = TestHookSet::parse("migration-lease-ms=3000", &[]).unwrap();
    let lease = MigrationFlags {
        migrate_storage: true,
        migration_rate: None,
    }
    .settings("widget-operator", "ops", &hooks)
    .lease;
    let timings = (
        lease.lease_duration_ms,
        lease.renew_deadline_ms,
        lease.retry_period_ms,
    );
    assert_eq!(timings, (3000, 2000, 500));
    let zero = runner().parse_from([
        "widget-operator",
        "--context",
        "dev",
        "--migration-rate",
        "0",
    ]);
    assert!(zero.is_err(), "a rate of 0 would never finish");
}

#[test]
fn the_flag_asks_for_cluster_wide_rights_on_the_kind_and_the_crd() {
    let checks: Vec<String> = migration::rights(&[widgets()], "ops")
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        checks,
        [
            "get customresourcedefinitions.apiextensions.k8s.io in namespace  (named widgets.example.com)",
            "update customresourcedefinitions/status.apiextensions.k8s.io in namespace  (named widgets.example.com)",
            "list widgets.example.com in namespace ",
            "update widgets.example.com in namespace ",
            "get leases.coordination.k8s.io in namespace ops",
            "create leases.coordination.k8s.io in namespace ops",
            "update leases.coordination.k8s.io in namespace ops",
        ]
    );
}
