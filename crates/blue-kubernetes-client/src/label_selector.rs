//! Label selectors read the way the API server reads them, so whatever
//! serves or keeps a selected list (a fake cluster, a cache) holds exactly
//! the objects the server would send.

use crate::Error;
use serde_json::Value;
use std::str::FromStr;

/// A parsed label selector: every requirement must hold (a comma is AND).
///
/// The API server's grammar: `key=value` (or `key==value`), `key!=value`
/// (also true without the label), `key` (the label exists), `!key` (it does
/// not), `key in (a,b)`, `key notin (a,b)` (also true without the label),
/// and `key>N`, `key<N` for integer values. Keys are qualified names
/// (`example.com/owner`), values at most 63 characters of `[A-Za-z0-9-_.]`.
/// The empty selector matches every object.
///
/// ```
/// use blue_kubernetes_client::LabelSelector;
/// use serde_json::json;
/// let web: LabelSelector = "app=web,tier!=cache,!example.com/paused".parse().unwrap();
/// assert!(web.matches(&json!({"metadata": {"labels": {"app": "web"}}})));
/// assert!(!web.matches(&json!({"metadata": {"labels": {"app": "web", "tier": "cache"}}})));
/// assert!(!web.matches(&json!({"metadata": {}})));
/// assert!("app in (web,api),owner".parse::<LabelSelector>().is_ok());
/// assert!("app=web,,".parse::<LabelSelector>().is_err());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Op,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Op {
    Exists,
    NotExists,
    Equals(String),
    NotEquals(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    GreaterThan(i64),
    LessThan(i64),
}

impl LabelSelector {
    /// Parses `selector`; a malformed term fails with
    /// [`Error::InvalidLabelSelector`] naming that term.
    pub fn parse(selector: &str) -> Result<Self, Error> {
        if selector.trim().is_empty() {
            return Ok(Self::default());
        }
        let requirements = terms(selector)
            .into_iter()
            .map(|term| requirement(term.trim()).ok_or_else(|| invalid(term)))
            .collect::<Result<_, _>>()?;
        Ok(Self { requirements })
    }

    /// True when `object`'s `metadata.labels` satisfy every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = object.pointer("/metadata/labels");
        let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
        self.requirements.iter().all(|r| r.op.holds(label(&r.key)))
    }

    /// True for the empty selector, which matches every object.
    pub fn is_everything(&self) -> bool {
        self.requirements.is_empty()
    }
}

impl FromStr for LabelSelector {
    type Err = Error;

    fn from_str(selector: &str) -> Result<Self, Error> {
        Self::parse(selector)
    }
}

impl Op {
    fn holds(&self, label: Option<&str>) -> bool {
        let number = || label.and_then(|l| l.parse::<i64>().ok());
        match self {
            Op::Exists => label.is_some(),
            Op::NotExists => label.is_none(),
            Op::Equals(value) => label == Some(value.as_str()),
            Op::NotEquals(value) => label != Some(value.as_str()),
            Op::In(values) => label.is_some_and(|l| values.iter().any(|v| v == l)),
            Op::NotIn(values) => !label.is_some_and(|l| values.iter().any(|v| v == l)),
            Op::GreaterThan(n) => number().is_some_and(|l| l > *n),
            Op::LessThan(n) => number().is_some_and(|l| l < *n),
        }
    }
}

fn invalid(term: &str) -> Error {
    Error::InvalidLabelSelector {
        term: term.trim().to_owned(),
    }
}

/// The selector split at the commas outside a value set's parentheses.
fn terms(selector: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in selector.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                terms.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// One trimmed term; `None` when the server would refuse it.
fn requirement(term: &str) -> Option<Requirement> {
    if let Some(key) = term.strip_prefix('!') {
        let key = key.trim_start();
        return qualified_name(key).then(|| Requirement {
            key: key.to_owned(),
            op: Op::NotExists,
        });
    }
    let end = term
        .find(|c: char| !(c.is_ascii_alphanumeric() || "-_./".contains(c)))
        .unwrap_or(term.len());
    let (key, rest) = term.split_at(end);
    if !qualified_name(key) {
        return None;
    }
    let op = operator(rest.trim_start())?;
    Some(Requirement {
        key: key.to_owned(),
        op,
    })
}

/// What follows a term's key.
fn operator(rest: &str) -> Option<Op> {
    let exact = |value: &str| {
        let value = value.trim();
        label_value(value).then(|| value.to_owned())
    };
    if rest.is_empty() {
        return Some(Op::Exists);
    }
    for (token, set) in [("notin", false), ("in", true)] {
        if let Some(values) = rest.strip_prefix(token).and_then(value_set) {
            return Some(if set {
                Op::In(values)
            } else {
                Op::NotIn(values)
            });
        }
    }
    if let Some(value) = rest.strip_prefix("!=") {
        exact(value).map(Op::NotEquals)
    } else if let Some(value) = rest.strip_prefix("==").or_else(|| rest.strip_prefix('=')) {
        exact(value).map(Op::Equals)
    } else if let Some(value) = rest.strip_prefix('>') {
        value.trim().parse().ok().map(Op::GreaterThan)
    } else if let Some(value) = rest.strip_prefix('<') {
        value.trim().parse().ok().map(Op::LessThan)
    } else {
        None
    }
}

/// `(a, b)` after `in`/`notin`: at least one value.
fn value_set(rest: &str) -> Option<Vec<String>> {
    let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
    let values: Vec<String> = inner.split(',').map(|v| v.trim().to_owned()).collect();
    let valid = !inner.trim().is_empty() && values.iter().all(|v| label_value(v));
    valid.then_some(values)
}

/// `[prefix/]name`: an optional DNS subdomain, then a label value that is
/// not empty.
fn qualified_name(key: &str) -> bool {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|part| {
                let inner = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
                let edge = |c: Option<char>| c.is_some_and(|c| inner(c) && c != '-');
                edge(part.chars().next()) && edge(part.chars().last()) && part.chars().all(inner)
            })
    });
    prefix_ok && !name.is_empty() && label_value(name)
}

/// Empty, or at most 63 of `[A-Za-z0-9-_.]` with an alphanumeric at each end.
fn label_value(value: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    value.is_empty()
        || (value.len() <= 63
            && edge(value.chars().next())
            && edge(value.chars().last())
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labelled(labels: Value) -> Value {
        json!({"metadata": {"name": "o", "labels": labels}})
    }

    fn selects(selector: &str, labels: Value) -> bool {
        LabelSelector::parse(selector)
            .unwrap()
            .matches(&labelled(labels))
    }

    #[test]
    fn equality_terms_match_as_the_api_server_does() {
        assert!(selects("app=web", json!({"app": "web"})));
        assert!(selects("app==web", json!({"app": "web"})));
        assert!(!selects("app=web", json!({"app": "api"})));
        assert!(!selects("app=web", json!({})));
        // `!=` also holds for an object without the label.
        assert!(selects("app!=web", json!({})));
        assert!(!selects("app!=web", json!({"app": "web"})));
        assert!(selects("app=", json!({"app": ""})));
    }

    #[test]
    fn existence_terms_and_qualified_keys() {
        assert!(selects(
            "example.com/owner",
            json!({"example.com/owner": "x"})
        ));
        assert!(!selects("example.com/owner", json!({"owner": "x"})));
        assert!(selects("!example.com/owner", json!({"owner": "x"})));
        assert!(!selects("! owner", json!({"owner": "x"})));
    }

    #[test]
    fn set_and_numeric_terms() {
        assert!(selects("tier in (web, api)", json!({"tier": "api"})));
        assert!(!selects("tier in (web,api)", json!({})));
        assert!(selects("tier notin (cache)", json!({})));
        assert!(!selects("tier notin (cache)", json!({"tier": "cache"})));
        assert!(selects("shard>2", json!({"shard": "3"})));
        assert!(!selects("shard<2", json!({"shard": "x"})));
    }

    #[test]
    fn commas_are_and_and_spaces_are_allowed_around_terms() {
        let s = " app = web , tier in (a,b) , !paused ";
        assert!(selects(s, json!({"app": "web", "tier": "b"})));
        assert!(!selects(
            s,
            json!({"app": "web", "tier": "b", "paused": "1"})
        ));
        assert!(selects("", json!({})));
        assert!(LabelSelector::parse("  ").unwrap().is_everything());
    }

    #[test]
    fn a_malformed_term_is_refused_and_named() {
        for (selector, term) in [
            ("app=web,,tier", ""),
            ("app=web,", ""),
            ("app=web,a b", "a b"),
            ("app=we b", "app=we b"),
            ("app~web", "app~web"),
            ("app in ()", "app in ()"),
            ("app in (a", "app in (a"),
            ("Example.com/x", "Example.com/x"),
            ("/x", "/x"),
            ("-app", "-app"),
            ("shard>x", "shard>x"),
            ("appin (a)", "appin (a)"),
        ] {
            let err = LabelSelector::parse(selector).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::Invalid, "{selector}");
            match err {
                Error::InvalidLabelSelector { term: named } => assert_eq!(named, term),
                other => panic!("{selector}: {other:?}"),
            }
        }
        let long = format!("app={}", "v".repeat(64));
        assert!(LabelSelector::parse(&long).is_err());
    }
}
