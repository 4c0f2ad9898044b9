//! The committed CRD is the generated one, and it is structural.

use local_configmap_operator::package::{crd, crd_yaml};

#[test]
fn committed_crd_is_the_generated_one() {
    let committed = include_str!("../manifests/crd.yaml");
    assert!(
        committed == crd_yaml(true).unwrap(),
        "manifests/crd.yaml is stale; regenerate it with\n  \
         cargo run -p local-configmap-operator -- crd > examples/local-configmap/manifests/crd.yaml"
    );
}

#[test]
fn without_cel_only_the_validations_are_gone() {
    let with = crd(true).unwrap();
    let without = crd(false).unwrap();
    let config = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/config";
    let rules = with.pointer(&format!("{config}/x-kubernetes-validations"));
    assert_eq!(rules.and_then(|r| r.as_array()).map(Vec::len), Some(2));
    let mut stripped = with.clone();
    stripped
        .pointer_mut(config)
        .and_then(|c| c.as_object_mut())
        .unwrap()
        .remove("x-kubernetes-validations");
    assert_eq!(stripped, without);
}

#[test]
fn the_crd_from_the_types_is_the_built_packages() {
    use local_configmap_operator::package::{crd_options, LocalConfigMaps};
    let built = blue_kubernetes::Package::new(LocalConfigMaps::default()).unwrap();
    for cel in [true, false] {
        let from_package = blue_kubernetes::crd::generate(&built, &crd_options(cel)).unwrap();
        assert_eq!(crd(cel).unwrap(), from_package, "cel: {cel}");
    }
}
