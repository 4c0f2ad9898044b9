//! Without the binaries, starting fails with one line saying how to get
//! them; it never provisions. Its own test binary: it changes the
//! environment of the whole process.

use blue_envtest::{Envtest, Error};

#[test]
fn without_assets_starting_fails_with_one_line_saying_how_to_get_them() {
    let empty = tempfile::tempdir().unwrap();
    std::env::set_var("HOME", empty.path());
    for var in [
        "XDG_CACHE_HOME",
        "KUBEBUILDER_ASSETS",
        "TEST_ASSET_KUBE_APISERVER",
        "TEST_ASSET_ETCD",
    ] {
        std::env::remove_var(var);
    }
    let err = Envtest::start().unwrap_err();
    assert!(matches!(err, Error::MissingAssets), "{err:?}");
    let shared = Envtest::shared().unwrap_err();
    assert!(matches!(shared, Error::MissingAssets));
    let line = err.to_string();
    assert!(!line.contains('\n'), "{line}");
    assert!(
        line.contains("cargo xtask control-plane provision"),
        "{line}"
    );
    assert!(line.contains("KUBEBUILDER_ASSETS"), "{line}");
    assert_eq!(
        std::fs::read_dir(empty.path()).unwrap().count(),
        0,
        "nothing provisioned"
    );
}
