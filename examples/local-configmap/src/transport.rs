//! The transport `--transport` asks for, connected: a `kubectl proxy`,
//! per-call kubectl, or kube-rs's client.

use crate::cli::{Args, Transport};
use anyhow::{Context, Result};
use blue_kubernetes_client::TransportKind;
use blue_kubernetes_client::{connect, proxy_client, KubeClient, ProxyClient, ProxyConfig};
use kube::config::{KubeConfigOptions, Kubeconfig};
use std::sync::Arc;

/// A connected transport.
pub struct Connected {
    /// For the controller and the package.
    pub transport: Arc<dyn blue_kubernetes_client::Transport>,
    /// The proxy, also by its own type, so its restarts reach /metrics.
    pub proxy: Option<Arc<ProxyClient>>,
}

/// Starts (the proxy) or builds the transport of `args`; a wrong context
/// or kubeconfig fails here rather than at the first request.
pub async fn connect_transport(args: &Args) -> Result<Connected> {
    Ok(match args.transport {
        Transport::Proxy => {
            let proxy = Arc::new(proxy_client(ProxyConfig::new(args.kubectl_options()))?);
            proxy
                .start()
                .await
                .context("starting the proxy transport")?;
            Connected {
                transport: proxy.clone(),
                proxy: Some(proxy),
            }
        }
        Transport::Kubectl => Connected {
            transport: connect(TransportKind::Kubectl, args.kubectl_options())
                .await
                .context("starting the kubectl transport")?,
            proxy: None,
        },
        Transport::Kube => Connected {
            transport: Arc::new(KubeClient::new(kube_client(args).await?)),
            proxy: None,
        },
    })
}

/// kube-rs's client for `--context` (in `--kubeconfig`, else kube-rs's
/// lookup: `KUBECONFIG`, then `~/.kube/config`) or `--in-cluster`. kube's
/// own errors are not shown: they can quote the kubeconfig or an exec
/// plugin's output.
async fn kube_client(args: &Args) -> Result<kube::Client> {
    let config = if args.in_cluster {
        kube::Config::incluster()
            .map_err(|_| anyhow::anyhow!("kube transport: no usable in-cluster configuration"))?
    } else {
        let options = KubeConfigOptions {
            context: args.context.clone(),
            ..KubeConfigOptions::default()
        };
        let unusable = || {
            anyhow::anyhow!(
                "kube transport: context {} is missing or unusable in the kubeconfig",
                args.context.as_deref().unwrap_or_default()
            )
        };
        match &args.kubeconfig {
            Some(path) => {
                let kubeconfig = Kubeconfig::read_from(path).map_err(|_| {
                    anyhow::anyhow!(
                        "kube transport: {} is not a readable kubeconfig",
                        path.display()
                    )
                })?;
                kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                    .await
                    .map_err(|_| unusable())?
            }
            None => kube::Config::from_kubeconfig(&options)
                .await
                .map_err(|_| unusable())?,
        }
    };
    kube::Client::try_from(config)
        .map_err(|_| anyhow::anyhow!("kube transport: the client could not be built"))
}
