//! A counting kubectl runner: wraps the default `TokioRunner`, counts each
//! invocation by kind when it completes, and notes which resources a status
//! write left Ready (so waiting for Ready costs no extra kubectl call).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use blue_kubernetes_client::{operation_of, Invocation, Output, Runner, TokioRunner};
use serde_json::Value;

/// The kubectl calls the controller makes (SPEC section 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `get <type> -n NS -o json`: the poll.
    List,
    /// `get <type> NAME --ignore-not-found`: the re-read under the lock.
    Get,
    /// `replace --raw .../status`.
    Status,
    /// `patch ... --type=merge` of finalizers.
    Finalizers,
    Other,
}

impl Op {
    fn of(argv: &[String]) -> Self {
        match operation_of(argv.get(1..).unwrap_or_default()).as_str() {
            "get" if argv.iter().any(|a| a == "--ignore-not-found") => Op::Get,
            "get" => Op::List,
            "replace" => Op::Status,
            "patch" => Op::Finalizers,
            _ => Op::Other,
        }
    }
}

/// Invocation counts by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub list: u64,
    pub get: u64,
    pub status: u64,
    pub finalizers: u64,
    pub other: u64,
    pub failed: u64,
}

impl Counts {
    pub fn total(&self) -> u64 {
        self.list + self.get + self.status + self.finalizers + self.other
    }

    /// Everything but the poll's lists: the per-resource calls.
    pub fn per_resource_calls(&self) -> u64 {
        self.total() - self.list
    }

    pub fn minus(&self, before: &Counts) -> Counts {
        Counts {
            list: self.list - before.list,
            get: self.get - before.get,
            status: self.status - before.status,
            finalizers: self.finalizers - before.finalizers,
            other: self.other - before.other,
            failed: self.failed - before.failed,
        }
    }

    /// `list 1, get 0, status 0, patch 0`.
    pub fn breakdown(&self) -> String {
        let mut s = format!(
            "list {}, get {}, status {}, patch {}",
            self.list, self.get, self.status, self.finalizers
        );
        if self.other > 0 {
            s.push_str(&format!(", other {}", self.other));
        }
        if self.failed > 0 {
            s.push_str(&format!(" ({} failed)", self.failed));
        }
        s
    }
}

#[derive(Default)]
struct State {
    counts: Counts,
    /// (op, completed at, wall time) of every call.
    calls: Vec<(Op, Instant, Duration)>,
    /// (namespace, name) -> (observedGeneration, when written) of resources
    /// whose latest status write said Ready.
    ready: HashMap<(String, String), (i64, Instant)>,
}

/// The counting runner. Clones share counts.
#[derive(Clone, Default)]
pub struct Meter {
    state: Arc<Mutex<State>>,
}

impl Meter {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn counts(&self) -> Counts {
        self.lock().counts
    }

    /// Resources of `namespace` whose last status write was Ready.
    pub fn ready_in(&self, namespace: &str) -> usize {
        self.lock()
            .ready
            .keys()
            .filter(|(ns, _)| ns == namespace)
            .count()
    }

    /// When `namespace/name` was written Ready at `generation` or later.
    pub fn ready_at(&self, namespace: &str, name: &str, generation: i64) -> Option<Instant> {
        self.lock()
            .ready
            .get(&(namespace.to_string(), name.to_string()))
            .filter(|(g, _)| *g >= generation)
            .map(|(_, at)| *at)
    }

    /// Wall times (seconds) of the `op` calls completed after `since`.
    pub fn walls(&self, op: Op, since: Instant) -> Vec<f64> {
        self.lock()
            .calls
            .iter()
            .filter(|(o, at, _)| *o == op && *at >= since)
            .map(|(_, _, d)| d.as_secs_f64())
            .collect()
    }

    /// The runner to hand to `KubectlOptions::runner`.
    pub fn runner(&self) -> Arc<dyn Runner> {
        let meter = self.clone();
        Arc::new(move |invocation: Invocation| {
            let meter = meter.clone();
            async move {
                let op = Op::of(&invocation.argv);
                let started = Instant::now();
                let result = TokioRunner::new().run(invocation).await;
                meter.record(op, started, &result);
                result
            }
        })
    }

    fn record(
        &self,
        op: Op,
        started: Instant,
        result: &Result<Output, blue_kubernetes_client::Error>,
    ) {
        let now = Instant::now();
        // Parse outside the lock: a status write returns the whole object.
        let ready = match (op, result) {
            (Op::Status, Ok(out)) if out.exit_code == 0 => ready_of(&out.stdout),
            _ => None,
        };
        let mut s = self.lock();
        let c = &mut s.counts;
        match op {
            Op::List => c.list += 1,
            Op::Get => c.get += 1,
            Op::Status => c.status += 1,
            Op::Finalizers => c.finalizers += 1,
            Op::Other => c.other += 1,
        }
        if !matches!(result, Ok(out) if out.exit_code == 0) {
            c.failed += 1;
        }
        s.calls.push((op, now, now - started));
        if let Some((key, generation)) = ready {
            match generation {
                Some(g) => {
                    s.ready.insert(key, (g, now));
                }
                None => {
                    s.ready.remove(&key);
                }
            }
        }
    }
}

/// From a status write's output: the object and, if its phase is Ready, its
/// observedGeneration (`None` = not Ready).
type ReadyNote = ((String, String), Option<i64>);

fn ready_of(stdout: &str) -> Option<ReadyNote> {
    let v: Value = serde_json::from_str(stdout).ok()?;
    let meta = v.get("metadata")?;
    let key = (
        meta.get("namespace")?.as_str()?.to_string(),
        meta.get("name")?.as_str()?.to_string(),
    );
    let status = v.get("status");
    let ready = status.and_then(|s| s.get("phase")).and_then(Value::as_str) == Some("Ready");
    let generation = status
        .and_then(|s| s.get("observedGeneration"))
        .and_then(Value::as_i64);
    Some((key, if ready { generation } else { None }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client's argv for `args` (split at spaces), after its flags.
    fn argv(args: &str) -> Vec<String> {
        let flags = "kubectl --kubeconfig k --context c --request-timeout=30s";
        format!("{flags} {args}")
            .split(' ')
            .map(String::from)
            .collect()
    }

    #[test]
    fn classifies_the_clients_command_lines() {
        assert_eq!(Op::of(&argv("get w.g -n ns -o json")), Op::List);
        let get = argv("get w.g a -n ns --ignore-not-found -o json");
        assert_eq!(Op::of(&get), Op::Get);
        let status = argv("replace --raw /apis/x/status -f /tmp/f");
        assert_eq!(Op::of(&status), Op::Status);
        let patch = argv("patch w.g a --type=merge");
        assert_eq!(Op::of(&patch), Op::Finalizers);
    }

    #[test]
    fn status_output_marks_ready_with_generation() {
        let out = r#"{"metadata":{"namespace":"n","name":"a"},"status":{"phase":"Ready","observedGeneration":3}}"#;
        assert_eq!(ready_of(out), Some((("n".into(), "a".into()), Some(3))));
        let out = r#"{"metadata":{"namespace":"n","name":"a"},"status":{"phase":"Failed"}}"#;
        assert_eq!(ready_of(out), Some((("n".into(), "a".into()), None)));
    }
}
