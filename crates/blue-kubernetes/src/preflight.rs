//! Startup preflight: before any work, check that the server answers, that
//! each package's group/version serves its plural with its kind and a
//! status subresource, and that RBAC allows every verb the controller uses
//! (Leases with leader election, Events when they are on).

use crate::Controller;
use blue_kubernetes_client::{AccessCheck, ApiResource, ErrorKind, ResourceDescriptor};
use futures::future::join_all;

/// One problem found by [`preflight`], printable as one clear line. Holds
/// names from the configuration and the server's discovery only, never
/// kubectl output.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// The API server could not be asked at all (wrong context, server
    /// down, credentials rejected).
    #[error(
        "the API server did not answer ({0}): check the context, the server and the credentials"
    )]
    Unreachable(ErrorKind),
    /// The group/version is not served: the CRD is missing or serves other versions.
    #[error("{api_version} is not served: is the CRD for {plural}.{group} installed, and does it serve version {version}?", api_version = .0.api_version(), plural = .0.plural, group = .0.group, version = .0.version)]
    NotServed(ResourceDescriptor),
    /// The group/version serves no resource of this plural name.
    #[error("{api_version} serves no resource named {plural}{hint}", api_version = .descriptor.api_version(), plural = .descriptor.plural, hint = hint(.singular_of.as_deref()))]
    NoSuchResource {
        /// The package's type.
        descriptor: ResourceDescriptor,
        /// The plural the given name is the singular of, if any.
        singular_of: Option<String>,
    },
    /// The resource serves another kind.
    #[error("{plural}.{group} serves kind {served}, but the package says {kind}", plural = .descriptor.plural, group = .descriptor.group, kind = .descriptor.kind)]
    WrongKind {
        /// The package's type.
        descriptor: ResourceDescriptor,
        /// The kind discovery reports.
        served: String,
    },
    /// The CRD has no status subresource, so status cannot be written.
    #[error("{plural}.{group} has no status subresource: enable `subresources: {{status: {{}}}}` in the CRD", plural = .0.plural, group = .0.group)]
    NoStatusSubresource(ResourceDescriptor),
    /// The installed CRD keeps unknown fields while the package serves
    /// older versions, which need the generated CRD's pruning and
    /// conversion.
    #[error("{plural}.{group} keeps unknown fields (preserveUnknownFields: true): apply the generated CRD, which serves the package's older versions", plural = .0.plural, group = .0.group)]
    PreservesUnknownFields(ResourceDescriptor),
    /// RBAC does not allow a verb the controller uses.
    #[error("RBAC does not allow {0}")]
    Forbidden(AccessCheck),
    /// A check could not be made.
    #[error("could not check {what} ({kind})")]
    CheckFailed {
        /// What was being checked.
        what: String,
        /// The transport's classification.
        kind: ErrorKind,
    },
}

fn hint(singular_of: Option<&str>) -> String {
    singular_of.map_or(String::new(), |p| {
        format!(" (that is the singular name; the plural is {p})")
    })
}

/// Runs every check and returns the problems found (empty when the
/// controller can start). Costs one discovery request per group/version and
/// one access review per verb.
///
/// ```no_run
/// # async fn demo(controller: blue_kubernetes::Controller) {
/// let problems = blue_kubernetes::config::preflight(&controller).await;
/// for problem in &problems {
///     eprintln!("preflight: {problem}");
/// }
/// if !problems.is_empty() {
///     std::process::exit(1);
/// }
/// # }
/// ```
pub async fn preflight(controller: &Controller) -> Vec<Problem> {
    let config = &controller.config;
    let client = &config.client;
    // Asked all at once: a restarted operator resumes its interrupted work
    // only after preflight, and each request is a round trip. The answers
    // are read in order, so the problems come out as if asked in turn.
    let descriptors: Vec<_> = config.packages.iter().map(|p| p.descriptor()).collect();
    let served = join_all(
        descriptors
            .iter()
            .map(|d| client.server_resources(&d.group, &d.version)),
    );
    let checks = access_checks(controller);
    let allowed = join_all(checks.iter().map(|check| client.can_i(check)));
    let (served, allowed) = futures::join!(served, allowed);
    let mut problems = Vec::new();
    for (d, served) in descriptors.into_iter().zip(served) {
        match served {
            Err(e) if problems.is_empty() && is_unreachable(e.kind()) => {
                return vec![Problem::Unreachable(e.kind())];
            }
            Err(e) => problems.push(Problem::CheckFailed {
                what: format!("discovery of {}", d.api_version()),
                kind: e.kind(),
            }),
            Ok(None) => problems.push(Problem::NotServed(d.clone())),
            Ok(Some(served)) => problems.extend(check_served(d, &served)),
        }
    }
    for package in config.packages.iter() {
        problems.extend(check_versions(client, package.schema()).await);
    }
    for (check, allowed) in checks.into_iter().zip(allowed) {
        match allowed {
            Ok(true) => {}
            Ok(false) => problems.push(Problem::Forbidden(check)),
            Err(e) if problems.is_empty() && is_unreachable(e.kind()) => {
                return vec![Problem::Unreachable(e.kind())];
            }
            Err(e) => problems.push(Problem::CheckFailed {
                what: format!("whether RBAC allows {check}"),
                kind: e.kind(),
            }),
        }
    }
    problems
}

/// A package serving older versions: each is served, and the installed
/// CRD prunes unknown fields (one GET of the CRD, cluster-scoped: such an
/// operator needs `get` on `customresourcedefinitions`).
async fn check_versions(
    client: &std::sync::Arc<dyn blue_kubernetes_client::Client>,
    schema: &crate::ResourceSchema,
) -> Vec<Problem> {
    let d = schema.descriptor();
    let served = schema.served_versions();
    if served.len() < 2 {
        return Vec::new();
    }
    let mut problems = Vec::new();
    for version in &served[1..] {
        let old = ResourceDescriptor {
            version: version.to_string(),
            ..d.clone()
        };
        match client.server_resources(&old.group, &old.version).await {
            Ok(Some(resources)) => problems.extend(check_served(&old, &resources)),
            Ok(None) => problems.push(Problem::NotServed(old)),
            Err(e) => problems.push(Problem::CheckFailed {
                what: format!("discovery of {}", old.api_version()),
                kind: e.kind(),
            }),
        }
    }
    let crds = ResourceDescriptor::new(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
    )
    .cluster_scoped();
    match client.get_resource(&crds, "", &d.qualified_plural()).await {
        Ok(Some(crd)) => {
            if crate::crd::check_installed(schema, &crd).is_err() {
                problems.push(Problem::PreservesUnknownFields(d.clone()));
            }
        }
        // Not installed: discovery has named it already.
        Ok(None) => {}
        Err(e) => problems.push(Problem::CheckFailed {
            what: format!("the CRD {}", d.qualified_plural()),
            kind: e.kind(),
        }),
    }
    problems
}

fn is_unreachable(kind: ErrorKind) -> bool {
    !matches!(
        kind,
        ErrorKind::Conflict | ErrorKind::NotFound | ErrorKind::Invalid
    )
}

fn check_served(d: &ResourceDescriptor, served: &[ApiResource]) -> Option<Problem> {
    let Some(resource) = served.iter().find(|r| r.name == d.plural) else {
        let singular_of = served
            .iter()
            .find(|r| !r.singular_name.is_empty() && r.singular_name == d.plural)
            .map(|r| r.name.clone());
        return Some(Problem::NoSuchResource {
            descriptor: d.clone(),
            singular_of,
        });
    };
    if resource.kind != d.kind {
        return Some(Problem::WrongKind {
            descriptor: d.clone(),
            served: resource.kind.clone(),
        });
    }
    let status = format!("{}/status", d.plural);
    if !served.iter().any(|r| r.name == status) {
        return Some(Problem::NoStatusSubresource(d.clone()));
    }
    None
}

/// Every verb the controller uses, in every namespace it manages (`""`:
/// cluster-wide): list, and watch when watching, get (re-read), patch
/// (finalizers), update on `/status`, get on the CRDs of packages serving
/// older versions, list (and watch) on related kinds, get/create/update on leases with
/// leader election or sharding (and list with sharding: a round lists
/// them), and create/update on events when Events are on.
fn access_checks(controller: &Controller) -> Vec<AccessCheck> {
    let config = &controller.config;
    let scopes = config.namespace.scopes();
    let mut verbs = vec!["list", "get", "patch"];
    if config.watch {
        verbs.insert(1, "watch");
    }
    let mut checks = Vec::new();
    for package in &config.packages {
        let d = package.descriptor();
        let package_scopes = if d.namespaced {
            scopes.clone()
        } else {
            vec![""]
        };
        for ns in package_scopes {
            for verb in &verbs {
                checks.push(AccessCheck::new(ns, *verb, &d.group, &d.plural));
            }
            checks.push(
                AccessCheck::new(ns, "update", &d.group, &d.plural).with_subresource("status"),
            );
            // The connection Secret: read, created once, replaced when restored.
            if package.schema().connection {
                for verb in ["get", "create", "update"] {
                    checks.push(AccessCheck::new(ns, verb, "", "secrets"));
                }
            }
        }
    }
    // Older served versions: preflight reads the installed CRD.
    let versioned = |p: &&crate::Package| p.schema().served_versions().len() > 1;
    if config.packages.iter().any(|p| versioned(&p)) {
        let crds = "customresourcedefinitions";
        checks.push(AccessCheck::new("", "get", "apiextensions.k8s.io", crds));
    }
    // Related kinds are listed (and watched) like the resources.
    for d in crate::runtime::related::kinds(&config.packages)
        .unwrap_or_default()
        .into_iter()
        .map(|k| k.descriptor)
    {
        let related_scopes = if d.namespaced {
            scopes.clone()
        } else {
            vec![""]
        };
        for ns in related_scopes {
            for verb in verbs.iter().filter(|v| ["list", "watch"].contains(v)) {
                checks.push(AccessCheck::new(ns, *verb, &d.group, &d.plural));
            }
        }
    }
    let leases = config.leader_election.as_ref();
    // Sharding's membership and shard Leases live beside the election's.
    let leases = leases.or(config.sharding.as_ref().map(|s| &s.lease));
    if let Some(election) = leases {
        let list = config.sharding.as_ref().map(|_| "list");
        for verb in ["get", "create", "update"].into_iter().chain(list) {
            let ns = &election.lease_namespace;
            checks.push(AccessCheck::new(ns, verb, "coordination.k8s.io", "leases"));
        }
    }
    if config.event_component.is_some() {
        for ns in scopes {
            for verb in ["create", "update"] {
                checks.push(AccessCheck::new(ns, verb, "", "events"));
            }
        }
    }
    checks
}
