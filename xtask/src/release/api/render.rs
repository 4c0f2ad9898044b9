//! Rust syntax for the types, bounds and generics of rustdoc's JSON.
//!
//! The JSON is read generically (`serde_json::Value`), so no rustdoc-types
//! version has to match the toolchain. A shape this file does not know is
//! written as its JSON with the (per-build) ids removed: still a stable
//! line that changes when the API changes, only less readable.

use serde_json::Value;

use super::names::Names;

/// A type (`Type` in rustdoc's JSON).
pub fn ty(names: &Names, t: &Value) -> String {
    if let Some(s) = t.as_str() {
        return match s {
            "infer" => "_".into(),
            other => other.into(),
        };
    }
    let Some((kind, v)) = t.as_object().and_then(|o| o.iter().next()) else {
        return unknown(t);
    };
    match kind.as_str() {
        "resolved_path" => path(names, v),
        "generic" | "primitive" => v.as_str().unwrap_or_default().into(),
        "tuple" => format!("({})", list(names, v, ty)),
        "slice" => format!("[{}]", ty(names, v)),
        "array" => format!("[{}; {}]", ty(names, &v["type"]), str_of(&v["len"])),
        "borrowed_ref" => {
            let lifetime = v["lifetime"].as_str().map(|l| format!("{l} "));
            let mutable = if v["is_mutable"] == true { "mut " } else { "" };
            let inner = ty(names, &v["type"]);
            format!("&{}{mutable}{inner}", lifetime.unwrap_or_default())
        }
        "raw_pointer" => {
            let mutability = if v["is_mutable"] == true {
                "mut"
            } else {
                "const"
            };
            format!("*{mutability} {}", ty(names, &v["type"]))
        }
        "impl_trait" => format!("impl {}", bounds(names, v)),
        "dyn_trait" => {
            let mut parts: Vec<String> = v["traits"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| for_lifetimes(names, &p["generic_params"]) + &path(names, &p["trait"]))
                .collect();
            parts.extend(v["lifetime"].as_str().map(String::from));
            format!("dyn {}", parts.join(" + "))
        }
        "function_pointer" => {
            let header = header(&v["header"]);
            let sig = &v["sig"];
            let inputs = sig["inputs"].as_array().into_iter().flatten();
            let inputs: Vec<String> = inputs.map(|i| ty(names, &i[1])).collect();
            let prefix = for_lifetimes(names, &v["generic_params"]);
            format!(
                "{prefix}{header}fn({}){}",
                inputs.join(", "),
                output(names, &sig["output"])
            )
        }
        "qualified_path" => {
            let self_type = ty(names, &v["self_type"]);
            let assoc = format!("{}{}", str_of(&v["name"]), args(names, &v["args"]));
            match v.get("trait").filter(|t| !t.is_null()) {
                Some(t) => format!("<{self_type} as {}>::{assoc}", path(names, t)),
                None => format!("{self_type}::{assoc}"),
            }
        }
        _ => unknown(t),
    }
}

/// A path with its generic arguments (`Path`): a local item by its public
/// path, an external one by its defining crate's path.
pub fn path(names: &Names, p: &Value) -> String {
    let written = p["path"]
        .as_str()
        .or(p["name"].as_str())
        .unwrap_or_default();
    let name = names.of(&p["id"]).unwrap_or_else(|| written.to_string());
    format!("{name}{}", args(names, &p["args"]))
}

/// `<A, B, Item = C>` or `(A) -> B`; empty when there are none.
pub fn args(names: &Names, a: &Value) -> String {
    if let Some(angle) = a.get("angle_bracketed") {
        let mut parts: Vec<String> = angle["args"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|g| generic_arg(names, g))
            .collect();
        let constraints = angle.get("constraints").or(angle.get("bindings"));
        for c in constraints.and_then(Value::as_array).into_iter().flatten() {
            parts.push(constraint(names, c));
        }
        return if parts.is_empty() {
            String::new()
        } else {
            format!("<{}>", parts.join(", "))
        };
    }
    if let Some(paren) = a.get("parenthesized") {
        return format!(
            "({}){}",
            list(names, &paren["inputs"], ty),
            output(names, &paren["output"])
        );
    }
    match a.as_str() {
        Some(other) => format!("<{other}>"),
        None if a.is_null() => String::new(),
        None => unknown(a),
    }
}

fn generic_arg(names: &Names, g: &Value) -> String {
    if let Some(l) = g.get("lifetime") {
        return str_of(l);
    }
    if let Some(t) = g.get("type") {
        return ty(names, t);
    }
    if let Some(c) = g.get("const") {
        return str_of(&c["expr"]);
    }
    if g == "infer" {
        return "_".into();
    }
    unknown(g)
}

fn constraint(names: &Names, c: &Value) -> String {
    let name = format!("{}{}", str_of(&c["name"]), args(names, &c["args"]));
    let binding = &c["binding"];
    if let Some(eq) = binding.get("equality") {
        let value = eq.get("type").map_or_else(|| unknown(eq), |t| ty(names, t));
        return format!("{name} = {value}");
    }
    if let Some(b) = binding.get("constraint") {
        return format!("{name}: {}", bounds(names, b));
    }
    unknown(c)
}

/// Bounds joined with ` + `.
pub fn bounds(names: &Names, b: &Value) -> String {
    let parts = b.as_array().into_iter().flatten().map(|b| bound(names, b));
    parts.collect::<Vec<_>>().join(" + ")
}

fn bound(names: &Names, b: &Value) -> String {
    if let Some(t) = b.get("trait_bound") {
        let modifier = match t["modifier"].as_str() {
            Some("maybe") => "?",
            Some("maybe_const") => "~const ",
            _ => "",
        };
        let hrtb = for_lifetimes(names, &t["generic_params"]);
        return format!("{hrtb}{modifier}{}", path(names, &t["trait"]));
    }
    if let Some(l) = b.get("outlives") {
        return str_of(l);
    }
    if let Some(u) = b.get("use") {
        let captured = u.as_array().into_iter().flatten().map(|c| {
            c.as_str().map(String::from).unwrap_or_else(|| {
                let inner = c.as_object().and_then(|o| o.values().next());
                inner.map_or_else(|| unknown(c), str_of)
            })
        });
        return format!("use<{}>", captured.collect::<Vec<_>>().join(", "));
    }
    unknown(b)
}

/// `<'a, T: Bound = Default, const N: usize>`; synthetic parameters (an
/// argument's `impl Trait`) are left out, the argument shows them.
pub fn params(names: &Names, generics: &Value) -> String {
    let parts: Vec<String> = generics["params"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| param(names, p))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("<{}>", parts.join(", "))
    }
}

fn param(names: &Names, p: &Value) -> Option<String> {
    let name = str_of(&p["name"]);
    let kind = &p["kind"];
    if let Some(l) = kind.get("lifetime") {
        let outlives: Vec<String> = l["outlives"]
            .as_array()
            .into_iter()
            .flatten()
            .map(str_of)
            .collect();
        return Some(if outlives.is_empty() {
            name
        } else {
            format!("{name}: {}", outlives.join(" + "))
        });
    }
    if let Some(t) = kind.get("type") {
        if t["is_synthetic"] == true {
            return None;
        }
        let mut s = name;
        let b = bounds(names, &t["bounds"]);
        if !b.is_empty() {
            s = format!("{s}: {b}");
        }
        if !t["default"].is_null() {
            s = format!("{s} = {}", ty(names, &t["default"]));
        }
        return Some(s);
    }
    if let Some(c) = kind.get("const") {
        let default = c["default"].as_str().map(|d| format!(" = {d}"));
        return Some(format!(
            "const {name}: {}{}",
            ty(names, &c["type"]),
            default.unwrap_or_default()
        ));
    }
    Some(unknown(p))
}

/// ` where A: B, 'a: 'b`; empty when there are none.
pub fn where_clause(names: &Names, generics: &Value) -> String {
    let predicates = generics["where_predicates"]
        .as_array()
        .into_iter()
        .flatten();
    let parts: Vec<String> = predicates.map(|w| predicate(names, w)).collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" where {}", parts.join(", "))
    }
}

fn predicate(names: &Names, w: &Value) -> String {
    if let Some(b) = w.get("bound_predicate") {
        let hrtb = for_lifetimes(names, &b["generic_params"]);
        return format!(
            "{hrtb}{}: {}",
            ty(names, &b["type"]),
            bounds(names, &b["bounds"])
        );
    }
    if let Some(l) = w.get("lifetime_predicate") {
        let outlives: Vec<String> = l["outlives"]
            .as_array()
            .into_iter()
            .flatten()
            .map(str_of)
            .collect();
        return format!("{}: {}", str_of(&l["lifetime"]), outlives.join(" + "));
    }
    if let Some(e) = w.get("eq_predicate") {
        let rhs = e["rhs"]
            .get("type")
            .map_or_else(|| unknown(&e["rhs"]), |t| ty(names, t));
        return format!("{} = {rhs}", ty(names, &e["lhs"]));
    }
    unknown(w)
}

/// `for<'a> ` of a higher-ranked bound; empty when there is none.
fn for_lifetimes(names: &Names, generic_params: &Value) -> String {
    let p = params(names, &serde_json::json!({ "params": generic_params }));
    if p.is_empty() {
        p
    } else {
        format!("for{p} ")
    }
}

/// `const async unsafe extern "C" ` of a function's header.
pub fn header(h: &Value) -> String {
    let mut s = String::new();
    for (flag, word) in [
        ("is_const", "const "),
        ("is_async", "async "),
        ("is_unsafe", "unsafe "),
    ] {
        if h[flag] == true {
            s.push_str(word);
        }
    }
    match &h["abi"] {
        Value::String(abi) if abi == "Rust" => {}
        Value::Null => {}
        abi => s.push_str(&format!("extern {} ", unknown(abi))),
    }
    s
}

/// A function's signature after its name: `<T>(&self, T) -> U where ..`.
/// Parameter names are left out (renaming one breaks no caller); `self`
/// is written as Rust writes it.
pub fn signature(names: &Names, function: &Value) -> String {
    let sig = function
        .get("sig")
        .or(function.get("decl"))
        .unwrap_or(&Value::Null);
    let inputs: Vec<String> = sig["inputs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|input| match (input[0].as_str(), &input[1]) {
            (Some("self"), t) => self_param(names, t),
            (_, t) => ty(names, t),
        })
        .collect();
    let generics = &function["generics"];
    format!(
        "{}({}){}{}",
        params(names, generics),
        inputs.join(", "),
        output(names, &sig["output"]),
        where_clause(names, generics)
    )
}

fn self_param(names: &Names, t: &Value) -> String {
    if t.get("generic").is_some_and(|g| g == "Self") {
        return "self".into();
    }
    if let Some(r) = t.get("borrowed_ref") {
        if r["type"].get("generic").is_some_and(|g| g == "Self") {
            let lifetime = r["lifetime"].as_str().map(|l| format!("{l} "));
            let mutable = if r["is_mutable"] == true { "mut " } else { "" };
            return format!("&{}{mutable}self", lifetime.unwrap_or_default());
        }
    }
    format!("self: {}", ty(names, t))
}

fn output(names: &Names, o: &Value) -> String {
    if o.is_null() {
        String::new()
    } else {
        format!(" -> {}", ty(names, o))
    }
}

fn list(names: &Names, v: &Value, each: fn(&Names, &Value) -> String) -> String {
    let parts = v.as_array().into_iter().flatten().map(|x| each(names, x));
    parts.collect::<Vec<_>>().join(", ")
}

fn str_of(v: &Value) -> String {
    v.as_str().map_or_else(|| unknown(v), String::from)
}

/// A shape this file does not know: its JSON without the per-build ids.
pub fn unknown(v: &Value) -> String {
    fn strip(v: &Value) -> Value {
        match v {
            Value::Object(o) => o
                .iter()
                .filter(|(k, _)| k.as_str() != "id")
                .map(|(k, v)| (k.clone(), strip(v)))
                .collect(),
            Value::Array(a) => a.iter().map(strip).collect(),
            other => other.clone(),
        }
    }
    strip(v).to_string()
}
