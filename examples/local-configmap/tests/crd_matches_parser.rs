//! The shipped CRD admits exactly what the controller accepts.

const CRD: &str = include_str!("../manifests/crd.yaml");

/// The `pattern:` of the `reconcileInterval` property.
fn interval_pattern() -> &'static str {
    let property = CRD
        .find("reconcileInterval:")
        .expect("the CRD has a reconcileInterval property");
    let rest = &CRD[property..];
    let line = rest
        .lines()
        .find(|l| l.trim_start().starts_with("pattern:"))
        .expect("reconcileInterval has a pattern");
    let quoted = line.trim_start().trim_start_matches("pattern:").trim();
    quoted.trim_matches(['\'', '"'])
}

#[test]
fn crd_interval_pattern_is_the_controllers_pattern() {
    assert_eq!(
        interval_pattern(),
        blue_kubernetes::resource::reconcile_interval_pattern()
    );
}
