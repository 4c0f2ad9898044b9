//! User edits and fault sequences, for model-based tests of packages and
//! controllers.

use crate::strategies::{arb_fault, arb_operation, arb_reconcile_interval};
use crate::{FakeCluster, Fault, Operation};
use blue_kubernetes_client::ResourceDescriptor;
use proptest::prelude::*;
use serde_json::{json, Value};

/// What a human (or CI) does to a resource with `kubectl edit`, `annotate`
/// or `delete`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserEdit {
    /// Sets `spec.config.value`.
    SetValue(i64),
    /// Sets `spec.suspend`.
    Suspend(bool),
    /// Sets `spec.state` to `stopped` (true) or `running` (false).
    Stop(bool),
    /// Sets `spec.deletionPolicy` (`None` removes it).
    DeletionPolicy(Option<&'static str>),
    /// Sets `spec.config.compute-prevent-destroy`.
    PreventDestroy(bool),
    /// Sets `spec.reconcileInterval` (valid or not).
    Interval(String),
    /// Sets the reconcile-request annotation.
    RequestToken(String),
    /// Deletes the resource.
    Delete,
}

impl UserEdit {
    /// Applies the edit to `namespace/name` in `cluster`; a no-op when the
    /// object is gone.
    ///
    /// ```
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// use blue_testkit::{FakeCluster, UserEdit};
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// let cluster = FakeCluster::new();
    /// cluster.create(&d, "dev", "a", serde_json::json!({}));
    /// UserEdit::SetValue(7).apply(&cluster, &d, "dev", "a");
    /// assert_eq!(cluster.get(&d, "dev", "a").unwrap()["spec"]["config"]["value"], 7);
    /// ```
    pub fn apply(
        &self,
        cluster: &FakeCluster,
        d: &ResourceDescriptor,
        namespace: &str,
        name: &str,
    ) {
        if cluster.get(d, namespace, name).is_none() {
            return;
        }
        let set = |path: &[&str], value: Value| {
            cluster.edit_spec(d, namespace, name, |spec| set_path(spec, path, value));
        };
        match self {
            UserEdit::SetValue(v) => set(&["config", "value"], json!(v)),
            UserEdit::Suspend(b) => set(&["suspend"], json!(b)),
            UserEdit::Stop(b) => set(&["state"], json!(if *b { "stopped" } else { "running" })),
            UserEdit::DeletionPolicy(p) => set(&["deletionPolicy"], json!(p)),
            UserEdit::PreventDestroy(b) => set(&["config", "compute-prevent-destroy"], json!(b)),
            UserEdit::Interval(i) => set(&["reconcileInterval"], json!(i)),
            UserEdit::RequestToken(t) => {
                cluster.set_annotation(
                    d,
                    namespace,
                    name,
                    blue_kubernetes::config::REQUEST_ANNOTATION,
                    t,
                );
            }
            UserEdit::Delete => {
                cluster.delete(d, namespace, name);
            }
        }
    }
}

/// Sets `path` inside `spec`, creating objects on the way; `null` removes the key.
fn set_path(spec: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut at = spec;
    for key in parents {
        if !at[*key].is_object() {
            at[*key] = json!({});
        }
        at = &mut at[*key];
    }
    match (value.is_null(), at.as_object_mut()) {
        (true, Some(map)) => {
            map.remove(*last);
        }
        _ => at[*last] = value,
    }
}

/// One user edit.
pub fn arb_user_edit() -> impl Strategy<Value = UserEdit> {
    prop_oneof![
        4 => (0i64..4).prop_map(UserEdit::SetValue),
        1 => any::<bool>().prop_map(UserEdit::Suspend),
        1 => any::<bool>().prop_map(UserEdit::Stop),
        1 => prop_oneof![Just(None), Just(Some("Retain")), Just(Some("Destroy"))]
            .prop_map(UserEdit::DeletionPolicy),
        1 => any::<bool>().prop_map(UserEdit::PreventDestroy),
        1 => arb_reconcile_interval().prop_map(UserEdit::Interval),
        2 => (0u8..4).prop_map(|t| UserEdit::RequestToken(format!("token-{t}"))),
        1 => Just(UserEdit::Delete),
    ]
}

/// Up to `max` user edits.
///
/// ```
/// use blue_testkit::edits::arb_edit_sequence;
/// use proptest::prelude::*;
/// proptest!(|(edits in arb_edit_sequence(8))| prop_assert!(edits.len() <= 8));
/// ```
pub fn arb_edit_sequence(max: usize) -> impl Strategy<Value = Vec<UserEdit>> {
    proptest::collection::vec(arb_user_edit(), 0..=max)
}

/// Up to `max` faults to inject, each on one client operation.
///
/// ```
/// use blue_testkit::edits::arb_fault_sequence;
/// use proptest::prelude::*;
/// proptest!(|(faults in arb_fault_sequence(4))| prop_assert!(faults.len() <= 4));
/// ```
pub fn arb_fault_sequence(max: usize) -> impl Strategy<Value = Vec<(Operation, Fault)>> {
    proptest::collection::vec((arb_operation(), arb_fault()), 0..=max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widgets() -> ResourceDescriptor {
        ResourceDescriptor::new("example.com", "v1", "widgets", "Widget")
    }

    proptest! {
        #[test]
        fn edits_bump_generation_only_when_spec_changes(edits in arb_edit_sequence(12)) {
            let cluster = FakeCluster::new();
            cluster.create(&widgets(), "dev", "a", json!({"config": {"value": 0}}));
            for edit in edits {
                let before = cluster.get(&widgets(), "dev", "a");
                edit.apply(&cluster, &widgets(), "dev", "a");
                let (Some(before), Some(after)) = (before, cluster.get(&widgets(), "dev", "a")) else {
                    continue;
                };
                let bumped = after["metadata"]["generation"] != before["metadata"]["generation"];
                prop_assert_eq!(bumped, after["spec"] != before["spec"], "{:?}", edit);
            }
        }
    }

    #[test]
    fn null_removes_a_key() {
        let mut spec = json!({"deletionPolicy": "Destroy"});
        set_path(&mut spec, &["deletionPolicy"], Value::Null);
        assert_eq!(spec, json!({}));
    }
}
