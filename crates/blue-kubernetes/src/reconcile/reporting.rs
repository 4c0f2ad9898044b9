//! What a pass tells the people running the operator: callback timings and
//! failures, phase transitions, Events. Never the status's business.

use super::decision::Decision;
use super::plan::{Plan, Stop};
use crate::domain::due::parse_ms;
use crate::domain::status::{Next, Transition};
use crate::leader::Fence;
use crate::package::erased::Package;
use crate::package::validation::ValidationErrors;
use crate::resource::{Phase, Reason};
use crate::telemetry::log::{self, Subject};
use crate::telemetry::EventType;
use crate::Controller;
use serde_json::Value;
use std::time::Duration;

/// What a pass tells, from where it stands: the controller's telemetry,
/// the resource as the pass knows it, and what its decision remembers.
pub(super) struct Teller<'a> {
    pub(super) controller: &'a Controller,
    pub(super) package: &'a Package,
    pub(super) snapshot: &'a Value,
    pub(super) decision: &'a Decision<'a>,
    /// The fence the pass started under: an Event is recorded only while
    /// it holds (always, with none), as a write would be.
    pub(super) fence: Option<&'a Fence>,
}

impl<'a> Teller<'a> {
    /// The resource a log line of this pass is about.
    pub(super) fn subject(&self) -> Subject<'a> {
        Subject {
            descriptor: self.package.descriptor(),
            object: self.snapshot,
        }
    }

    /// Logs validation messages (the author's text, unless turned off).
    pub(super) fn log_invalid(&self, messages: &ValidationErrors) {
        let with_text = self.controller.telemetry.log_callback_errors;
        log::configuration_invalid(self.subject(), messages, with_text);
    }

    /// Before a status write: the WARN line of the callback failure behind
    /// a Failed status, with the attempt and retry time the status records.
    pub(super) fn before_write(&self, t: &Transition, status: &Value) {
        let (Phase::Failed | Phase::Rejected, Some((callback, failure))) =
            (t.phase, self.decision.failure())
        else {
            return;
        };
        let attempt = status["retryCount"].as_u64().unwrap_or(0);
        let next_retry = status["nextReconcileTime"].as_str().unwrap_or("");
        let call = failure.logged(callback, attempt, next_retry);
        let with_text = self.controller.telemetry.log_callback_errors;
        log::callback_failed(self.subject(), &call, with_text);
    }

    /// After a status write: the INFO line of a phase transition, counters,
    /// and an Event for a transition or a failure.
    pub(super) fn after_write(&self, previous: Option<String>, t: &Transition, status: &Value) {
        let telemetry = &self.controller.telemetry;
        let controller_label = self.package.descriptor().qualified_plural();
        if t.next == Next::Backoff {
            telemetry
                .metrics
                .retries
                .get_or_create(&[("controller", controller_label.clone())])
                .inc();
        }
        if t.phase == Phase::Invalid {
            telemetry.count_invalid();
        }
        if matches!(t.phase, Phase::Invalid | Phase::Rejected | Phase::Blocked) {
            let labels = [
                ("controller", controller_label),
                ("reason", t.reason.as_str().into()),
            ];
            telemetry.metrics.stalls.get_or_create(&labels).inc();
        }
        let changed = previous.as_deref() != Some(t.phase.as_str());
        if changed {
            log::phase_changed(self.subject(), previous.as_deref(), t.phase, t.reason);
        }
        let fence_holds = self.fence.is_none_or(Fence::holds);
        let Some(recorder) = telemetry.events.as_ref().filter(|_| fence_holds) else {
            return;
        };
        // Marked validation messages, a changed immutable field and a
        // rejection are news on every Invalid (Rejected) write (each
        // follows an edit, a token or a new check), not only on a change
        // of phase.
        let for_users = self
            .decision
            .user_facing()
            .filter(|_| matches!(t.phase, Phase::Invalid | Phase::Rejected));
        // A retry publishes Reconciling again after Failed: the Failed
        // series already tells that story (with its count).
        let retry = previous.as_deref() == Some(Phase::Failed.as_str())
            && matches!(t.phase, Phase::Reconciling | Phase::Deleting);
        if for_users.is_none() && (retry || (!changed && t.phase != Phase::Failed)) {
            return;
        }
        let kind = match t.phase {
            Phase::Failed | Phase::Invalid | Phase::Blocked | Phase::Rejected => EventType::Warning,
            _ => EventType::Normal,
        };
        let message = match for_users {
            Some(text) => text.to_string(),
            None => self.event_message(t, status),
        };
        recorder.record(
            self.package.descriptor(),
            self.snapshot,
            kind,
            t.reason.as_str(),
            message,
        );
    }

    /// A write the leader-election fence refused becomes a Warning Event on
    /// the resource: its users see why status stopped moving.
    pub(super) fn report_fenced(&self, e: &blue_kubernetes_client::Error) {
        let blue_kubernetes_client::Error::Fenced { operation } = e else {
            return;
        };
        let Some(events) = &self.controller.telemetry.events else {
            return;
        };
        let what = if operation == "patch" {
            "finalizer"
        } else {
            "status"
        };
        let message = format!(
            "{what} write refused: this replica can no longer prove it holds its lease (leader election or the resource's shard)"
        );
        let descriptor = self.package.descriptor();
        events.record(
            descriptor,
            self.snapshot,
            EventType::Warning,
            "Fenced",
            message,
        );
    }

    /// Generic text only: the callback's name and the retry schedule, or the
    /// status condition's fixed message. (The one exception, the package's
    /// user-facing validation messages, is chosen in `after_write`.)
    fn event_message(&self, t: &Transition, status: &Value) -> String {
        let generic = status["conditions"][0]["message"]
            .as_str()
            .unwrap_or(t.phase.as_str())
            .to_string();
        if let (Reason::DependencyNotReady, Plan::Hold(Stop::Waiting(_, awaited))) =
            (t.reason, self.decision.plan())
        {
            // Which reference, and whether its object exists: its name is
            // validated and public; nothing else of it is said.
            return awaited.message();
        }
        if t.phase != Phase::Failed {
            return generic;
        }
        let what = match (self.decision.failure(), t.reason) {
            (Some((callback, _)), _) => format!("{callback} failed"),
            (None, Reason::NotReady) => "infrastructure not ready".to_string(),
            (None, _) => generic,
        };
        let attempt = status["retryCount"].as_u64().unwrap_or(0);
        let now = self.controller.now();
        let next = status["nextReconcileTime"].as_str().and_then(parse_ms);
        match next {
            Some(next) => {
                let wait = Duration::from_secs(next.saturating_sub(now).div_ceil(1000));
                format!(
                    "{what}; retry {attempt} in {}",
                    humantime::format_duration(wait)
                )
            }
            None => what,
        }
    }
}
