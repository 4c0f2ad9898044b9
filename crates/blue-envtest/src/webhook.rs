//! A test's admission webhook (feature `webhook`): its controller's
//! [`Admission`] served in-process on loopback with a CA of the test's
//! own, and the packages' ValidatingWebhookConfiguration installed on
//! this server with that CA and URL, so `kubectl apply` meets the
//! package's checks as in a cluster.
//!
//! ```no_run
//! # fn demo(env: &blue_envtest::Envtest, controller: &blue_kubernetes::Controller) -> Result<(), blue_envtest::Error> {
//! use blue_kubernetes::admission::FailurePolicy;
//! // From the test's thread, a multi-threaded tokio runtime entered.
//! let webhook = env.serve_webhook(controller, "widgets-test", FailurePolicy::Fail)?;
//! // ... `kubectl apply` an invalid widget: refused with the package's message ...
//! webhook.down()?; // not answering: Fail refuses, Ignore admits
//! webhook.up()?;
//! webhook.uninstall()?; // the configuration first, then the server
//! # Ok(()) }
//! ```
//!
//! The same server converts: [`Envtest::serve_conversion`] serves it and
//! installs the CRDs of the packages that serve older versions with their
//! conversion pointed at it, so objects are read and written at every
//! version as in a cluster.
//!
//! ```no_run
//! # fn demo(env: &blue_envtest::Envtest, controller: &blue_kubernetes::Controller) -> Result<(), blue_envtest::Error> {
//! use blue_kubernetes::crd::CrdConfig;
//! let webhook = env.serve_conversion(controller, &CrdConfig::default())?;
//! // ... `kubectl get widgets.v1alpha1.example.com` converts ...
//! webhook.down()?; // lists and watches of the kind fail until `up`
//! # Ok(()) }
//! ```

use crate::{Envtest, Error, Kubectl};
use blue_kubernetes::admission::{
    webhook_configuration, Admission, ClientConfig, FailurePolicy, WebhookOptions,
};
use blue_kubernetes::crd::CrdConfig;
use blue_kubernetes::runner::webhook::{WebhookServer, WebhookTls};
use blue_kubernetes::Controller;
use blue_kubernetes::ResourceSchema;
use std::net::SocketAddr;
use std::sync::{mpsc, Mutex};
use tokio::runtime::Handle;

/// A test's webhook: served in-process, registered with the server.
/// Dropping it removes the configuration and stops the server.
pub struct TestWebhook {
    name: String,
    kubectl: Kubectl,
    handle: Handle,
    admission: Admission,
    tls: WebhookTls,
    address: SocketAddr,
    server: Mutex<Option<WebhookServer>>,
    installed: bool,
}

impl std::fmt::Debug for TestWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestWebhook")
            .field("name", &self.name)
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

fn failed(action: &str, e: impl std::fmt::Display) -> Error {
    Error::Command {
        command: action.to_string(),
        detail: e.to_string(),
    }
}

/// Serves `admission` on `address` on `handle`'s runtime, waiting from
/// this (non-runtime) thread.
fn serve(
    handle: &Handle,
    address: SocketAddr,
    admission: Admission,
    tls: WebhookTls,
) -> Result<WebhookServer, Error> {
    let (sent, received) = mpsc::channel();
    handle.spawn(async move {
        let _ = sent.send(WebhookServer::serve(address, admission, &tls).await);
    });
    let served = received
        .recv()
        .map_err(|e| failed("serving the webhook", e))?;
    served.map_err(|e| failed("serving the webhook", e))
}

impl Envtest {
    /// Serves `controller`'s admission webhook on 127.0.0.1 (a free port)
    /// with a CA made for the test, and installs the packages'
    /// ValidatingWebhookConfiguration `name` (a URL on loopback, that CA,
    /// `policy`) on this server. Call it from the test's thread with a
    /// multi-threaded tokio runtime entered.
    pub fn serve_webhook(
        &self,
        controller: &Controller,
        name: &str,
        policy: FailurePolicy,
    ) -> Result<TestWebhook, Error> {
        let mut webhook = self.serve_only(controller, name)?;
        let mut options = WebhookOptions::new(name, webhook.client_config());
        options.failure_policy = policy;
        options.namespaces = controller.config().namespace.clone();
        let configuration = webhook_configuration(&controller.config().packages, &options);
        webhook.kubectl.apply(&configuration.to_string())?;
        webhook.installed = true;
        Ok(webhook)
    }

    /// Serves `controller`'s webhook server as
    /// [`serve_webhook`](Self::serve_webhook) does, without an admission
    /// configuration, and installs the CRD of each package serving older
    /// versions (generated with `options`) with its conversion sent to
    /// this server with the test's CA. The CRD names this server's port:
    /// a control plane holds one CRD per name
    /// ([`install_crd`](Self::install_crd)), so a test converting a kind
    /// runs on a control plane of its own ([`Envtest::start`]). Call it
    /// from the test's thread with a multi-threaded tokio runtime entered.
    pub fn serve_conversion(
        &self,
        controller: &Controller,
        options: &CrdConfig,
    ) -> Result<TestWebhook, Error> {
        let webhook = self.serve_only(controller, "conversion")?;
        let options = options
            .clone()
            .with_conversion_client(webhook.client_config());
        for package in &controller.config().packages {
            let schema: &ResourceSchema = package.as_ref();
            if schema.served_versions().len() < 2 {
                continue;
            }
            let crd = blue_kubernetes::crd::generate(schema, &options)
                .map_err(|e| failed("generating the CRD", e))?;
            self.install_crd(&crd)?;
        }
        Ok(webhook)
    }

    /// The server alone, not registered anywhere yet.
    fn serve_only(&self, controller: &Controller, name: &str) -> Result<TestWebhook, Error> {
        let handle = Handle::try_current().map_err(|e| failed("finding the tokio runtime", e))?;
        let tls = WebhookTls::self_signed(&[]).map_err(|e| failed("making the test CA", e))?;
        let admission = Admission::new(controller);
        let loopback = "127.0.0.1:0".parse().expect("an address");
        let server = serve(&handle, loopback, admission.clone(), tls.clone())?;
        let address = server.address();
        Ok(TestWebhook {
            name: name.to_string(),
            kubectl: self.cp.kubectl.clone(),
            handle,
            admission,
            tls,
            address,
            server: Mutex::new(Some(server)),
            installed: false,
        })
    }
}

impl TestWebhook {
    /// Where it serves.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// How the API server reaches it (a loopback URL) and trusts it (the
    /// test's CA): for a configuration or a CRD of the test's own.
    pub fn client_config(&self) -> ClientConfig {
        let base = format!("https://{}", self.address);
        self.tls.client_config(&base).expect("a self-signed CA")
    }

    /// Stops serving (the configuration stays): the API server finds no
    /// webhook, and the failure policy decides.
    pub fn down(&self) -> Result<(), Error> {
        let server = self.server.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(server) = server {
            let (sent, received) = mpsc::channel();
            self.handle.spawn(async move {
                server.stop().await;
                let _ = sent.send(());
            });
            received
                .recv()
                .map_err(|e| failed("stopping the webhook", e))?;
        }
        Ok(())
    }

    /// Serves again, on the same address with the same certificate.
    pub fn up(&self) -> Result<(), Error> {
        let mut slot = self.server.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            let server = serve(
                &self.handle,
                self.address,
                self.admission.clone(),
                self.tls.clone(),
            )?;
            *slot = Some(server);
        }
        Ok(())
    }

    /// Removes the configuration, then stops the server (the uninstall
    /// order: with the configuration gone first, nothing is refused for
    /// want of an answer).
    pub fn uninstall(mut self) -> Result<(), Error> {
        self.remove_configuration()?;
        self.down()
    }

    fn remove_configuration(&mut self) -> Result<(), Error> {
        if std::mem::take(&mut self.installed) {
            let args = [
                "delete",
                "validatingwebhookconfiguration",
                &self.name,
                "--ignore-not-found",
            ];
            self.kubectl.ok(&args, None)?;
        }
        Ok(())
    }
}

impl Drop for TestWebhook {
    fn drop(&mut self) {
        let _ = self.remove_configuration();
        let _ = self.down();
    }
}
