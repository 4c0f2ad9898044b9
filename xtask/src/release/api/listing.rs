//! A crate's public API as sorted lines, from rustdoc's JSON.
//!
//! One line per thing a user can depend on: every public path of an item
//! (re-exports included), a function's or method's signature, a struct's
//! public fields and whether it can be built with a literal, an enum's
//! variants and whether it is exhaustive, a trait's bounds, items and
//! which of them are required, the traits a type implements (auto traits
//! included). A change a user could notice (a removal, a rename, a changed
//! signature) removes a line; an addition only adds one, except where it
//! breaks users (a field of a struct built with literals, a variant of an
//! exhaustive enum, a required trait item), which changes a summary line.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::items::Lister;
use super::names::{key, Names};

/// The listing of the crate whose rustdoc JSON this is.
pub fn listing(krate: &Value) -> BTreeSet<String> {
    let mut found = Vec::new();
    let mut walk = Walk {
        index: &krate["index"],
        found: &mut found,
        lines: BTreeSet::new(),
        seen: BTreeSet::new(),
    };
    walk.module(&krate["root"], "");
    let mut lines = walk.lines;
    let mut canonical: BTreeMap<String, String> = BTreeMap::new();
    for (item_path, id) in &found {
        let best = canonical
            .entry(key(id).unwrap_or_default())
            .or_insert_with(|| item_path.clone());
        if (item_path.matches("::").count(), item_path) < (best.matches("::").count(), &*best) {
            *best = item_path.clone();
        }
    }
    let names = Names::new(krate, canonical.clone().into_iter().collect());
    let lister = Lister::new(&krate["index"], &names);
    for (item_path, id) in &found {
        let is_canonical = canonical.get(&key(id).unwrap_or_default()) == Some(item_path);
        lister.item(
            item_path,
            &krate["index"][key(id).unwrap_or_default()],
            is_canonical,
            &mut lines,
        );
    }
    lines
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}::{name}")
    }
}

/// Collects every public path of every local item, from the crate root.
struct Walk<'a, 'f> {
    index: &'a Value,
    found: &'f mut Vec<(String, Value)>,
    lines: BTreeSet<String>,
    seen: BTreeSet<(String, String)>,
}

impl<'a> Walk<'a, '_> {
    fn module(&mut self, id: &Value, prefix: &str) {
        let id_key = key(id).unwrap_or_default();
        // Glob re-exports can form cycles; a module at a path is walked once.
        if !self.seen.insert((id_key.clone(), prefix.to_string()))
            || prefix.matches("::").count() > 16
        {
            return;
        }
        let items = self.index[&id_key]["inner"]["module"]["items"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for item_id in &items {
            let item = &self.index[key(item_id).unwrap_or_default()];
            if item["visibility"] != "public" {
                continue;
            }
            let name = item["name"].as_str().unwrap_or_default();
            let Some((kind, inner)) = item["inner"].as_object().and_then(|o| o.iter().next())
            else {
                continue;
            };
            match kind.as_str() {
                "impl" => {}
                "use" => self.reexport(inner, prefix),
                _ => self.found_item(join(prefix, name), item_id),
            }
        }
    }

    fn reexport(&mut self, inner: &Value, prefix: &str) {
        let target = &self.index[key(&inner["id"]).unwrap_or_default()];
        let is_local = target["crate_id"] == 0;
        let source = inner["source"].as_str().unwrap_or_default();
        if inner["is_glob"] == true {
            if is_local && target["inner"].get("module").is_some() {
                self.module(&inner["id"], prefix);
            } else {
                self.lines
                    .insert(format!("use {} = {source}", join(prefix, "*")));
            }
            return;
        }
        let name = inner["name"].as_str().unwrap_or_default();
        if is_local {
            self.found_item(join(prefix, name), &inner["id"]);
        } else {
            self.lines
                .insert(format!("use {} = {source}", join(prefix, name)));
        }
    }

    fn found_item(&mut self, item_path: String, id: &Value) {
        let is_module = self.index[key(id).unwrap_or_default()]["inner"]
            .get("module")
            .is_some();
        self.found.push((item_path.clone(), id.clone()));
        if is_module {
            self.module(id, &item_path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// rustdoc's JSON (format 57) of a small crate: a struct `S { pub x: u8 }`
    /// with `fn get(&self) -> u8`, `fn make(S) -> Option<S>` defined in a
    /// private module and re-exported at the root, and `enum E { A, B(bool) }`.
    fn krate() -> Value {
        let none = json!({ "params": [], "where_predicates": [] });
        let s = json!({ "resolved_path": { "path": "S", "id": 1, "args": null } });
        let function = |inputs: Value, output: Value| {
            json!({ "function": { "sig": { "inputs": inputs, "output": output, "is_c_variadic": false },
                "generics": none, "header": { "is_const": false, "is_unsafe": false, "is_async": false, "abi": "Rust" },
                "has_body": true } })
        };
        let item = |name: Value, inner: Value| json!({ "crate_id": 0, "name": name, "visibility": "public", "attrs": [], "inner": inner });
        let option_of_s = json!({ "resolved_path": { "path": "Option", "id": 99,
            "args": { "angle_bracketed": { "args": [{ "type": s }], "constraints": [] } } } });
        json!({
            "root": 0,
            "format_version": 57,
            "index": {
                "0": item(json!("demo"), json!({ "module": { "is_crate": true, "items": [1, 2, 4], "is_stripped": false } })),
                "1": item(json!("S"), json!({ "struct": { "kind": { "plain": { "fields": [10], "has_stripped_fields": false } },
                    "generics": none, "impls": [20] } })),
                "10": item(json!("x"), json!({ "struct_field": { "primitive": "u8" } })),
                "20": item(json!(null), json!({ "impl": { "is_unsafe": false, "generics": none, "provided_trait_methods": [],
                    "trait": null, "for": s, "items": [21], "is_negative": false, "is_synthetic": false, "blanket_impl": null } })),
                "21": item(json!("get"), function(
                    json!([["self", { "borrowed_ref": { "lifetime": null, "is_mutable": false, "type": { "generic": "Self" } } }]]),
                    json!({ "primitive": "u8" }))),
                "2": item(json!(null), json!({ "use": { "source": "inner::make", "name": "make", "id": 3, "is_glob": false } })),
                "3": item(json!("make"), function(json!([["value", s]]), option_of_s)),
                "4": item(json!("E"), json!({ "enum": { "generics": none, "has_stripped_variants": false, "variants": [40, 41], "impls": [] } })),
                "40": item(json!("A"), json!({ "variant": { "kind": "plain", "discriminant": null } })),
                "41": item(json!("B"), json!({ "variant": { "kind": { "tuple": [42] }, "discriminant": null } })),
                "42": item(json!("0"), json!({ "struct_field": { "primitive": "bool" } })),
            },
            "paths": {
                "3": { "crate_id": 0, "path": ["demo", "inner", "make"], "kind": "function" },
                "99": { "crate_id": 2, "path": ["core", "option", "Option"], "kind": "enum" },
            },
        })
    }

    fn lines(of: &[&str]) -> BTreeSet<String> {
        of.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn items_are_listed_at_their_public_paths_with_signatures_fields_and_variants() {
        let expected = lines(&[
            "enum E",
            "enum E: exhaustive { A, B }",
            "field S.x: u8",
            "fn make(S) -> core::option::Option<S>",
            "impl S { fn get(&self) -> u8 }",
            "struct S",
            "struct S: constructible with { x }",
            "variant E::A",
            "variant E::B(bool)",
        ]);
        assert_eq!(listing(&krate()), expected);
    }

    #[test]
    fn a_changed_signature_or_a_variant_of_an_exhaustive_enum_removes_a_line() {
        let before = listing(&krate());
        let mut changed = krate();
        changed["index"]["21"]["inner"]["function"]["sig"]["output"] =
            json!({ "primitive": "u16" });
        changed["index"]["4"]["inner"]["enum"]["variants"] = json!([40, 41, 43]);
        changed["index"]["43"] = json!({ "crate_id": 0, "name": "C", "visibility": "public", "attrs": [],
            "inner": { "variant": { "kind": "plain", "discriminant": null } } });
        let after = listing(&changed);
        let gone: Vec<&String> = before.difference(&after).collect();
        assert_eq!(
            gone,
            [
                "enum E: exhaustive { A, B }",
                "impl S { fn get(&self) -> u8 }"
            ]
        );
    }

    #[test]
    fn an_added_function_only_adds_a_line() {
        let before = listing(&krate());
        let mut added = krate();
        added["index"]["0"]["inner"]["module"]["items"] = json!([1, 2, 4, 5]);
        added["index"]["5"] = added["index"]["3"].clone();
        added["index"]["5"]["name"] = json!("make_again");
        let after = listing(&added);
        assert!(before.is_subset(&after));
        assert_eq!(
            after.difference(&before).collect::<Vec<_>>(),
            ["fn make_again(S) -> core::option::Option<S>"]
        );
    }
}
