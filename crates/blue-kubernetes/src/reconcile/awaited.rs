//! The reference a waiting resource waits for, as its Event and the
//! operator's log name it.

/// One reference that holds a pass: its field, the kind and object name it
/// names, and whether that object is missing or there but not Ready. The
/// name was validated as an object name before anything was read (and
/// `kubectl get` shows it anyway), so it may appear in Events and logs;
/// nothing else of the referenced resource does, its outputs least of all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Awaited {
    /// The config field holding the reference.
    pub(crate) field: String,
    /// The referenced kind.
    pub(crate) kind: String,
    /// The object name it holds.
    pub(crate) name: String,
    /// No object of that name exists.
    pub(crate) missing: bool,
}

impl Awaited {
    /// The message of the `DependencyNotReady` Event.
    pub(crate) fn message(&self) -> String {
        let Awaited {
            field, kind, name, ..
        } = self;
        match self.missing {
            true => format!("waiting for {kind} {name} (spec.config.{field}): not found"),
            false => format!("waiting for {kind} {name} (spec.config.{field}) to be Ready"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_field_kind_and_object_and_says_missing_or_not_ready() {
        let mut awaited = Awaited {
            field: "zoneRef".into(),
            kind: "Zone".into(),
            name: "example-org".into(),
            missing: true,
        };
        assert_eq!(
            awaited.message(),
            "waiting for Zone example-org (spec.config.zoneRef): not found"
        );
        awaited.missing = false;
        assert_eq!(
            awaited.message(),
            "waiting for Zone example-org (spec.config.zoneRef) to be Ready"
        );
    }
}
