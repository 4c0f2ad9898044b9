//! How items are named in the listing: local items by their shortest
//! public path, external ones by their defining crate's path; and the key
//! of an item id in rustdoc's index.

use std::collections::HashMap;

use serde_json::Value;

/// How local items are named in signatures: by their shortest public path
/// (stable when an item moves between private modules); external items
/// by their defining crate's path.
pub struct Names<'a> {
    krate: &'a Value,
    public: HashMap<String, String>,
}

impl<'a> Names<'a> {
    /// Names in `krate` (rustdoc's JSON), local items by the paths in
    /// `public` (item id to its shortest public path).
    pub fn new(krate: &'a Value, public: HashMap<String, String>) -> Self {
        Self { krate, public }
    }

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

/// The key of `id` in rustdoc's index (ids are numbers or strings).
pub fn key(id: &Value) -> Option<String> {
    match id {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}
