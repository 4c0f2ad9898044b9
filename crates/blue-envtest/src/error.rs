//! What can go wrong starting or using a control plane.

/// An error of this crate.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// kube-apiserver or etcd is not on this machine.
    #[error(
        "no kube-apiserver and etcd for tests: run `cargo xtask control-plane provision`, or set \
         KUBEBUILDER_ASSETS (or TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD) to envtest binaries"
    )]
    MissingAssets,
}
