//! What a pass will do before any package code runs, decided once from its
//! snapshot (and its references, read fresh): whether package code runs at
//! all, and which of the rules that need none applies. The preparation
//! reads it to know what to call; the decision (`decision.rs`) reads it
//! instead of deciding again. A new rule that runs no package code belongs here.

use super::awaited::Awaited;
use super::references::{self, Resolution};
use crate::connection::secret_ref_valid;
use crate::domain::names::Names;
use crate::domain::resource::{self, CommonSpec, DeletionPolicy, ManagementPolicy};
use crate::domain::resource::{has_finalizer, is_deleting};
use crate::{package::erased::Package, Controller, Error};
use serde_json::Value;
use std::collections::BTreeMap;

/// What a pass will do before any package code runs (the rules' numbers
/// are those of the crate README, "One pass, in order").
#[derive(Clone)]
pub(super) enum Plan {
    /// Rule 1: deleting, and Retain, observe-only management or our
    /// finalizer already gone: release, running no package code (not even
    /// `identity`) and reading no reference; the config need not be valid.
    Release,
    /// A referenced resource keeps every callback from running: the first
    /// of rules 3 to 3c that applies is written.
    Hold(Stop),
    /// Package code runs: `identity`, rule 2, then the write of rule 3 or
    /// 3b if one applies (`Err`), else rules 4 to 8 on the common fields.
    Run(Result<CommonSpec, Stop>),
}

/// A write decided before any package code runs (rules 3 to 3c).
#[derive(Clone)]
pub(super) enum Stop {
    /// A common field is malformed, or a reference field names no object.
    Invalid,
    /// The typed config does not decode: why (values redacted), for the
    /// operator's log only.
    Undecodable(String),
    /// Following references leads back to the resource.
    Cycle,
    /// A referenced resource is missing or not Ready (the first such, for
    /// the Event): checked again after this interval.
    Waiting(u64, Awaited),
}

impl Plan {
    /// The plan for `snapshot`, and the outputs of the referenced resources
    /// that are Ready, for the callbacks. `config_error`: why the typed
    /// config does not decode.
    pub(super) async fn of(
        controller: &Controller,
        package: &Package,
        snapshot: &Value,
        config_error: Option<String>,
    ) -> Result<(Plan, Option<BTreeMap<String, Value>>), Error> {
        let names = &controller.config.names;
        let schema = package.schema();
        // A released resource reads no reference.
        let resolution = match releases(snapshot, names) || schema.references.is_empty() {
            true => None,
            false => Some(references::resolve(controller, package, snapshot).await?),
        };
        let plan = Plan::decide(
            snapshot,
            names,
            schema.connection,
            resolution.as_ref(),
            config_error,
        );
        let referenced = match resolution {
            Some(Resolution::Resolved(outputs) | Resolution::Waiting(outputs, _)) => Some(outputs),
            _ => None,
        };
        Ok((plan, referenced))
    }

    /// The plan for `snapshot`, its references resolved (`None`: it
    /// declares none), without I/O. `connection`: the package declares a
    /// connection Secret, whose reference must be well formed.
    pub(super) fn decide(
        snapshot: &Value,
        names: &Names,
        connection: bool,
        resolution: Option<&Resolution>,
        config_error: Option<String>,
    ) -> Plan {
        if releases(snapshot, names) {
            return Plan::Release;
        }
        let common = resource::parse(snapshot).filter(|_| {
            resource::protection_well_typed(snapshot, &names.destroy_protection_key)
                && (!connection || secret_ref_valid(snapshot))
        });
        let rules = match (common, config_error) {
            (None, _) => Err(Stop::Invalid),
            (Some(_), Some(error)) => Err(Stop::Undecodable(error)),
            (Some(common), None) => Ok(common),
        };
        // A resource being deleted never waits for its references.
        match (resolution.filter(|r| r.blocks(snapshot)), rules) {
            (None, rules) => Plan::Run(rules),
            (Some(_), Err(stop)) => Plan::Hold(stop),
            (Some(Resolution::Cycle), Ok(_)) => Plan::Hold(Stop::Cycle),
            (Some(Resolution::Waiting(_, awaited)), Ok(common)) => {
                Plan::Hold(Stop::Waiting(common.interval_ms, awaited.clone()))
            }
            // Malformed (a resolved resource never blocks).
            (Some(_), Ok(_)) => Plan::Hold(Stop::Invalid),
        }
    }

    /// Whether package code runs (`identity` first).
    pub(super) fn runs_package_code(&self) -> bool {
        matches!(self, Plan::Run(_))
    }
}

/// Rule 1: deleting, and Retain, observe-only management or our finalizer
/// already gone.
fn releases(snapshot: &Value, names: &Names) -> bool {
    is_deleting(snapshot)
        && (resource::deletion_policy(snapshot) == Some(DeletionPolicy::Retain)
            || resource::management_policy(snapshot) == Some(ManagementPolicy::Observe)
            || !has_finalizer(snapshot, &names.finalizer))
}
