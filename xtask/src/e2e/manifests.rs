//! The example's manifests, embedded at build time, and the two rewrites
//! the e2e needs: dropping CEL rules for old servers and moving the
//! namespaced objects into the test namespace.

/// `examples/local-configmap/manifests/crd.yaml`.
pub const CRD: &str = include_str!("../../../examples/local-configmap/manifests/crd.yaml");
/// `examples/local-configmap/manifests/rbac.yaml`.
pub const RBAC: &str = include_str!("../../../examples/local-configmap/manifests/rbac.yaml");
/// `examples/local-configmap/manifests/sample.yaml`.
pub const SAMPLE: &str = include_str!("../../../examples/local-configmap/manifests/sample.yaml");

/// Name of the CRD.
pub const CRD_NAME: &str = "localconfigmaps.examples.blue.dev";
/// ServiceAccount (and Role, RoleBinding) name in `rbac.yaml`.
pub const SERVICE_ACCOUNT: &str = "local-configmap-operator";

/// Removes every `x-kubernetes-validations:` block (the key line and the
/// lines indented below it or list items at its level). Kubernetes before
/// 1.25 does not know the field, and kubectl's validation rejects it.
pub fn strip_cel(yaml: &str) -> String {
    let mut out = Vec::new();
    let mut block: Option<usize> = None;
    for line in yaml.lines() {
        let indent = line.len() - line.trim_start().len();
        if let Some(key_indent) = block {
            let inside = line.trim().is_empty()
                || indent > key_indent
                || (indent == key_indent && line.trim_start().starts_with("- "));
            if inside {
                continue;
            }
            block = None;
        }
        if line.trim_start().starts_with("x-kubernetes-validations:") {
            block = Some(indent);
            continue;
        }
        out.push(line);
    }
    let mut text = out.join("\n");
    text.push('\n');
    text
}

/// The CRD as this server accepts it: with its CEL rules when the server
/// knows `x-kubernetes-validations` (Kubernetes >= 1.25), else without.
/// Decided by a server-side dry run rather than the version number, which
/// some builds (e.g. the local 1.20 one) do not report. Returns the
/// document and whether CEL rules are in it.
pub fn crd_for(kube: &super::kube::Kube) -> anyhow::Result<(String, bool)> {
    let dry_run = kube.run(&["apply", "--dry-run=server", "-f", "-"], Some(CRD))?;
    if dry_run.ok {
        Ok((CRD.to_string(), true))
    } else {
        Ok((strip_cel(CRD), false))
    }
}

/// Rewrites `namespace: default` (the manifests' namespace) to `namespace`.
pub fn in_namespace(yaml: &str, namespace: &str) -> String {
    yaml.replace("namespace: default", &format!("namespace: {namespace}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cel_blocks_are_removed_and_nothing_else() {
        let stripped = strip_cel(CRD);
        assert!(!stripped
            .lines()
            .any(|l| l.trim_start().starts_with("x-kubernetes-validations:")));
        assert!(!stripped.contains("oldSelf"));
        assert!(stripped.contains("compute-prevent-destroy:"));
        assert!(stripped.contains("status:"));
        // The key line and two rules of two lines each.
        assert_eq!(CRD.lines().count() - stripped.lines().count(), 5);
        let yaml = "a:\n  x-kubernetes-validations:\n  - rule: x\n    message: y\n  b: 1\nc: 2\n";
        assert_eq!(strip_cel(yaml), "a:\n  b: 1\nc: 2\n");
    }

    #[test]
    fn namespaced_objects_move() {
        let rbac = in_namespace(RBAC, "e2e-x");
        assert!(!rbac.contains("namespace: default"));
        assert_eq!(rbac.matches("namespace: e2e-x").count(), 4);
    }
}
