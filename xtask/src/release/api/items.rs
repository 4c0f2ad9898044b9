//! An item's lines in the listing: its kind and signature at each public
//! path; under its shortest path its fields, variants, trait items and
//! implementations.

use std::collections::BTreeSet;

use serde_json::Value;

use super::names::{key, Names};
use super::render::{bounds, header, params, path, signature, ty, unknown, where_clause};

/// The auto traits a type's users may rely on (`Freeze` and `UnsafeUnpin`
/// cannot be named on stable).
const STABLE_AUTO_TRAITS: [&str; 5] = ["Send", "Sync", "Unpin", "UnwindSafe", "RefUnwindSafe"];

/// Writes an item's lines.
pub struct Lister<'a> {
    index: &'a Value,
    names: &'a Names<'a>,
}

impl<'a> Lister<'a> {
    pub fn new(index: &'a Value, names: &'a Names<'a>) -> Self {
        Self { index, names }
    }

    fn get(&self, id: &Value) -> &Value {
        &self.index[key(id).unwrap_or_default()]
    }

    pub fn item(&self, p: &str, item: &Value, is_canonical: bool, out: &mut BTreeSet<String>) {
        let names = self.names;
        let Some((kind, v)) = item["inner"].as_object().and_then(|o| o.iter().next()) else {
            out.insert(format!("item {p}"));
            return;
        };
        let generics = &v["generics"];
        let non_exhaustive = item["attrs"].to_string().contains("non_exhaustive");
        match kind.as_str() {
            "module" => {
                out.insert(format!("mod {p}"));
            }
            "function" => {
                out.insert(format!(
                    "{}fn {p}{}",
                    header(&v["header"]),
                    signature(names, v)
                ));
            }
            "struct" | "union" => {
                let (params, clause) = (params(names, generics), where_clause(names, generics));
                out.insert(format!("{kind} {p}{params}{clause}"));
                if is_canonical {
                    self.fields(p, &v["kind"], non_exhaustive, out);
                    self.impls(&v["impls"], false, out);
                }
            }
            "enum" => {
                let (params, clause) = (params(names, generics), where_clause(names, generics));
                out.insert(format!("enum {p}{params}{clause}"));
                if is_canonical {
                    self.variants(p, v, non_exhaustive, out);
                    self.impls(&v["impls"], false, out);
                }
            }
            "trait" => {
                let unsafety = if v["is_unsafe"] == true {
                    "unsafe "
                } else {
                    ""
                };
                let supertraits = bounds(names, &v["bounds"]);
                let supertraits = if supertraits.is_empty() {
                    supertraits
                } else {
                    format!(": {supertraits}")
                };
                let (params, clause) = (params(names, generics), where_clause(names, generics));
                out.insert(format!("{unsafety}trait {p}{params}{supertraits}{clause}"));
                if is_canonical {
                    self.trait_items(p, v, out);
                    self.impls(&v["implementations"], true, out);
                }
            }
            "type_alias" => {
                let (params, clause) = (params(names, generics), where_clause(names, generics));
                out.insert(format!(
                    "type {p}{params} = {}{clause}",
                    ty(names, &v["type"])
                ));
            }
            "constant" => {
                out.insert(format!("const {p}: {}", ty(names, &v["type"])));
            }
            "static" => {
                let mutable = if v["is_mutable"] == true { "mut " } else { "" };
                out.insert(format!("static {mutable}{p}: {}", ty(names, &v["type"])));
            }
            "macro" | "proc_macro" => {
                out.insert(format!("macro {p}"));
            }
            other => {
                out.insert(format!("{other} {p}"));
            }
        }
    }

    /// A struct's public fields, and whether a literal can build it.
    fn fields(&self, p: &str, kind: &Value, non_exhaustive: bool, out: &mut BTreeSet<String>) {
        let names = self.names;
        if kind == "unit" && !non_exhaustive {
            out.insert(format!("struct {p}: constructible as a unit"));
        }
        if let Some(tuple) = kind.get("tuple").and_then(Value::as_array) {
            for (i, field) in tuple.iter().enumerate().filter(|(_, f)| !f.is_null()) {
                out.insert(format!(
                    "field {p}.{i}: {}",
                    ty(names, &self.get(field)["inner"]["struct_field"])
                ));
            }
            if !non_exhaustive && tuple.iter().all(|f| !f.is_null()) {
                out.insert(format!(
                    "struct {p}: constructible with {} fields",
                    tuple.len()
                ));
            }
        }
        if let Some(plain) = kind.get("plain") {
            let mut all = Vec::new();
            for field in plain["fields"].as_array().into_iter().flatten() {
                let field = self.get(field);
                let name = field["name"].as_str().unwrap_or_default();
                out.insert(format!(
                    "field {p}.{name}: {}",
                    ty(names, &field["inner"]["struct_field"])
                ));
                all.push(name);
            }
            if !non_exhaustive && plain["has_stripped_fields"] == false {
                all.sort_unstable();
                out.insert(format!(
                    "struct {p}: constructible with {{ {} }}",
                    all.join(", ")
                ));
            }
        }
    }

    fn variants(&self, p: &str, v: &Value, non_exhaustive: bool, out: &mut BTreeSet<String>) {
        let names = self.names;
        let mut all = Vec::new();
        for variant in v["variants"].as_array().into_iter().flatten() {
            let variant = self.get(variant);
            let name = variant["name"].as_str().unwrap_or_default();
            let kind = &variant["inner"]["variant"]["kind"];
            let field_type = |f: &Value| {
                if f.is_null() {
                    "_".to_string()
                } else {
                    ty(names, &self.get(f)["inner"]["struct_field"])
                }
            };
            let shape = if let Some(tuple) = kind.get("tuple").and_then(Value::as_array) {
                format!(
                    "({})",
                    tuple.iter().map(field_type).collect::<Vec<_>>().join(", ")
                )
            } else if let Some(fields) = kind.get("struct") {
                let named = fields["fields"].as_array().into_iter().flatten().map(|f| {
                    format!(
                        "{}: {}",
                        self.get(f)["name"].as_str().unwrap_or_default(),
                        field_type(f)
                    )
                });
                let rest = if fields["has_stripped_fields"] == true {
                    ", .."
                } else {
                    ""
                };
                format!(" {{ {}{rest} }}", named.collect::<Vec<_>>().join(", "))
            } else if kind == "plain" {
                String::new()
            } else {
                format!(" {}", unknown(kind))
            };
            out.insert(format!("variant {p}::{name}{shape}"));
            all.push(name);
        }
        if !non_exhaustive && v["has_stripped_variants"] != true {
            all.sort_unstable();
            out.insert(format!("enum {p}: exhaustive {{ {} }}", all.join(", ")));
        }
    }

    fn trait_items(&self, p: &str, v: &Value, out: &mut BTreeSet<String>) {
        let names = self.names;
        if v.get("is_dyn_compatible").or(v.get("is_object_safe")) == Some(&Value::Bool(true)) {
            out.insert(format!("trait {p}: dyn-compatible"));
        }
        let mut required = Vec::new();
        for item in v["items"].as_array().into_iter().flatten() {
            let item = self.get(item);
            let name = item["name"].as_str().unwrap_or_default();
            let Some((kind, inner)) = item["inner"].as_object().and_then(|o| o.iter().next())
            else {
                continue;
            };
            let (has_default, line) = match kind.as_str() {
                "function" => {
                    let line = format!(
                        "{}fn {name}{}",
                        header(&inner["header"]),
                        signature(names, inner)
                    );
                    (inner["has_body"] == true, line)
                }
                "assoc_type" => {
                    let b = bounds(names, &inner["bounds"]);
                    let b = if b.is_empty() { b } else { format!(": {b}") };
                    let default = (!inner["type"].is_null())
                        .then(|| format!(" = {}", ty(names, &inner["type"])));
                    let line = format!(
                        "type {name}{}{b}{}",
                        params(names, &inner["generics"]),
                        default.unwrap_or_default()
                    );
                    (!inner["type"].is_null(), line)
                }
                "assoc_const" => {
                    let default = inner
                        .get("value")
                        .or(inner.get("default"))
                        .filter(|d| !d.is_null());
                    (
                        default.is_some(),
                        format!("const {name}: {}", ty(names, &inner["type"])),
                    )
                }
                other => (false, format!("{other} {name}")),
            };
            if !has_default {
                required.push(name);
            }
            let which = if has_default { "provided" } else { "required" };
            out.insert(format!("trait {p}: {which} {line}"));
        }
        required.sort_unstable();
        out.insert(format!(
            "trait {p}: required items {{ {} }}",
            required.join(", ")
        ));
    }

    /// Trait implementations (one line each, with their associated types)
    /// and inherent methods and constants. Blanket implementations of
    /// other crates' traits follow from the rest and are left out.
    fn impls(&self, ids: &Value, with_blanket: bool, out: &mut BTreeSet<String>) {
        let names = self.names;
        for id in ids.as_array().into_iter().flatten() {
            let i = &self.get(id)["inner"]["impl"];
            if !with_blanket && !i["blanket_impl"].is_null() {
                continue;
            }
            let auto_trait = i["trait"]["path"].as_str().unwrap_or_default();
            if i["is_synthetic"] == true && !STABLE_AUTO_TRAITS.contains(&auto_trait) {
                continue;
            }
            let generics = &i["generics"];
            let for_type = ty(names, &i["for"]);
            let (impl_params, clause) = (params(names, generics), where_clause(names, generics));
            let items = i["items"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|item| self.get(item));
            if i["trait"].is_null() {
                for item in items.filter(|item| item["visibility"] == "public") {
                    let name = item["name"].as_str().unwrap_or_default();
                    let inner = &item["inner"];
                    let member = if let Some(f) = inner.get("function") {
                        format!("{}fn {name}{}", header(&f["header"]), signature(names, f))
                    } else if let Some(c) = inner.get("assoc_const").or(inner.get("constant")) {
                        format!("const {name}: {}", ty(names, &c["type"]))
                    } else {
                        format!("{name} {}", unknown(inner))
                    };
                    out.insert(format!(
                        "impl{impl_params} {for_type}{clause} {{ {member} }}"
                    ));
                }
                continue;
            }
            let negative = if i["is_negative"] == true { "!" } else { "" };
            let unsafety = if i["is_unsafe"] == true {
                "unsafe "
            } else {
                ""
            };
            let header = format!(
                "{unsafety}impl{impl_params} {negative}{} for {for_type}{clause}",
                path(names, &i["trait"])
            );
            for item in items {
                if let Some(assoc) = item["inner"].get("assoc_type") {
                    let name = item["name"].as_str().unwrap_or_default();
                    let generic = params(names, &assoc["generics"]);
                    out.insert(format!(
                        "{header} {{ type {name}{generic} = {} }}",
                        ty(names, &assoc["type"])
                    ));
                }
            }
            out.insert(header);
        }
    }
}
