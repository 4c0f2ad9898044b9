//! Object names and namespaces as they may appear in argv and in a URL path.

use crate::Error;

/// Names and namespaces end up in argv and in a URL path: refuse anything
/// that could read as a flag or change the path. Kubernetes names never
/// contain these characters, so valid objects are unaffected.
pub(crate) fn object_name<'a>(value: &'a str, field: &'static str) -> Result<&'a str, Error> {
    let unsafe_char = |c: char| c.is_whitespace() || c.is_control() || "/?#%\\".contains(c);
    if value.is_empty()
        || value.starts_with('-')
        || value == "."
        || value == ".."
        || value.contains(unsafe_char)
    {
        return Err(Error::InvalidOption {
            field,
            reason: "is not a valid kubernetes object name",
        });
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_escape_argv_or_the_path_are_refused() {
        for bad in ["", "-o=yaml", "a/b", "..", "a b", "a?b", "a%2Fb"] {
            assert!(object_name(bad, "name").is_err(), "{bad:?}");
        }
        for good in ["w", "my-widget.v2", "default"] {
            assert_eq!(object_name(good, "name").unwrap(), good);
        }
    }
}
