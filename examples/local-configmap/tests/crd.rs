//! The CRD `local-configmap-operator crd` prints: with and without its CEL
//! rules, and the same from the types as from the built package. (That
//! the committed manifest is the printed one is `cli`'s unit test.)

use blue_kubernetes::{crd::generate, Package, ResourceSchema};
use local_configmap_operator::cli::runner;
use local_configmap_operator::package::{crd_options, LocalConfigMaps};
use serde_json::Value;

fn crd(cel: bool) -> Value {
    let schema = ResourceSchema::of::<LocalConfigMaps>();
    generate(&schema, &crd_options().with_cel(cel)).unwrap()
}

#[test]
fn without_cel_only_the_validations_are_gone() {
    let with = crd(true);
    let without = crd(false);
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
    let printed = runner().crd_yaml(false).unwrap();
    assert!(printed.ends_with(&blue_kubernetes::crd::to_yaml(&without)));
}

#[test]
fn the_crd_from_the_types_is_the_built_packages() {
    let built = Package::new(LocalConfigMaps::default()).unwrap();
    for cel in [true, false] {
        let from_package = generate(&built, &crd_options().with_cel(cel)).unwrap();
        assert_eq!(crd(cel), from_package, "cel: {cel}");
    }
}
