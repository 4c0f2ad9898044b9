//! The external name: the infrastructure's own ID, reported by a callback
//! and recorded on the resource as the `<domain>/external-name`
//! annotation, so every later pass (and a restarted controller) finds the
//! infrastructure by it.
//!
//! It is recorded as soon as it is reported, before anything else the
//! pass writes: infrastructure made but not recorded would be made again
//! by the next pass. The write is guarded by the pass's fence and by the
//! object's uid, not by its resourceVersion: the name is a fact about the
//! infrastructure, not an acknowledgement of desired state, and losing it
//! to a concurrent spec edit would orphan what was made. A spec edit that
//! came in between does stop the pass right after the write (the edit is
//! the next pass's business), so no later write of this pass acknowledges
//! desired state it did not act on.

use super::report::{Halt, Report};
use crate::domain::names::Names;
use crate::domain::resource;
use crate::package::options::CallbackInput;
use crate::telemetry::log::{self, Subject};
use blue_kubernetes_client::{ApiPath, ApiRequest, Client, Method, PatchType, ResourceDescriptor};
use serde_json::{json, Value};

/// The longest external name recorded; a longer one is logged and dropped
/// (an ID, not a document).
pub(crate) const MAX_EXTERNAL_NAME_BYTES: usize = 1024;

/// An external name a callback of this pass reported, until it is
/// recorded.
#[derive(Default)]
pub(super) struct Reported(Option<String>);

impl Reported {
    /// A callback reported `name`: later callbacks of the pass see it at
    /// once (in `options`), and the next write records it. One too long,
    /// or a connection value, is logged and dropped.
    pub(super) fn note(
        &mut self,
        name: Option<String>,
        options: &mut CallbackInput,
        subject: Subject<'_>,
    ) {
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return;
        };
        if options.external_name() == Some(name.as_str()) && self.0.is_none() {
            return;
        }
        let value = Value::from(name.as_str());
        let secret = options
            .connection()
            .is_some_and(|c| c.holds_generated(&value));
        if name.len() > MAX_EXTERNAL_NAME_BYTES || secret {
            log::warn_about!(
                subject,
                "external name not recorded: too long, or a connection value"
            );
            return;
        }
        *options = options.clone().with_external_name(&name);
        self.0 = Some(name);
    }

    /// Writes a reported external name to the annotation of `snapshot`
    /// (of type `d`), if it is not there already, through `client`.
    pub(super) async fn record(
        &mut self,
        client: &dyn Client,
        names: &Names,
        d: &ResourceDescriptor,
        snapshot: &mut Value,
    ) -> Result<(), Halt> {
        let Some(name) = self.0.take() else {
            return Ok(());
        };
        let key = names.external_name_annotation();
        let recorded = resource::at(snapshot, &["metadata", "annotations", key.as_str()]);
        if recorded.and_then(Value::as_str) == Some(name.as_str()) {
            return Ok(());
        }
        let (namespace, object) = (resource::namespace(snapshot), resource::name(snapshot));
        let path = match namespace {
            "" => ApiPath::cluster(&d.group, &d.version, &d.plural, Some(object), None),
            ns => ApiPath::namespaced(&d.group, &d.version, ns, &d.plural, Some(object), None),
        }
        .map_err(Halt::Transport)?;
        let uid = resource::uid(snapshot).unwrap_or_default();
        let patch = json!({"metadata": {"uid": uid, "annotations": {key: name}}});
        let request = ApiRequest::new(Method::Patch(PatchType::Merge), path).with_body(patch);
        let response = client.send_raw(request).await?;
        let Some(written) = response.body.filter(Value::is_object) else {
            return Err(Halt::Lost(Report::Conflict));
        };
        let same_desire = |o: &Value| {
            (
                resource::generation(o),
                resource::request_token(o, &names.request_annotation).to_string(),
            )
        };
        let moved = same_desire(&written) != same_desire(snapshot);
        *snapshot = written;
        match moved {
            // Recorded; the new desired state is the next pass's.
            true => Err(Halt::Lost(Report::Conflict)),
            false => Ok(()),
        }
    }
}
