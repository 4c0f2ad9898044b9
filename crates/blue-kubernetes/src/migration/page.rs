//! One page of the kind's list, and where each object on it is written.

use super::decision::Listed;
use blue_kubernetes_client::{ApiPath, Error, ResourceDescriptor};
use serde_json::Value;

/// One page of a list answer.
pub(crate) struct Page {
    pub(crate) items: Vec<Value>,
    pub(crate) continue_token: Option<String>,
    remaining: Option<u64>,
}

impl Page {
    pub(crate) fn of(mut list: Value) -> Self {
        let metadata = list["metadata"].take();
        let items = match list["items"].take() {
            Value::Array(items) => items,
            _ => Vec::new(),
        };
        let continue_token = metadata["continue"]
            .as_str()
            .filter(|t| !t.is_empty())
            .map(str::to_owned);
        Self {
            items,
            continue_token,
            remaining: metadata["remainingItemCount"].as_u64(),
        }
    }

    pub(crate) fn listed(&self) -> Listed {
        Listed::Page {
            items: self.items.len() as u64,
            remaining: self.remaining,
        }
    }
}

/// `namespace/name` (or `name`) of a listed object, for errors and logs.
pub(crate) fn object_name(item: &Value) -> String {
    let name = item["metadata"]["name"].as_str().unwrap_or_default();
    match item["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_owned(),
    }
}

/// The path of a listed object at the target's version.
pub(crate) fn object_path(t: &ResourceDescriptor, item: &Value) -> Result<ApiPath, Error> {
    let name = item["metadata"]["name"].as_str().unwrap_or_default();
    match item["metadata"]["namespace"].as_str() {
        Some(ns) => ApiPath::namespaced(&t.group, &t.version, ns, &t.plural, Some(name), None),
        None => ApiPath::cluster(&t.group, &t.version, &t.plural, Some(name), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_page_says_how_many_remain_and_where_the_next_starts() {
        let list = json!({
            "metadata": {"continue": "t2", "remainingItemCount": 7},
            "items": [{"metadata": {"name": "a", "namespace": "dev"}}, {"metadata": {"name": "r"}}],
        });
        let page = Page::of(list);
        assert_eq!(page.continue_token.as_deref(), Some("t2"));
        assert_eq!(
            page.listed(),
            Listed::Page {
                items: 2,
                remaining: Some(7)
            }
        );
        let last = Page::of(json!({"metadata": {"continue": ""}, "items": null}));
        assert_eq!(
            (last.continue_token.clone(), last.listed()),
            (
                None,
                Listed::Page {
                    items: 0,
                    remaining: None
                }
            )
        );
        let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
        let at = |item: &Value| object_path(&widgets, item).unwrap().as_str().to_owned();
        assert_eq!(
            at(&page.items[0]),
            "/apis/example.com/v1/namespaces/dev/widgets/a"
        );
        assert_eq!(at(&page.items[1]), "/apis/example.com/v1/widgets/r");
        assert_eq!(object_name(&page.items[0]), "dev/a");
        assert!(object_path(&widgets, &json!({"metadata": {"name": "../x"}})).is_err());
    }
}
