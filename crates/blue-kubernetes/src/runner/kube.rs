//! `--transport kube` (feature `kube`): kube-rs's client, configured by
//! kube-rs itself from the kubeconfig context or the pod's service
//! account. No kubectl runs and nothing listens; the binary picks kube's
//! TLS stack (e.g. kube's `rustls-tls` and `ring` features).

use super::{BoxError, Flags};
use blue_kubernetes_client::KubeClient;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// kube-rs's client for `--context` (in `--kubeconfig`, else kube-rs's
/// lookup: `KUBECONFIG`, then `~/.kube/config`) or `--in-cluster`. kube's
/// own errors are not shown: they can quote the kubeconfig or an exec
/// plugin's output.
pub(super) async fn connect(flags: &Flags) -> Result<KubeClient, BoxError> {
    let config = match flags.in_cluster {
        true => kube::Config::incluster()
            .map_err(|_| "kube transport: no usable in-cluster configuration")?,
        false => {
            let context = flags.context.clone().unwrap_or_default();
            let options = KubeConfigOptions {
                context: Some(context.clone()),
                ..KubeConfigOptions::default()
            };
            let config = match &flags.kubeconfig {
                Some(path) => {
                    let kubeconfig = Kubeconfig::read_from(path).map_err(|_| {
                        let path = path.display();
                        format!("kube transport: {path} is not a readable kubeconfig")
                    })?;
                    kube::Config::from_custom_kubeconfig(kubeconfig, &options).await
                }
                None => kube::Config::from_kubeconfig(&options).await,
            };
            config.map_err(|_| {
                format!(
                    "kube transport: context {context} is missing or unusable in the kubeconfig"
                )
            })?
        }
    };
    let client = kube::Client::try_from(config)
        .map_err(|_| "kube transport: the client could not be built")?;
    Ok(KubeClient::new(client))
}
