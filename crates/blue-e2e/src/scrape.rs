//! Reading a running operator's `/metrics` (and health endpoints): one
//! plain HTTP/1.1 GET, and a sample by its exact name and labels.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};

/// One HTTP/1.1 GET that must answer 200: the body.
pub fn http_get(address: &str, path: &str) -> Result<String> {
    let mut stream =
        TcpStream::connect(address).with_context(|| format!("connecting to {address}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let code: u16 = response
        .get(9..12)
        .and_then(|c| c.parse().ok())
        .context("not an HTTP response")?;
    ensure!(code == 200, "{path} answered {code}");
    let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Ok(body.to_string())
}

/// The value of the sample named exactly `key` (name and labels).
pub fn sample(text: &str, key: &str) -> Result<f64> {
    for line in text.lines() {
        if let Some(value) = line.strip_prefix(key).and_then(|r| r.strip_prefix(' ')) {
            return value.trim().parse().context("sample value");
        }
    }
    bail!("no sample {key}")
}
