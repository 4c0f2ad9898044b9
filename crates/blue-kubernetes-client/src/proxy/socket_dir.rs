//! The proxy's private directory: created 0700, removed with its guard.
//!
//! Only our user can enter it, so only our user can reach the socket inside
//! (kubectl also creates the socket itself as `srwx------`). Its name
//! carries the owning process, like the scratch directories, so a killed
//! process's directory is swept when the next client starts.

use crate::scratch::{owned_prefix, PROXY_DIR_PREFIX};
use crate::Error;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The longest socket path Linux accepts is 107 bytes (`sun_path` is 108
/// with its terminating NUL).
const MAX_SOCKET_PATH: usize = 107;

/// A fresh private directory holding the proxy's socket; deleted on drop.
pub(crate) struct SocketDir {
    dir: tempfile::TempDir,
    socket: PathBuf,
}

impl SocketDir {
    /// Creates `<parent>/blue-proxy-<pid>-<start>-XXXXXX` with mode 0700 (`parent`: the
    /// system temporary directory when `None`).
    pub(crate) fn create(parent: Option<&Path>) -> Result<Self, Error> {
        let mut builder = tempfile::Builder::new();
        let prefix = owned_prefix(PROXY_DIR_PREFIX);
        builder
            .prefix(&prefix)
            .permissions(std::fs::Permissions::from_mode(0o700));
        let dir = match parent {
            Some(parent) => builder.tempdir_in(parent),
            None => builder.tempdir(),
        }
        .map_err(|e| Error::TempFile(e.kind()))?;
        // Explicit, whatever the library or umask did: the mode is the point.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
            .map_err(|e| Error::TempFile(e.kind()))?;
        let socket = dir.path().join("api.sock");
        if socket.as_os_str().len() > MAX_SOCKET_PATH {
            return Err(Error::InvalidOption {
                field: "temp_dir",
                reason: "is too long to hold a unix socket path (107 bytes at most)",
            });
        }
        Ok(Self { dir, socket })
    }

    /// `<dir>/api.sock`.
    pub(crate) fn socket(&self) -> &Path {
        &self.socket
    }

    /// The directory itself.
    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_is_private_and_removed_on_drop() {
        let parent = tempfile::tempdir().unwrap();
        let dir = SocketDir::create(Some(parent.path())).unwrap();
        let path = dir.path().to_path_buf();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(dir.socket(), path.join("api.sock"));
        drop(dir);
        assert!(!path.exists());
    }

    #[test]
    fn a_parent_too_long_for_a_socket_path_is_refused() {
        let parent = tempfile::tempdir().unwrap();
        let deep = parent.path().join("x".repeat(100));
        std::fs::create_dir(&deep).unwrap();
        let err = SocketDir::create(Some(&deep)).err().unwrap();
        assert!(matches!(
            err,
            Error::InvalidOption {
                field: "temp_dir",
                ..
            }
        ));
    }
}
