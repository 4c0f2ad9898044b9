//! Certificates, keys and the bearer token, made with the `openssl` CLI
//! (ECDSA P-256: fast to generate, accepted by kube-apiserver and kubectl),
//! into the control plane's directory: `ca.crt` (also the client CA and the
//! kubeconfig's), `serving.crt` and `serving.key` (127.0.0.1, localhost),
//! `sa.key` and `sa.pub` (service-account signing), and `tokens.csv` (the
//! `--token-auth-file`: one admin user in `system:masters`).

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::error::{io_error, Error};
use crate::random::random_hex;

const OPENSSL_CNF: &str = "\
[req]
distinguished_name = dn
prompt = no

[dn]
CN = blue-local

[ca_ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash

[serving_ext]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc
";

/// Name of the admin user in the token file.
pub const ADMIN_USER: &str = "blue-admin";

/// Runs `openssl` in `dir` with `command_line` split at whitespace (no
/// argument here contains any).
fn openssl(dir: &Path, command_line: &str) -> Result<(), Error> {
    let out = Command::new("openssl")
        .args(command_line.split_whitespace())
        .current_dir(dir)
        .output()
        .map_err(io_error(
            "running the openssl CLI (install it, e.g. `apt-get install openssl`)",
        ))?;
    if !out.status.success() {
        return Err(Error::Command {
            command: format!("openssl {command_line}"),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(())
}

/// Generates the files in `dir`; returns the admin's bearer token.
pub(crate) fn generate(dir: &Path) -> Result<String, Error> {
    let write = |name: &str, text: &str| {
        fs::write(dir.join(name), text).map_err(io_error(format!("writing {name}")))
    };
    write("openssl.cnf", OPENSSL_CNF)?;
    let ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    let serial = format!("0x{}", random_hex(8)?);
    for command_line in [
        format!(
            "req -x509 -config openssl.cnf -extensions ca_ext {ec} \
             -keyout ca.key -out ca.crt -days 30 -subj /CN=blue-local-ca"
        ),
        format!(
            "req -new -config openssl.cnf {ec} \
             -keyout serving.key -out serving.csr -subj /CN=kube-apiserver"
        ),
        format!(
            "x509 -req -in serving.csr -CA ca.crt -CAkey ca.key -set_serial {serial} \
             -days 30 -extfile openssl.cnf -extensions serving_ext -out serving.crt"
        ),
        "genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out sa.key".into(),
        "pkey -in sa.key -pubout -out sa.pub".into(),
    ] {
        openssl(dir, &command_line)?;
    }

    let token = random_hex(24)?;
    write(
        "tokens.csv",
        &format!("{token},{ADMIN_USER},{ADMIN_USER},\"system:masters\"\n"),
    )?;
    Ok(token)
}
