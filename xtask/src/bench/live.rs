//! State shared by the real-API-server parts: a tokio runtime and the
//! control plane.

use anyhow::Result;

use super::api_server::ApiServer;

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
}
