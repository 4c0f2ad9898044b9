//! Private temporary files, removed when their guard drops.

use crate::Error;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use tempfile::NamedTempFile;

/// Writes `contents` to a new file readable only by this user (0600) in
/// `dir` (the system temporary directory when `None`).
///
/// The returned guard deletes the file when dropped, which is what keeps
/// cleanup correct on success, failure, timeout, cancellation and panic
/// alike: callers hold it across the `await` that uses the file.
pub(crate) fn private_file(
    dir: Option<&Path>,
    prefix: &str,
    suffix: &str,
    contents: &[u8],
) -> Result<NamedTempFile, Error> {
    let mut builder = tempfile::Builder::new();
    // Explicit, although tempfile already defaults to 0600: the mode is the
    // point of this function and must not depend on a library default.
    builder
        .prefix(prefix)
        .suffix(suffix)
        .permissions(std::fs::Permissions::from_mode(0o600));
    let mut file = match dir {
        Some(dir) => builder.tempfile_in(dir),
        None => builder.tempfile(),
    }
    .map_err(|e| Error::TempFile(e.kind()))?;
    file.write_all(contents)
        .and_then(|()| file.flush())
        .map_err(|e| Error::TempFile(e.kind()))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_file_is_owner_only_and_removed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let file = private_file(Some(dir.path()), "blue-", ".json", b"{}").unwrap();
        let path = file.path().to_path_buf();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read(&path).unwrap(), b"{}");
        drop(file);
        assert!(!path.exists());
    }

    #[test]
    fn unusable_directory_is_a_temp_file_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let err = private_file(Some(&missing), "blue-", "", b"x").unwrap_err();
        assert!(matches!(err, Error::TempFile(std::io::ErrorKind::NotFound)));
    }
}
