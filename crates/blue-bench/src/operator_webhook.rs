//! The example operator with its webhook server (parts `webhook` and
//! `conversion`): the flags that serve it self-signed on a free loopback
//! port, and the removal of the ValidatingWebhookConfiguration it applies.

use anyhow::Result;

use blue_testbed::world::World;

/// The ValidatingWebhookConfiguration the example applies (its name).
pub const CONFIGURATION: &str = "local-configmap-operator";

/// The world's connection flags plus a self-signed webhook server on a
/// free loopback port (the operator registers it, with its CA).
pub fn webhook_args(world: &World) -> Vec<String> {
    let mut args = world.connect_args();
    args.extend(["--webhook-bind", "127.0.0.1:0", "--webhook-self-signed"].map(String::from));
    args
}

/// Deletes the webhook configuration. The uninstall order: the
/// configuration first, or (`Fail`, no webhook answering) the teardown's
/// finalizer removals are refused.
pub fn remove_configuration(world: &World) -> Result<()> {
    let args = ["delete", "validatingwebhookconfiguration", CONFIGURATION];
    world
        .kube
        .ok(&[args.as_slice(), &["--ignore-not-found"]].concat(), None)?;
    Ok(())
}
