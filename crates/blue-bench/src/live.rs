//! State shared by the real-API-server parts: a tokio runtime and the
//! control plane.

use std::sync::Arc;

use anyhow::Result;
use blue_kubernetes_client::{proxy_client, ProxyClient, ProxyConfig};

use crate::api_server::ApiServer;
use blue_testbed::cluster::Mode;
use blue_testbed::world::Testbed;

pub struct Live {
    pub rt: tokio::runtime::Runtime,
    pub server: ApiServer,
}

impl Live {
    pub fn start() -> Result<Self> {
        Ok(Self {
            rt: tokio::runtime::Runtime::new()?,
            server: ApiServer::start()?,
        })
    }

    /// A testbed of its own (namespace, CRDs, RBAC) on the live control
    /// plane, for a part that runs its operator there.
    pub fn testbed(&self, name: &str) -> Result<Testbed> {
        let cp = &self.server.cp;
        let mode = Mode::Context {
            context: cp.context().to_string(),
            kubeconfig: Some(cp.kubeconfig_path().to_path_buf()),
        };
        Testbed::up(name, &mode, None)
    }

    /// A started proxy client of the live control plane: the bench's own
    /// watch streams and requests.
    pub fn proxy(&self) -> Result<Arc<ProxyClient>> {
        let client = Arc::new(proxy_client(ProxyConfig::new(
            self.server.kubectl_options(),
        ))?);
        self.rt.block_on(client.start())?;
        Ok(client)
    }
}
