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

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use super::render::{bounds, header, params, path, signature, ty, unknown, where_clause};

const STABLE_AUTO_TRAITS: [&str; 5] = ["Send", "Sync", "Unpin", "UnwindSafe", "RefUnwindSafe"];

/// How local items are named in signatures: by their shortest public path
/// (stable when an item moves between private modules); external items
/// by their defining crate's path.
pub struct Names<'a> {
    krate: &'a Value,
    public: HashMap<String, String>,
}

impl Names<'_> {
    /// The name of the item with this id, if rustdoc knows one.
    pub fn of(&self, id: &Value) -> Option<String> {
        let key = key(id)?;
        if let Some(public) = self.public.get(&key) {
            return Some(public.clone());
        }
        let summary = &self.krate["paths"][&key];
        let segments: Vec<&str> = summary["path"]
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        // A local item with no public path: named inside its crate.
        let skip = usize::from(summary["crate_id"] == 0 && segments.len() > 1);
        Some(segments[skip..].join("::"))
    }
}

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
    let names = Names {
        krate,
        public: canonical.clone().into_iter().collect(),
    };
    let lister = Lister {
        index: &krate["index"],
        names: &names,
    };
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

fn key(id: &Value) -> Option<String> {
    match id {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
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

/// Writes an item's lines.
struct Lister<'a> {
    index: &'a Value,
    names: &'a Names<'a>,
}

impl Lister<'_> {
    fn get(&self, id: &Value) -> &Value {
        &self.index[key(id).unwrap_or_default()]
    }

    fn item(&self, p: &str, item: &Value, is_canonical: bool, out: &mut BTreeSet<String>) {
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
            // Of the auto traits, only the stable ones are a promise
            // (`Freeze` and `UnsafeUnpin` cannot be named on stable).
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
