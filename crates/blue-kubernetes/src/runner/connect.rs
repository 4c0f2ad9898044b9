//! The transport the runner connects through, as the flags choose it.

use super::{BoxError, Flags, Transport};
use blue_kubernetes_client::{
    connect, proxy_client, KubectlConfig, ProxyClient, ProxyConfig, TransportKind,
};
use std::sync::Arc;

/// The transport, started; the proxy also by its own type, so its
/// restarts reach `/metrics`.
pub(crate) async fn connect_transport(
    flags: &Flags,
    kubectl: KubectlConfig,
) -> Result<
    (
        Arc<dyn blue_kubernetes_client::Transport>,
        Option<Arc<ProxyClient>>,
    ),
    BoxError,
> {
    Ok(match flags.transport {
        Transport::Proxy => {
            let proxy = Arc::new(proxy_client(ProxyConfig::new(kubectl))?);
            proxy
                .start()
                .await
                .map_err(|e| format!("starting the proxy transport: {e}"))?;
            (proxy.clone(), Some(proxy))
        }
        Transport::Kubectl => {
            let client = connect(TransportKind::Kubectl, kubectl)
                .await
                .map_err(|e| format!("starting the kubectl transport: {e}"))?;
            (client, None)
        }
        #[cfg(feature = "kube")]
        Transport::Kube => (Arc::new(super::kube::connect(flags).await?), None),
    })
}
