//! In-cluster credentials as a private, generated kubeconfig.
//!
//! kubectl has no "in-cluster" flag that works with an explicit context, so
//! the client writes a kubeconfig that points at the service-account files.
//! It names the token *file* (`tokenFile`) rather than the token: kubectl
//! rereads it on every run, which follows token rotation, and the token never
//! passes through this process, the kubeconfig, argv or the environment.

use super::options::DEFAULT_SERVICE_ACCOUNT_DIR;
use super::temp::private_file;
use crate::{Error, KubectlConfig};
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;

/// The context (and cluster and user) name in the generated kubeconfig.
pub const IN_CLUSTER_CONTEXT: &str = "blue-in-cluster";

/// Writes the in-cluster kubeconfig described by `options`.
///
/// The returned guard owns the file; the client keeps it for its lifetime.
pub(crate) fn write_kubeconfig(
    options: &KubectlConfig,
    dir: &Path,
) -> Result<NamedTempFile, Error> {
    let server = server_url(
        options
            .service_host
            .clone()
            .or_else(|| env("KUBERNETES_SERVICE_HOST")),
        options
            .service_port
            .clone()
            .or_else(|| env("KUBERNETES_SERVICE_PORT")),
    )?;
    let sa_dir = service_account_dir(options)?;
    let token = sa_dir.join("token");
    let ca = sa_dir.join("ca.crt");
    // Existence only: the token is never opened here.
    if !token.is_file() || !ca.is_file() {
        return Err(Error::InvalidOption {
            field: "service_account_dir",
            reason: "must contain the service-account `token` and `ca.crt` files",
        });
    }
    let kubeconfig = kubeconfig_json(&server, utf8(&ca)?, utf8(&token)?);
    let bytes = serde_json::to_vec_pretty(&kubeconfig).map_err(|_| Error::InvalidOption {
        field: "service_account_dir",
        reason: "could not be written into a kubeconfig",
    })?;
    private_file(Some(dir), "blue-kubeconfig-", ".json", &bytes)
}

/// The kubeconfig document. JSON is valid kubeconfig (YAML is a superset)
/// and serde_json escapes paths correctly.
fn kubeconfig_json(server: &str, ca: &str, token_file: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": IN_CLUSTER_CONTEXT,
            "cluster": { "server": server, "certificate-authority": ca },
        }],
        "users": [{
            "name": IN_CLUSTER_CONTEXT,
            "user": { "tokenFile": token_file },
        }],
        "contexts": [{
            "name": IN_CLUSTER_CONTEXT,
            "context": { "cluster": IN_CLUSTER_CONTEXT, "user": IN_CLUSTER_CONTEXT },
        }],
        "current-context": IN_CLUSTER_CONTEXT,
    })
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// `https://HOST:PORT`, with IPv6 literals bracketed and port 443 by default.
fn server_url(host: Option<String>, port: Option<String>) -> Result<String, Error> {
    let host = host.as_deref().map(str::trim).unwrap_or_default();
    if host.is_empty() {
        return Err(Error::InvalidOption {
            field: "service_host",
            reason: "in-cluster mode needs KUBERNETES_SERVICE_HOST (or `service_host`), which is not set",
        });
    }
    if host
        .chars()
        .any(|c| c.is_whitespace() || "/@?#".contains(c))
    {
        return Err(Error::InvalidOption {
            field: "service_host",
            reason: "is not a host name or IP address",
        });
    }
    let port = match port.as_deref().map(str::trim) {
        None | Some("") => 443,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => {
                return Err(Error::InvalidOption {
                    field: "service_port",
                    reason: "must be a port number between 1 and 65535",
                })
            }
        },
    };
    let host = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_owned()
    };
    Ok(format!("https://{host}:{port}"))
}

/// The service-account directory as an absolute path: kubectl resolves
/// relative paths against the kubeconfig's own (temporary) directory.
fn service_account_dir(options: &KubectlConfig) -> Result<PathBuf, Error> {
    let dir = options
        .service_account_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_SERVICE_ACCOUNT_DIR));
    std::path::absolute(&dir).map_err(|_| Error::InvalidOption {
        field: "service_account_dir",
        reason: "cannot be made absolute",
    })
}

fn utf8(path: &Path) -> Result<&str, Error> {
    path.to_str().ok_or(Error::InvalidOption {
        field: "service_account_dir",
        reason: "must be valid utf-8",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(host: &str, port: Option<&str>) -> Result<String, Error> {
        server_url(Some(host.to_owned()), port.map(str::to_owned))
    }

    #[test]
    fn server_defaults_to_port_443() {
        assert_eq!(url("10.0.0.1", None).unwrap(), "https://10.0.0.1:443");
        assert_eq!(url("10.0.0.1", Some("")).unwrap(), "https://10.0.0.1:443");
    }

    #[test]
    fn server_uses_the_given_port() {
        assert_eq!(
            url("kubernetes.default.svc", Some("6443")).unwrap(),
            "https://kubernetes.default.svc:6443"
        );
    }

    #[test]
    fn ipv6_host_is_bracketed() {
        assert_eq!(
            url("fd00::1", Some("443")).unwrap(),
            "https://[fd00::1]:443"
        );
        assert_eq!(url("[fd00::1]", None).unwrap(), "https://[fd00::1]:443");
    }

    #[test]
    fn missing_or_blank_host_names_the_field() {
        for host in [None, Some(" ".to_owned())] {
            let err = server_url(host, None).unwrap_err();
            assert!(matches!(
                err,
                Error::InvalidOption {
                    field: "service_host",
                    ..
                }
            ));
            assert!(err.to_string().contains("KUBERNETES_SERVICE_HOST"));
        }
    }

    #[test]
    fn malformed_host_or_port_is_rejected() {
        assert!(matches!(
            url("evil.example/path", None),
            Err(Error::InvalidOption {
                field: "service_host",
                ..
            })
        ));
        for port in ["0", "http", "70000"] {
            assert!(matches!(
                url("10.0.0.1", Some(port)),
                Err(Error::InvalidOption {
                    field: "service_port",
                    ..
                })
            ));
        }
    }
}
