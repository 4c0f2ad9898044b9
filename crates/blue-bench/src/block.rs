//! The reactions block: what a user does to one namespace of a large
//! fleet, timed from watch streams opened before each change. Into the
//! Ready population (1 h interval, `Retain`), after an idle window:
//! [`NEW`] resources with the `Destroy` policy created one by one, each
//! timed to Ready; then each edited, timed to its ConfigMap's new data;
//! then all deleted, timed until the last is gone (its ConfigMap deleted
//! and its finalizer released). Every step waits 50-400 ms first, as a
//! person or a script would. Each reaction touches one resource, so
//! nothing should grow with the population.

use std::time::Duration;

use anyhow::Result;

use crate::harness::Harness;
use crate::outcome::Reactions;
use crate::random::XorShift;
use crate::resource::Spec;

/// Resources the block creates, edits and deletes.
pub const NEW: usize = 20;

/// One run of the block by `label` in `namespace`.
pub fn run(
    h: &Harness,
    namespace: &str,
    label: &str,
    run: usize,
    rng: &mut XorShift,
) -> Result<Reactions> {
    let spec = Spec {
        destroy: true,
        ..Spec::IDLE
    };
    let names: Vec<String> = (0..NEW)
        .map(|i| format!("b-{label}-{run}-{i:02}"))
        .collect();
    let mut out = Reactions::default();
    for name in &names {
        pause(rng);
        out.creates.push(h.create_reaction(namespace, name, spec)?);
    }
    for (i, name) in names.iter().enumerate() {
        pause(rng);
        let value = format!("{label}-{run}-{i}-edited");
        out.edits.push(h.edit_reaction(namespace, name, &value)?);
    }
    pause(rng);
    out.deletions = Some(h.delete_named(namespace, &names)?);
    Ok(out)
}

/// 50 to 400 ms.
fn pause(rng: &mut XorShift) {
    std::thread::sleep(Duration::from_millis(50 + rng.below(351)));
}
