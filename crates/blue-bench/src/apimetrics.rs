//! What the API server says it served: `apiserver_request_total` and the
//! open long-running requests (watches) from its `/metrics`, the honest
//! source for "requests while idle" whatever transport a client uses.
//!
//! Caveat: kube-apiserver 1.20 (the local control plane) reports a GET of
//! one custom resource as verb `LIST` with scope `namespace`, exactly as a
//! list (kubernetes#95556; checked by hand: three GETs of one object counted
//! as three LISTs). Nothing in the metric tells the two apart, so on
//! custom resources `LIST` counts both; totals per check are right.

use std::collections::BTreeMap;

use anyhow::Result;

use crate::api_server::ApiServer;

/// Counters of one scrape: (verb, resource) -> completed requests, and
/// resource -> open watches. Requests without a resource (`/metrics`,
/// discovery, `/healthz`) are left out: the bench's own scrapes are such.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scrape {
    requests: BTreeMap<(String, String), f64>,
    watches: BTreeMap<String, f64>,
    /// `apiserver_current_inflight_requests`, read-only and mutating.
    in_flight: f64,
}

/// Requests completed between two scrapes, and the watches open at the end.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Served {
    /// (verb, resource) -> requests; `resource` includes `/subresource`.
    pub requests: BTreeMap<(String, String), f64>,
    /// resource -> open watches at the second scrape.
    pub watches: BTreeMap<String, f64>,
}

impl Served {
    /// Requests per verb (`LIST`, `WATCH`, `GET`, `PUT`...) on the
    /// resources `keep` accepts (by name, without `/subresource`).
    pub fn by_verb(&self, keep: impl Fn(&str) -> bool) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for ((verb, resource), n) in &self.requests {
            if keep(resource.split('/').next().unwrap_or_default()) {
                *out.entry(verb.clone()).or_insert(0.0) += n;
            }
        }
        out
    }

    /// All requests on the resources `keep` accepts.
    pub fn total(&self, keep: impl Fn(&str) -> bool) -> f64 {
        self.by_verb(keep).values().fold(0.0, |a, n| a + n)
    }

    /// Requests other than lists and watches (per-resource work) on the
    /// resources `keep` accepts.
    pub fn per_resource(&self, keep: impl Fn(&str) -> bool) -> f64 {
        self.by_verb(keep)
            .iter()
            .filter(|(verb, _)| !matches!(verb.as_str(), "LIST" | "WATCH"))
            .fold(0.0, |a, (_, n)| a + n)
    }

    /// Requests of `verb` on `resource` (e.g. `GET`, `configmaps`).
    pub fn count(&self, verb: &str, resource: &str) -> f64 {
        let key = (verb.to_string(), resource.to_string());
        self.requests.get(&key).copied().unwrap_or(0.0)
    }

    pub fn open_watches(&self) -> f64 {
        self.watches.values().fold(0.0, |a, n| a + n)
    }
}

impl Scrape {
    /// Reads the API server's `/metrics` (one kubectl call, outside any
    /// measured operator).
    pub fn take(server: &ApiServer) -> Result<Self> {
        let text = server.kube.ok(&["get", "--raw", "/metrics"], None)?;
        Ok(Self::parse(&text))
    }

    /// Parses the Prometheus text format, keeping the two metrics.
    pub fn parse(text: &str) -> Self {
        let mut out = Self::default();
        for line in text.lines() {
            let Some((metric, labels, value)) = split_sample(line) else {
                continue;
            };
            let label = |key: &str| labels.get(key).cloned().unwrap_or_default();
            if metric == "apiserver_current_inflight_requests" {
                out.in_flight += value;
                continue;
            }
            let mut resource = label("resource");
            if resource.is_empty() {
                continue;
            }
            let sub = label("subresource");
            if !sub.is_empty() {
                resource = format!("{resource}/{sub}");
            }
            match metric {
                "apiserver_request_total" => {
                    *out.requests.entry((label("verb"), resource)).or_insert(0.0) += value;
                }
                "apiserver_longrunning_gauge" if label("verb") == "WATCH" => {
                    *out.watches.entry(resource).or_insert(0.0) += value;
                }
                _ => {}
            }
        }
        out
    }

    /// Requests the API server was serving at the scrape (its own
    /// `/metrics` request included).
    pub fn in_flight(&self) -> f64 {
        self.in_flight
    }

    /// What was served since `before` (this scrape is the later one), and
    /// the watches opened since then and still open.
    pub fn since(&self, before: &Scrape) -> Served {
        Served {
            requests: grown(&self.requests, &before.requests),
            watches: grown(&self.watches, &before.watches),
        }
    }
}

/// The counters of `after` that grew since `before`, by how much.
fn grown<K: Ord + Clone>(after: &BTreeMap<K, f64>, before: &BTreeMap<K, f64>) -> BTreeMap<K, f64> {
    let rise = |(k, n): (&K, &f64)| (k.clone(), n - before.get(k).copied().unwrap_or(0.0));
    after.iter().map(rise).filter(|(_, n)| *n > 0.0).collect()
}

/// `name{a="x",b="y"} 12` -> (name, labels, 12); `None` for comments and
/// lines this parser does not need (label values here never hold `",`).
fn split_sample(line: &str) -> Option<(&str, BTreeMap<String, String>, f64)> {
    if line.starts_with('#') {
        return None;
    }
    let open = line.find('{')?;
    let close = line.rfind('}')?;
    let metric = &line[..open];
    let value: f64 = line[close + 1..].split_whitespace().next()?.parse().ok()?;
    let labels = line[open + 1..close]
        .split("\",")
        .filter_map(|pair| {
            let (k, v) = pair.split_once("=\"")?;
            Some((k.to_string(), v.trim_end_matches('"').to_string()))
        })
        .collect();
    Some((metric, labels, value))
}

/// The resources an operator of this job touches; the API server's own
/// loopback controllers read others (endpoints, services, namespaces...).
pub fn operator_resource(resource: &str) -> bool {
    matches!(
        resource,
        "localconfigmaps" | "configmaps" | "events" | "leases"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = r#"# HELP apiserver_request_total counter
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",contentType="application/json",dry_run="",group="examples.blue.dev",resource="localconfigmaps",scope="namespace",subresource="",verb="LIST",version="v1alpha1"} 5
apiserver_request_total{code="200",component="apiserver",contentType="application/json",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 7
apiserver_request_total{code="200",component="",contentType="text/plain",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 3
apiserver_longrunning_gauge{component="apiserver",group="examples.blue.dev",resource="localconfigmaps",scope="namespace",subresource="",verb="WATCH",version="v1alpha1"} 0
"#;

    const AFTER: &str = r#"apiserver_request_total{code="200",component="apiserver",contentType="application/json",dry_run="",group="examples.blue.dev",resource="localconfigmaps",scope="namespace",subresource="",verb="LIST",version="v1alpha1"} 9
apiserver_request_total{code="409",component="apiserver",contentType="application/json",dry_run="",group="examples.blue.dev",resource="localconfigmaps",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} 2
apiserver_request_total{code="200",component="apiserver",contentType="application/json",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 7
apiserver_request_total{code="200",component="",contentType="text/plain",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 4
apiserver_longrunning_gauge{component="apiserver",group="examples.blue.dev",resource="localconfigmaps",scope="namespace",subresource="",verb="WATCH",version="v1alpha1"} 2
apiserver_longrunning_gauge{component="apiserver",group="",resource="configmaps",scope="namespace",subresource="",verb="WATCH",version="v1"} 1
apiserver_current_inflight_requests{request_kind="mutating"} 2
apiserver_current_inflight_requests{request_kind="readOnly"} 5
"#;

    #[test]
    fn counts_resource_requests_between_scrapes_by_verb() {
        let served = Scrape::parse(AFTER).since(&Scrape::parse(BEFORE));
        assert_eq!(served.count("LIST", "localconfigmaps"), 4.0);
        assert_eq!(served.count("PUT", "localconfigmaps/status"), 2.0);
        // Unchanged counters and the scrapes themselves are not requests.
        assert_eq!(served.count("GET", "configmaps"), 0.0);
        let verbs = served.by_verb(|_| true);
        assert_eq!(verbs.get("LIST"), Some(&4.0));
        assert_eq!(verbs.get("PUT"), Some(&2.0));
        assert_eq!(verbs.get("GET"), None);
        assert_eq!(served.total(|_| true), 6.0);
        assert_eq!(served.per_resource(|_| true), 2.0);
        // The status subresource belongs to its resource.
        assert_eq!(served.per_resource(|r| r == "configmaps"), 0.0);
        assert_eq!(served.per_resource(|r| r == "localconfigmaps"), 2.0);
        assert_eq!(served.total(|_| false).to_string(), "0");
    }

    #[test]
    fn watches_opened_since_a_scrape_are_read_from_the_long_running_gauge() {
        let served = Scrape::parse(AFTER).since(&Scrape::parse(BEFORE));
        assert_eq!(served.open_watches(), 3.0);
        assert_eq!(served.watches.get("configmaps"), Some(&1.0));
        // Watches already open at the earlier scrape are not new.
        let after = Scrape::parse(AFTER);
        assert_eq!(after.since(&after).open_watches().to_string(), "0");
    }

    #[test]
    fn requests_in_flight_add_read_only_and_mutating() {
        assert_eq!(Scrape::parse(AFTER).in_flight(), 7.0);
        assert_eq!(Scrape::parse(BEFORE).in_flight(), 0.0);
    }
}
