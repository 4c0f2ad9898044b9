//! How an operator under test connects: the flags naming kubectl's
//! kubeconfig, context and namespace, and the transport.

use blue_envtest::Kubectl;

/// The flags connecting an operator as `kube` does (`--context`,
/// `--kubeconfig` when set, `--namespace`), with `--transport transport`.
pub fn connect_args(kube: &Kubectl, transport: &str) -> Vec<String> {
    let mut args = vec!["--context".to_string(), kube.context().to_string()];
    if let Some(k) = kube.kubeconfig() {
        args.extend(["--kubeconfig".into(), k.display().to_string()]);
    }
    args.extend([
        "--namespace".into(),
        kube.namespace().to_string(),
        "--transport".into(),
        transport.into(),
    ]);
    args
}
