//! The rights a storage migration needs, and the Job that runs it, as
//! manifests generated from the kinds (the runner prints them with `crd
//! --migration-rbac NS/SERVICEACCOUNT [--migration-job IMAGE]`).

use super::MigrationSettings;
use blue_kubernetes_client::ResourceDescriptor;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// What [`migration_manifests`] generates.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MigrationManifests {
    /// The operator's name: the ClusterRole, Role, their bindings and
    /// the Job are `<operator>-storage-migration`.
    pub operator: String,
    /// Where the migration's Lease (and the Job) live: the operator's
    /// namespace.
    pub namespace: String,
    /// The ServiceAccount granted the rights: the operator's own (a
    /// cluster-scoped operator running `--migrate-storage`), or the
    /// Job's.
    pub service_account: String,
    /// The kinds migrated.
    pub kinds: Vec<ResourceDescriptor>,
    /// With an image: the Job running `--in-cluster migrate-storage` as
    /// the ServiceAccount, which is generated too.
    pub job_image: Option<String>,
}

impl MigrationManifests {
    /// Manifests granting `namespace/service_account` what `operator`'s
    /// migration of `kinds` needs; no Job.
    pub fn new(
        operator: impl Into<String>,
        namespace: impl Into<String>,
        service_account: impl Into<String>,
        kinds: Vec<ResourceDescriptor>,
    ) -> Self {
        Self {
            operator: operator.into(),
            namespace: namespace.into(),
            service_account: service_account.into(),
            kinds,
            job_image: None,
        }
    }

    /// The same, with the Job running `image` (and its ServiceAccount).
    pub fn with_job(mut self, image: impl Into<String>) -> Self {
        self.job_image = Some(image.into());
        self
    }
}

/// The manifests, in the order to apply them: with a Job, its
/// ServiceAccount first; a ClusterRole (get the kinds' CRDs, update their
/// `status.storedVersions`, list and update the kinds in every namespace:
/// `storedVersions` is cluster-wide and every namespace's objects must be
/// rewritten) with its ClusterRoleBinding; a Role on Leases in the
/// namespace (the migration's own Lease) with its RoleBinding; then the
/// Job.
///
/// ```
/// use blue_kubernetes::migration::{migration_manifests, MigrationManifests};
/// use blue_kubernetes_client::ResourceDescriptor;
/// let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
/// let manifests = MigrationManifests::new("widget-operator", "infra", "widget-migration", vec![widgets])
///     .with_job("widget-operator:1.2");
/// let documents = migration_manifests(&manifests);
/// let kinds: Vec<_> = documents.iter().map(|d| d["kind"].as_str().unwrap()).collect();
/// assert_eq!(kinds, ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Job"]);
/// assert_eq!(documents[1]["rules"][0]["resourceNames"][0], "widgets.example.com");
/// ```
pub fn migration_manifests(m: &MigrationManifests) -> Vec<Value> {
    let name = MigrationSettings::lease_name_of(&m.operator);
    let labels = json!({"app.kubernetes.io/name": m.operator, "app.kubernetes.io/component": "storage-migration"});
    let metadata = |namespaced: bool| match namespaced {
        true => json!({"name": name, "namespace": m.namespace, "labels": labels}),
        false => json!({"name": name, "labels": labels}),
    };
    let subjects =
        json!([{"kind": "ServiceAccount", "name": m.service_account, "namespace": m.namespace}]);
    let crds: Vec<String> = m.kinds.iter().map(|k| k.qualified_plural()).collect();
    let mut by_group: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for kind in &m.kinds {
        by_group.entry(&kind.group).or_default().push(&kind.plural);
    }
    let mut rules = vec![
        json!({"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
               "resourceNames": crds, "verbs": ["get"]}),
        json!({"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions/status"],
               "resourceNames": crds, "verbs": ["update"]}),
    ];
    for (group, plurals) in by_group {
        rules
            .push(json!({"apiGroups": [group], "resources": plurals, "verbs": ["list", "update"]}));
    }
    let mut documents = Vec::new();
    if m.job_image.is_some() {
        documents.push(json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": m.service_account, "namespace": m.namespace, "labels": labels}}));
    }
    let rbac = "rbac.authorization.k8s.io/v1";
    documents.extend([
        json!({"apiVersion": rbac, "kind": "ClusterRole", "metadata": metadata(false), "rules": rules}),
        json!({"apiVersion": rbac, "kind": "ClusterRoleBinding", "metadata": metadata(false),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": subjects}),
        json!({"apiVersion": rbac, "kind": "Role", "metadata": metadata(true),
            "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                       "verbs": ["get", "create", "update"]}]}),
        json!({"apiVersion": rbac, "kind": "RoleBinding", "metadata": metadata(true),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": subjects}),
    ]);
    if let Some(image) = &m.job_image {
        documents.push(job(m, &name, image, &labels));
    }
    documents
}

/// The one-shot Job: retried on failure (a crash restarts the migration
/// from the beginning, which is safe), non-root, read-only root.
fn job(m: &MigrationManifests, name: &str, image: &str, labels: &Value) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": m.namespace, "labels": labels},
        "spec": {
            "backoffLimit": 6,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": m.service_account,
                    "restartPolicy": "OnFailure",
                    "securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [{
                        "name": "migrate-storage",
                        "image": image,
                        "imagePullPolicy": "IfNotPresent",
                        "args": ["--in-cluster", "migrate-storage"],
                        "env": [{"name": "KUBECACHEDIR", "value": "/tmp/kube-cache"}],
                        "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                                            "capabilities": {"drop": ["ALL"]}},
                        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                    }],
                    "volumes": [{"name": "tmp", "emptyDir": {}}],
                },
            },
        },
    })
}
