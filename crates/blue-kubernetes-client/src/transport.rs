//! Choosing a transport: per-call kubectl or one persistent proxy.

use crate::{kubectl_client, proxy_client, Error, KubectlConfig, ProxyConfig, Transport};
use std::sync::Arc;

/// Which transport a client uses.
///
/// - [`Kubectl`](Self::Kubectl) (the default): one kubectl process per
///   request. Nothing runs between requests and nothing listens, but every
///   request costs about 0.1 s of CPU; fine for a few dozen resources.
/// - [`Proxy`](Self::Proxy): one long-lived `kubectl proxy` per client on a
///   private Unix socket; requests cost about a millisecond. Pick it for
///   anything larger, or when reaction time matters.
///
/// ```
/// use blue_kubernetes_client::TransportKind;
/// assert_eq!("proxy".parse::<TransportKind>().unwrap(), TransportKind::Proxy);
/// assert_eq!(TransportKind::default(), TransportKind::Kubectl);
/// assert_eq!(TransportKind::Proxy.to_string(), "proxy");
/// assert!("http".parse::<TransportKind>().is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportKind {
    /// [`KubectlClient`](crate::KubectlClient): a kubectl process per request.
    #[default]
    Kubectl,
    /// [`ProxyClient`](crate::ProxyClient): HTTP to one `kubectl proxy`.
    Proxy,
}

impl std::str::FromStr for TransportKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "kubectl" => Ok(TransportKind::Kubectl),
            "proxy" => Ok(TransportKind::Proxy),
            _ => Err(Error::InvalidOption {
                field: "transport",
                reason: "must be `kubectl` or `proxy`",
            }),
        }
    }
}

impl std::fmt::Display for TransportKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TransportKind::Kubectl => "kubectl",
            TransportKind::Proxy => "proxy",
        })
    }
}

/// Builds a transport of `kind` from `options`; a proxy is started and
/// waited for (bounded) before this returns, so a wrong kubectl or context
/// shows here rather than at the first request.
///
/// ```no_run
/// # async fn example() -> Result<(), blue_kubernetes_client::Error> {
/// use blue_kubernetes_client::{connect, KubectlConfig, Transport, TransportKind};
/// let transport = connect(TransportKind::Proxy, KubectlConfig::for_context("kind-dev")).await?;
/// let client = transport.clone().into_client(); // for the controller
/// let api = transport.into_raw_api(); // for packages
/// # let _ = (client, api);
/// # Ok(())
/// # }
/// ```
pub async fn connect(
    kind: TransportKind,
    options: KubectlConfig,
) -> Result<Arc<dyn Transport>, Error> {
    Ok(match kind {
        TransportKind::Kubectl => Arc::new(kubectl_client(options)?),
        TransportKind::Proxy => {
            let client = proxy_client(ProxyConfig::new(options))?;
            client.start().await?;
            Arc::new(client)
        }
    })
}
