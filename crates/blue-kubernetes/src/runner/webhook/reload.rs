//! Certificates from a directory (`tls.crt` and `tls.key`, as cert-manager
//! mounts a Secret), read again when they change: the files are compared
//! every interval (a Secret volume is updated by swapping a symlink, so
//! their times say little), and a pair that loads replaces the served one.
//! A pair that does not load (one file written, the other not yet) leaves
//! the old one serving until the next look.

use super::certificates::{certified_key, Certificates};
use super::WebhookError;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The two files' contents.
type Pair = (Vec<u8>, Vec<u8>);

fn read(dir: &Path) -> Result<Pair, WebhookError> {
    let file = |name: &'static str| {
        std::fs::read(dir.join(name)).map_err(|e| WebhookError::CertificateFile(name, e.kind()))
    };
    Ok((file("tls.crt")?, file("tls.key")?))
}

/// The certificates in `dir` now, and what was read, to tell a change.
pub(crate) fn load(dir: &Path) -> Result<(Certificates, Pair), WebhookError> {
    let pair = read(dir)?;
    let key = certified_key(&pair.0, &pair.1)?;
    Ok((Certificates::new(key), pair))
}

/// Looks at `dir` every `every` and swaps a changed pair into
/// `certificates`, until the task is aborted.
pub(crate) async fn watch(
    dir: PathBuf,
    certificates: Arc<Certificates>,
    mut served: Pair,
    every: Duration,
) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Ok(now) = read(&dir) else { continue };
        if now == served {
            continue;
        }
        match certified_key(&now.0, &now.1) {
            Ok(key) => {
                certificates.replace(key);
                served = now;
                tracing::info!(dir = %dir.display(), "webhook certificate reloaded");
            }
            Err(e) => {
                tracing::debug!(dir = %dir.display(), "webhook certificate not reloaded yet: {e}")
            }
        }
    }
}
