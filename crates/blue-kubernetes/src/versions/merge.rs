//! The three-way merge that restores what a down-conversion lost: the
//! stored config kept on the object (`theirs`), what the old version's
//! config converts back to as it was read (`base`) and as it is now
//! (`ours`). A field the old client left alone takes the kept value; a
//! field it changed keeps its change.

use serde_json::{Map, Value};

/// `ours` with every difference between `base` and `theirs` applied where
/// `ours` still equals `base`, object by object; where both changed a
/// value, `ours` (the old client's edit) wins.
pub(crate) fn three_way(base: &Value, theirs: &Value, ours: &Value) -> Value {
    merge(Some(base), Some(theirs), Some(ours)).unwrap_or(Value::Null)
}

fn merge(base: Option<&Value>, theirs: Option<&Value>, ours: Option<&Value>) -> Option<Value> {
    if ours == base {
        return theirs.cloned();
    }
    if theirs == base {
        return ours.cloned();
    }
    match (base, theirs, ours) {
        (Some(Value::Object(b)), Some(Value::Object(t)), Some(Value::Object(o))) => {
            Some(Value::Object(objects(b, t, o)))
        }
        _ => ours.cloned(),
    }
}

fn objects(
    base: &Map<String, Value>,
    theirs: &Map<String, Value>,
    ours: &Map<String, Value>,
) -> Map<String, Value> {
    let mut keys: Vec<&String> = ours
        .keys()
        .chain(theirs.keys())
        .chain(base.keys())
        .collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| merge(base.get(k), theirs.get(k), ours.get(k)).map(|v| (k.clone(), v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::three_way;
    use serde_json::json;

    #[test]
    fn an_untouched_old_config_restores_the_kept_one_whole() {
        let base = json!({"replicas": 3, "zone": null});
        let theirs = json!({"replicas": 3, "zone": "eu-1"});
        assert_eq!(three_way(&base, &theirs, &base), theirs);
    }

    #[test]
    fn the_old_clients_edit_wins_and_lost_fields_come_back_beside_it() {
        let base = json!({"replicas": 3, "zone": null, "tags": {"a": 1}});
        let theirs = json!({"replicas": 3, "zone": "eu-1", "tags": {"a": 1, "b": 2}});
        let ours = json!({"replicas": 5, "zone": null, "tags": {"a": 7}});
        assert_eq!(
            three_way(&base, &theirs, &ours),
            json!({"replicas": 5, "zone": "eu-1", "tags": {"a": 7, "b": 2}})
        );
    }

    #[test]
    fn a_field_the_old_client_removed_stays_removed() {
        let base = json!({"replicas": 3, "name": "x"});
        let theirs = json!({"replicas": 3, "name": "x", "zone": "eu-1"});
        let ours = json!({"replicas": 3});
        assert_eq!(
            three_way(&base, &theirs, &ours),
            json!({"replicas": 3, "zone": "eu-1"})
        );
    }
}
