//! The operator with a ServiceAccount missing one permission at a time: it
//! must keep running, back off instead of retrying every poll, and recover
//! once the permission is back. kubectl runs through a counting wrapper, so
//! the request rate is measured, not guessed.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{ensure, Context, Result};
use serde_json::{json, Value};

use super::fleet::Fleet;
use super::order::Recorder;
use super::{after_the_faults, world};
use crate::chaos::{figure, Profile};
use crate::support::in_cluster::{in_cluster_args, request_token};
use crate::support::manifests::{in_namespace, RBAC};
use crate::support::{self, World, POLL_MS};

/// A kubectl that appends its arguments to `$CHAOS_CALLS`, then runs the real one.
pub struct Counter {
    script: PathBuf,
    dir: PathBuf,
}

impl Counter {
    pub fn install(work: &Path, real: &Path) -> Result<Self> {
        let dir = work.join("calls");
        fs::create_dir_all(&dir)?;
        let script = work.join("counting-kubectl");
        fs::write(
            &script,
            format!(
                "#!/bin/sh\necho \"$(date +%s.%N) $*\" >> \"$CHAOS_CALLS\"\nexec '{}' \"$@\"\n",
                real.display()
            ),
        )?;
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755))?;
        Ok(Self { script, dir })
    }

    /// The operator environment that counts its calls into `name`'s file.
    pub fn env(&self, name: &str) -> Vec<(String, String)> {
        vec![
            ("KUBECTL".into(), self.script.display().to_string()),
            (
                "CHAOS_CALLS".into(),
                self.dir.join(name).display().to_string(),
            ),
        ]
    }

    /// The calls counted into `name`'s file: (seconds since the epoch,
    /// command line).
    pub fn calls(&self, name: &str) -> Vec<(f64, String)> {
        fs::read_to_string(self.dir.join(name))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let (time, call) = l.split_once(' ')?;
                Some((time.parse().ok()?, format!(" {call}")))
            })
            .collect()
    }
}

/// A rule of the shipped Role to take away, and how to spot its calls.
struct Missing {
    name: &'static str,
    group: &'static str,
    resource: &'static str,
    verb: &'static str,
    /// True for a kubectl command line that needs the permission.
    uses: fn(&str) -> bool,
}

fn cases(every: bool) -> Vec<Missing> {
    let lcm = "examples.blue.dev";
    let rule = |name, group, resource, verb, uses| Missing {
        name,
        group,
        resource,
        verb,
        uses,
    };
    let mut list = vec![
        rule(
            "update-status",
            lcm,
            "localconfigmaps/status",
            "update",
            |c| c.contains(" replace --raw /apis/examples.blue.dev/"),
        ),
        rule("patch-finalizers", lcm, "localconfigmaps", "patch", |c| {
            c.contains(" patch localconfigmaps.")
        }),
    ];
    if every {
        list.extend([
            rule("get-resource", lcm, "localconfigmaps", "get", |c| {
                c.contains(" get localconfigmaps.") && c.contains("--ignore-not-found")
            }),
            rule("list-resources", lcm, "localconfigmaps", "list", |c| {
                c.contains(" get localconfigmaps.") && !c.contains("--ignore-not-found")
            }),
            rule("get-configmaps", "", "configmaps", "get", |c| {
                c.contains(" get configmap ")
            }),
            rule("create-configmaps", "", "configmaps", "create", |c| {
                c.contains("create --raw /api/v1/") || c.contains(" create -f")
            }),
            rule("update-configmaps", "", "configmaps", "update", |c| {
                c.contains(" replace --raw /api/v1/") || c.contains(" replace -f")
            }),
        ]);
    }
    list
}

/// The shipped Role (`rbac.yaml`) in the world's namespace, without `missing`.
fn role(w: &World, missing: Option<&Missing>) -> Result<String> {
    let doc = RBAC.split("\n---\n").find(|d| d.contains("\nkind: Role\n"));
    let doc = in_namespace(doc.context("no Role in rbac.yaml")?, w.kube.namespace());
    let dry_run = ["create", "--dry-run=client", "-o", "json", "-f", "-"];
    let mut role: Value = serde_json::from_str(&w.kube.ok(&dry_run, Some(&doc))?)?;
    if let Some(m) = missing {
        let rule = role["rules"].as_array_mut().and_then(|rules| {
            rules.iter_mut().find(|r| {
                r["apiGroups"] == json!([m.group]) && r["resources"] == json!([m.resource])
            })
        });
        let verbs = rule.and_then(|r| r["verbs"].as_array_mut());
        let verbs = verbs.with_context(|| format!("no rule for {} in rbac.yaml", m.resource))?;
        let before = verbs.len();
        verbs.retain(|v| v != m.verb);
        ensure!(
            verbs.len() < before,
            "the Role does not allow {} {}",
            m.verb,
            m.resource
        );
    }
    Ok(role.to_string())
}

/// The operator in-cluster with the shipped Role minus `missing` (one of
/// [`cases`]) for the profile's window while resources need work, kubectl
/// counted by a wrapper: each resource's retries back off (at most
/// `log2(window)+2` per resource); then, with the Role whole again and the
/// admin operator back, [`after_the_faults`] holds. The long profile's
/// cases pass at once in the short profile.
fn bounded_requests_without(missing: &str) -> Result<()> {
    let profile = Profile::from_env();
    let Some(missing) = cases(profile.every_permission)
        .into_iter()
        .find(|m| m.name == missing)
    else {
        println!("{missing}: only in the long profile (BLUE_CHAOS_PROFILE=long)");
        return Ok(());
    };
    support::run(world(false)?, None, |w| {
        let counter = Counter::install(w.work(), w.kube.program())?;
        let recorder = Recorder::start(&w.kube);
        let mut fleet = Fleet::default();
        fleet.batch(w, 4, 0, 0)?;
        fleet.wait_converged(w)?;
        let window = forbidden_window(w, &counter, &mut fleet, &profile, &missing);
        // Whatever happened: full permissions and the admin operator again.
        w.kube.apply(&role(w, None)?)?;
        if w.operator.is_some() {
            w.stop_operator()?;
        }
        w.start_operator(&w.admin_args())?;
        let window = window?;
        let secs = profile.forbidden_window.as_secs_f64();
        // Each resource is retried at 0, 1, 3, 7, 15, 31, 63 ... s;
        // lists are one per poll whatever happens.
        let attempts = (secs + 1.0).log2().floor() as usize + 1;
        // `create -f FILE` and `replace -f FILE` do not name their
        // object: bound those by every live resource retrying.
        let (worst, bound) = if window.anonymous {
            (window.count, fleet.live_count().max(1) * (attempts + 1))
        } else {
            (window.worst_resource, attempts + 1)
        };
        let gaps: Vec<String> = window.gaps.iter().map(|g| format!("{g:.1}")).collect();
        figure(&format!(
            "without {} {}: {} refused requests for {} resources in {secs:.0}s, at most {} per resource (bound {bound}), {}s apart; {:.0} kubectl calls/min in all (lists every {POLL_MS} ms included)",
            missing.verb,
            missing.resource,
            window.count,
            window.resources,
            window.worst_resource,
            gaps.join(", "),
            window.total as f64 * 60.0 / secs,
        ));
        ensure!(
            worst <= bound,
            "{worst} requests needing the missing permission (bound {bound})"
        );
        after_the_faults(w, &mut fleet, &recorder)
    })
}

#[test]
fn bounded_requests_without_update_status() -> Result<()> {
    bounded_requests_without("update-status")
}

#[test]
fn bounded_requests_without_patch_finalizers() -> Result<()> {
    bounded_requests_without("patch-finalizers")
}

#[test]
fn bounded_requests_without_get_resource() -> Result<()> {
    bounded_requests_without("get-resource")
}

#[test]
fn bounded_requests_without_list_resources() -> Result<()> {
    bounded_requests_without("list-resources")
}

#[test]
fn bounded_requests_without_get_configmaps() -> Result<()> {
    bounded_requests_without("get-configmaps")
}

#[test]
fn bounded_requests_without_create_configmaps() -> Result<()> {
    bounded_requests_without("create-configmaps")
}

#[test]
fn bounded_requests_without_update_configmaps() -> Result<()> {
    bounded_requests_without("update-configmaps")
}

/// What the operator requested during a forbidden window.
struct Window {
    /// Requests needing the missing permission.
    count: usize,
    /// Distinct resources they were for.
    resources: usize,
    /// The most requests for one resource.
    worst_resource: usize,
    /// Seconds between the attempts for the most-tried resource.
    gaps: Vec<f64>,
    total: usize,
    /// The requests do not name their object.
    anonymous: bool,
}

/// The object a kubectl command line is about: the segment after the
/// resource type in a `--raw` path, or the argument after the type.
fn object_of(call: &str) -> String {
    for marker in ["/localconfigmaps/", "/configmaps/"] {
        if let Some(rest) = call.split(marker).nth(1) {
            return rest.split(['/', ' ']).next().unwrap_or("").to_string();
        }
    }
    let mut words = call.split_whitespace();
    while let Some(word) = words.next() {
        if word.starts_with("localconfigmaps.") || word == "configmaps" || word == "configmap" {
            return words.next().unwrap_or("").to_string();
        }
    }
    String::new()
}

/// Runs the in-cluster operator without `missing` for the profile's window
/// while resources need work, and measures its requests.
fn forbidden_window(
    w: &mut World,
    counter: &Counter,
    fleet: &mut Fleet,
    profile: &Profile,
    missing: &Missing,
) -> Result<Window> {
    w.kube.apply(&role(w, Some(missing))?)?;
    w.stop_operator()?;
    let sa = w.scratch("serviceaccount-chaos");
    // The world's transport is one kubectl per request, so the counting
    // wrapper sees every call.
    let mut args = in_cluster_args(w, &sa, &request_token(w)?)?;
    // The preflight would (rightly) refuse to start without the permission;
    // this measures what the running controller does when one goes missing
    // later.
    args.push("--skip-preflight".into());
    let admin_env = std::mem::replace(&mut w.operator_env, counter.env(missing.name));
    let started = w.start_operator(&args);
    w.operator_env = admin_env;
    started?;
    // New resources need the finalizer patch; edited ones a status write.
    fleet.batch(w, 1, 2, 0)?;
    fleet.create(w)?;
    fleet.create(w)?;
    std::thread::sleep(profile.forbidden_window);
    ensure!(w.operator()?.is_running(), "the operator exited");
    let calls = counter.calls(missing.name);
    let needing: Vec<&(f64, String)> = calls.iter().filter(|(_, c)| (missing.uses)(c)).collect();
    let mut per_object: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for (time, call) in &needing {
        per_object.entry(object_of(call)).or_default().push(*time);
    }
    let worst = per_object.values().max_by_key(|times| times.len());
    let gaps = worst.map_or_else(Vec::new, |times| {
        times.windows(2).map(|pair| pair[1] - pair[0]).collect()
    });
    Ok(Window {
        count: needing.len(),
        resources: per_object.len(),
        worst_resource: worst.map_or(0, Vec::len),
        gaps,
        total: calls.len(),
        anonymous: per_object.keys().any(String::is_empty)
            && per_object.len() == 1
            && missing.verb != "list",
    })
}
