//! The shared control plane: CRDs installed once, namespaces apart, a
//! client that reaches it.

use blue_envtest::{Envtest, Error};
use serde_json::{json, Value};

fn widget_crd(description: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.envtest.example.com"},
        "spec": {
            "group": "envtest.example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "description": description,
                    "x-kubernetes-validations": [{"rule": "true"}],
                    "properties": {"spec": {"type": "object", "properties": {
                        "size": {"type": "integer", "default": 1}
                    }}}
                }}
            }]
        }
    })
}

#[test]
fn installing_the_same_crd_again_is_a_no_op_and_it_serves_objects() {
    let env = Envtest::shared().unwrap();
    env.install_crd(&widget_crd("a widget")).unwrap();
    env.install_crd(&widget_crd("a widget")).unwrap();
    let ns = env.namespace("same-crd").unwrap();
    let object = json!({
        "apiVersion": "envtest.example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {}
    });
    let stored = env.create(&ns, &object).unwrap();
    assert_eq!(stored["spec"]["size"], 1, "defaulted by the CRD's schema");
}

#[test]
fn a_different_crd_of_the_same_name_is_refused_naming_it() {
    let env = Envtest::shared().unwrap();
    env.install_crd(&widget_crd("a widget")).unwrap();
    let err = env.install_crd(&widget_crd("another widget")).unwrap_err();
    assert!(matches!(&err, Error::CrdConflict { name } if name == "widgets.envtest.example.com"));
    assert!(
        err.to_string().contains("widgets.envtest.example.com"),
        "{err}"
    );
}

#[test]
fn two_namespaces_are_distinct_and_exist() {
    let env = Envtest::shared().unwrap();
    let (a, b) = (
        env.namespace("apart").unwrap(),
        env.namespace("apart").unwrap(),
    );
    assert_ne!(a, b);
    assert!(a.starts_with("apart-") && b.starts_with("apart-"));
    for ns in [&a, &b] {
        env.kubectl(&["get", "namespace", ns]).unwrap();
    }
    assert!(matches!(
        env.namespace("Not_A_Label"),
        Err(Error::InvalidPrefix { .. })
    ));
}

#[test]
fn the_client_reaches_the_shared_server() {
    let env = Envtest::shared().unwrap();
    let ns = env.namespace("client").unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = env.client().unwrap();
    let descriptor =
        blue_kubernetes_client::ResourceDescriptor::new("", "v1", "configmaps", "ConfigMap");
    let listed = runtime.block_on(client.list_resources(&descriptor, &ns));
    assert_eq!(listed.unwrap(), Vec::<Value>::new());
}
