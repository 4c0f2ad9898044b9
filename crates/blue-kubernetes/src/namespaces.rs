//! Which namespaces a controller manages.

use crate::domain::names::is_dns_label;

/// The namespaces a controller lists, watches and reconciles in: one,
/// several, or all. Cluster-scoped types ignore it (their objects have no
/// namespace).
///
/// Converts from a name, so `config.namespace = "infra".into()` keeps
/// working:
///
/// ```
/// use blue_kubernetes::config::Namespaces;
/// assert_eq!(Namespaces::from("infra"), Namespaces::Only(vec!["infra".into()]));
/// assert_eq!(Namespaces::from(["a", "b"]).scopes(), vec!["a", "b"]);
/// assert_eq!(Namespaces::All.scopes(), vec![""]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Namespaces {
    /// Every namespace: one cluster-wide list and watch per type (needs
    /// cluster-wide RBAC).
    All,
    /// These namespaces (at least one, each once): one list and watch per
    /// namespace and type.
    Only(Vec<String>),
}

impl Namespaces {
    /// What to list and watch: each namespace, or `""` for all of them (the
    /// Kubernetes API's convention).
    pub fn scopes(&self) -> Vec<&str> {
        match self {
            Namespaces::All => vec![""],
            Namespaces::Only(names) => names.iter().map(String::as_str).collect(),
        }
    }

    /// Whether objects of `namespace` are managed.
    ///
    /// ```
    /// use blue_kubernetes::config::Namespaces;
    /// assert!(Namespaces::from(["a", "b"]).contains("b"));
    /// assert!(!Namespaces::from("a").contains("b"));
    /// assert!(Namespaces::All.contains("b"));
    /// ```
    pub fn contains(&self, namespace: &str) -> bool {
        match self {
            Namespaces::All => true,
            Namespaces::Only(names) => names.iter().any(|n| n == namespace),
        }
    }

    /// Why it is unusable, if it is.
    pub(crate) fn problem(&self) -> Option<&'static str> {
        let Namespaces::Only(names) = self else {
            return None;
        };
        if names.is_empty() {
            return Some("must name at least one namespace (or be Namespaces::All)");
        }
        if !names.iter().all(|n| is_dns_label(n)) {
            return Some("must be DNS-1123 labels");
        }
        let mut sorted: Vec<_> = names.iter().collect();
        sorted.sort();
        sorted.dedup();
        (sorted.len() != names.len()).then_some("must not name a namespace twice")
    }
}

impl From<&str> for Namespaces {
    fn from(name: &str) -> Self {
        Namespaces::Only(vec![name.to_string()])
    }
}

impl From<String> for Namespaces {
    fn from(name: String) -> Self {
        Namespaces::Only(vec![name])
    }
}

impl From<Vec<String>> for Namespaces {
    fn from(names: Vec<String>) -> Self {
        Namespaces::Only(names)
    }
}

impl<const N: usize> From<[&str; N]> for Namespaces {
    fn from(names: [&str; N]) -> Self {
        Namespaces::Only(names.iter().map(|n| n.to_string()).collect())
    }
}

impl std::fmt::Display for Namespaces {
    /// `all namespaces`, or the names joined with commas.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Namespaces::All => f.write_str("all namespaces"),
            Namespaces::Only(names) => f.write_str(&names.join(",")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_duplicate_and_malformed_lists_are_refused() {
        assert!(Namespaces::Only(vec![]).problem().is_some());
        assert!(Namespaces::from(["a", "a"]).problem().is_some());
        assert!(Namespaces::from("Not Valid").problem().is_some());
        assert!(Namespaces::from("").problem().is_some());
        assert_eq!(Namespaces::from(["a", "b"]).problem(), None);
        assert_eq!(Namespaces::All.problem(), None);
    }
}
