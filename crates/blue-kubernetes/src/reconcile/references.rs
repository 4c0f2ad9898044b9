//! Resolving a resource's references before any callback runs: each
//! referenced resource is read fresh (one read per reference per pass),
//! and where references can form a chain back to this kind, the chain is
//! followed to find cycles.
//!
//! Every reference is checked to name an object before any is read, so a
//! name that is no object name never reaches a transport. A referenced
//! resource counts only on this controller's own marks (see
//! `references::readiness`): the outputs of one that fails the test are
//! never handed to a callback.

use super::awaited::Awaited;
use crate::package::erased::{package_of, reaches};
use crate::references::{readiness, Named};
use crate::telemetry::log;
use crate::{package::erased::Package, Controller, Error};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

/// References followed from one resource before a chain is given up as
/// too long to be a cycle worth finding (a chain this long is a mistake
/// anyway, and each link costs a read).
const MAX_CHAIN: usize = 16;

/// Where a resource's references leave its pass.
#[derive(Debug)]
pub(crate) enum Resolution {
    /// Every reference names a Ready resource: their outputs by field
    /// (`null` for one that records none).
    Resolved(BTreeMap<String, Value>),
    /// Some referenced resource is missing or not Ready: the outputs of
    /// those that are (on this controller's marks: nothing of the others),
    /// and the first that is not.
    Waiting(BTreeMap<String, Value>, Awaited),
    /// Following references leads back to the resource.
    Cycle,
    /// A reference field holds something that is not a reference, or a
    /// name that is no object name; nothing was read for any of them.
    Malformed,
}

impl Resolution {
    /// Whether it keeps every callback from running on `resource`: a
    /// resource being deleted never waits for its references.
    pub(crate) fn blocks(&self, resource: &Value) -> bool {
        !matches!(self, Resolution::Resolved(_)) && !crate::domain::resource::is_deleting(resource)
    }
}

/// Resolves the references `package` declares on `resource`.
pub(crate) async fn resolve(
    controller: &Controller,
    package: &Package,
    resource: &Value,
) -> Result<Resolution, Error> {
    let packages = &controller.config.packages;
    let declared = &package.schema().references;
    let Some(origin) = package_of(packages, package.descriptor()) else {
        return Ok(Resolution::Resolved(BTreeMap::new()));
    };
    let home = (
        origin,
        crate::domain::resource::namespace(resource).to_string(),
        crate::domain::resource::name(resource).to_string(),
    );
    // Checked for all fields before reading any: a malformed field makes
    // the resource Invalid, so no name of it needs to be sent anywhere.
    let mut named = Vec::with_capacity(declared.len());
    for reference in declared {
        match reference.named(resource) {
            Named::Nothing => {}
            Named::Malformed => {
                log::reference_malformed(resource, &reference.field);
                return Ok(Resolution::Malformed);
            }
            Named::Resource(namespace, name) => named.push((reference, namespace, name)),
        }
    }
    let finalizer = &controller.config.names.finalizer;
    let mut outputs = BTreeMap::new();
    let mut waiting: Option<Awaited> = None;
    for (reference, namespace, name) in named {
        let awaited = {
            let (field, kind, name) = (&reference.field, &reference.kind.kind, name.clone());
            move |missing| Awaited {
                field: field.clone(),
                kind: kind.clone(),
                name,
                missing,
            }
        };
        let client = &controller.config.client;
        let Some(target) = client
            .get_resource(&reference.kind, &namespace, &name)
            .await?
        else {
            let awaited = awaited(true);
            log::reference_waiting(resource, &awaited, None);
            waiting.get_or_insert(awaited);
            continue;
        };
        if let Some(target_package) = package_of(packages, &reference.kind) {
            let link = (target_package, namespace, name);
            if reaches(packages, target_package, origin)
                && leads_back(controller, link, &target, &home).await?
            {
                return Ok(Resolution::Cycle);
            }
        }
        match readiness(&target, finalizer) {
            Ok(()) => {
                let found = target.pointer("/status/outputs").cloned();
                outputs.insert(reference.field.clone(), found.unwrap_or(Value::Null));
            }
            Err(why) => {
                let awaited = awaited(false);
                log::reference_waiting(resource, &awaited, Some(why));
                waiting.get_or_insert(awaited);
            }
        }
    }
    Ok(match waiting {
        Some(awaited) => Resolution::Waiting(outputs, awaited),
        None => Resolution::Resolved(outputs),
    })
}

type Link = (usize, String, String);

/// Whether following references from `start` (read as `object`) reaches
/// `home`. Reads each resource on the way once.
async fn leads_back(
    controller: &Controller,
    start: Link,
    object: &Value,
    home: &Link,
) -> Result<bool, Error> {
    let packages = &controller.config.packages;
    let mut seen = HashSet::from([start.clone()]);
    let mut frontier = vec![(start, object.clone())];
    while let Some(((package, _, _), object)) = frontier.pop() {
        for reference in &packages[package].schema().references {
            let Named::Resource(namespace, name) = reference.named(&object) else {
                continue;
            };
            let Some(next) = package_of(packages, &reference.kind) else {
                continue;
            };
            let link = (next, namespace, name);
            if link == *home {
                return Ok(true);
            }
            if seen.len() >= MAX_CHAIN || !seen.insert(link.clone()) {
                continue;
            }
            let client = &controller.config.client;
            if let Some(found) = client
                .get_resource(&reference.kind, &link.1, &link.2)
                .await?
            {
                frontier.push((link, found));
            }
        }
    }
    Ok(false)
}
