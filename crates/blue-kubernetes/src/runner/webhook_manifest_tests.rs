//! `crd --webhook-service`: the ValidatingWebhookConfiguration printed
//! beside the CRDs, generated from the same declarations; and the
//! webhook's flags.

use super::*;
use crate::admission::{ClientConfig, WebhookOptions};
use blue_kubernetes_client::ResourceDescriptor;

fn runner() -> Runner {
    let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    Runner::new("widget-operator").crd(ResourceSchema::new(widgets), CrdConfig::default())
}

fn crd_webhook(args: &[&str]) -> Option<WebhookOptions> {
    let mut all = vec!["widget-operator", "crd"];
    all.extend_from_slice(args);
    match runner().parse_from(all) {
        Ok(Invocation::Crd { webhook, .. }) => webhook,
        Ok(_) => panic!("not crd"),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn crd_prints_the_webhook_configuration_only_when_asked() {
    assert_eq!(crd_webhook(&[]), None);
    let options = crd_webhook(&[
        "--webhook-service",
        "ops/widget-operator:9443",
        "--webhook-certificate",
        "ops/widget-operator-webhook",
        "--webhook-failure-policy",
        "Ignore",
    ])
    .unwrap();
    let yaml = runner().webhook_yaml(&options);
    for line in [
        "kind: ValidatingWebhookConfiguration",
        "name: widget-operator",
        "cert-manager.io/inject-ca-from: ops/widget-operator-webhook",
        "name: validate.widgets.example.com",
        "sideEffects: None",
        "matchPolicy: Equivalent",
        "failurePolicy: Ignore",
        "timeoutSeconds: 10",
        "path: \"/validate/example.com/v1/widgets\"",
        "port: 9443",
        "- UPDATE",
    ] {
        assert!(yaml.contains(line), "{line} missing from\n{yaml}");
    }
    assert!(!yaml.contains("status"), "{yaml}");
    assert!(!yaml.contains("DELETE"), "{yaml}");
    assert!(!yaml.contains("namespaceSelector"), "{yaml}");
}

#[test]
fn a_namespace_selector_only_where_namespaces_carry_their_name_label() {
    let options = crd_webhook(&[
        "--webhook-service",
        "ops/widget-operator",
        "--webhook-namespaces",
        "a,b",
    ])
    .unwrap();
    let yaml = runner().webhook_yaml(&options);
    assert!(yaml.contains("kubernetes.io/metadata.name"), "{yaml}");
    assert!(yaml.contains("port: 443"), "{yaml}");
}

#[test]
fn a_malformed_webhook_service_is_a_usage_error() {
    for service in ["widget-operator", "ops/Bad_Name", "ops/op:http"] {
        let args = ["widget-operator", "crd", "--webhook-service", service];
        let err = runner().parse_from(args).err().expect("refused");
        assert!(err.to_string().contains("NAMESPACE/NAME[:PORT]"), "{err}");
    }
}

#[test]
fn a_url_client_carries_the_ca_bundle() {
    let options = WebhookOptions::new(
        "op",
        ClientConfig::Url {
            base: "https://127.0.0.1:9443/".into(),
            ca_bundle: "PEM".into(),
        },
    );
    let runner = runner();
    let configuration = crate::admission::webhook_configuration(
        runner.crds.iter().map(|(schema, _)| schema),
        &options,
    );
    let client = &configuration["webhooks"][0]["clientConfig"];
    assert_eq!(
        client["url"],
        "https://127.0.0.1:9443/validate/example.com/v1/widgets"
    );
    assert_eq!(client["caBundle"], "UEVN");
}

#[cfg(feature = "webhook")]
#[test]
fn without_webhook_bind_nothing_listens_and_the_modes_need_it() {
    let parse = |args: &[&str]| {
        let mut all = vec!["widget-operator", "--in-cluster"];
        all.extend_from_slice(args);
        runner().parse_from(all)
    };
    match parse(&[]) {
        Ok(Invocation::Run(flags, ..)) => assert_eq!(flags.webhook.webhook_bind, None),
        _ => panic!("not a run"),
    }
    assert!(parse(&["--webhook-self-signed"]).is_err());
    assert!(parse(&["--webhook-cert-dir", "/certs"]).is_err());
    let both = [
        "--webhook-bind",
        ":9443",
        "--webhook-cert-dir",
        "/c",
        "--webhook-self-signed",
    ];
    assert!(parse(&both).is_err());
    match parse(&["--webhook-bind", "0.0.0.0:9443", "--webhook-self-signed"]) {
        Ok(Invocation::Run(flags, ..)) => {
            assert!(flags.webhook.webhook_self_signed);
            let checks = super::webhook::run::access_checks(&flags.webhook, &[]);
            assert_eq!(checks.len(), 2);
            // A kind serving older versions: its CRD is pointed at the
            // webhook too.
            let converting = [Package::new(crate::versions::tests::Widgets).unwrap()];
            let checks = super::webhook::run::access_checks(&flags.webhook, &converting);
            assert_eq!(checks.len(), 3);
            assert!(
                checks[2].to_string().contains("customresourcedefinitions"),
                "{}",
                checks[2]
            );
        }
        _ => panic!("not a run"),
    }
    match parse(&[
        "--webhook-bind",
        "0.0.0.0:9443",
        "--webhook-cert-dir",
        "/certs",
    ]) {
        // Certificates from a directory need no RBAC of their own.
        Ok(Invocation::Run(flags, ..)) => {
            let converting = [Package::new(crate::versions::tests::Widgets).unwrap()];
            assert!(super::webhook::run::access_checks(&flags.webhook, &converting).is_empty())
        }
        _ => panic!("not a run"),
    }
}

#[test]
fn crd_with_a_webhook_service_sends_conversions_where_admission_goes() {
    let runner = Runner::new("widget-operator").crd(
        ResourceSchema::of::<crate::versions::tests::Widgets>(),
        CrdConfig::default(),
    );
    let options = crd_webhook(&[
        "--webhook-service",
        "ops/widget-operator:9443",
        "--webhook-certificate",
        "ops/widget-operator-webhook",
    ])
    .unwrap();
    let yaml = crd::yaml("widget-operator", &runner.crds, true, Some(&options)).unwrap();
    let conversion = yaml
        .split("conversion:\n")
        .nth(1)
        .expect("a conversion stanza");
    for line in [
        "clientConfig:",
        "name: widget-operator",
        "namespace: ops",
        "path: \"/convert\"",
        "port: 9443",
        "conversionReviewVersions:",
    ] {
        assert!(conversion.contains(line), "{line} missing from\n{yaml}");
    }
    assert!(
        yaml.contains("cert-manager.io/inject-ca-from: ops/widget-operator-webhook"),
        "{yaml}"
    );
    // Without the flag, the placeholder: applies, converts nothing.
    let plain = crd::yaml("widget-operator", &runner.crds, true, None).unwrap();
    assert!(plain.contains("name: conversion-webhook"), "{plain}");
}
