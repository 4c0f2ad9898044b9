//! Rule 2b: the config fields the schema declares immutable hold the
//! values accepted before (`status.immutableDigest`, see
//! `domain::immutable`). Enforced here on every server, CEL or not.

use super::pass::Pass;
use super::report::{Halt, Report};
use crate::domain::immutable::{self, Check};
use crate::domain::resource::status_str;
use crate::domain::status::{Next, Transition};
use crate::resource::{Phase, Reason};
use crate::telemetry::log;

impl Pass<'_> {
    /// The digest of the declared immutable fields as the config holds
    /// them now: recorded with the profile and state identity, when an
    /// effect is about to run and when the resource is Ready.
    pub(super) fn immutable_record(&self) -> Option<String> {
        immutable::digest(&self.package.schema().immutable, self.config())
    }

    /// An edit changed a declared immutable field: `Invalid` /
    /// `ImmutableField`, keeping the recorded digest, with the fields'
    /// names in the Warning Event (never in status). `None`: the rule does
    /// not apply.
    pub(super) async fn immutable_changed(&mut self) -> Option<Result<Report, Halt>> {
        let declared = &self.package.schema().immutable;
        let stored = status_str(&self.snapshot, "immutableDigest");
        let changed = match immutable::check(declared, self.config(), stored) {
            Check::Changed(fields) => fields.join(", config."),
            Check::Same | Check::Unrecorded => return None,
        };
        log::warn_about!(
            self.subject(),
            fields = changed.as_str(),
            "immutable config field changed since it was accepted; nothing runs until the edit is reverted"
        );
        self.user_facing = Some(format!(
            "config.{changed}: immutable, changed since the resource was accepted; revert the edit (to change it, create a new resource)"
        ));
        let t = Transition::new(Phase::Invalid, Reason::ImmutableField, Next::OnEdit);
        Some(self.write(t).await)
    }

    fn config(&self) -> &serde_json::Value {
        &self.snapshot["spec"]["config"]
    }
}
