//! Reading a whole list page by page, as the API server hands it out.

use crate::{Client, Error, ErrorKind, ResourceDescriptor};
use crate::{ListPage, PageRequest};
use serde_json::Value;

/// How often a list starts over from the first page when a continue token
/// expires mid-list (the API server keeps tokens about five minutes, so a
/// second expiry means the list cannot be read this way at all).
const RESTARTS: u32 = 1;

/// Every object of `descriptor` in `namespace`, read in pages of `limit`
/// through [`Client::list_page`]. A continue token that expired restarts the
/// list from the first page once; a second expiry is returned as
/// [`ErrorKind::Gone`].
pub(crate) async fn list_all<C: Client + ?Sized>(
    client: &C,
    descriptor: &ResourceDescriptor,
    namespace: &str,
    limit: u32,
) -> Result<Vec<Value>, Error> {
    let mut restarts = 0;
    'list: loop {
        let mut items = Vec::new();
        let mut request = PageRequest::first(limit);
        loop {
            let page = match client.list_page(descriptor, namespace, &request).await {
                Ok(page) => page,
                Err(e)
                    if e.kind() == ErrorKind::Gone
                        && request.continue_token.is_some()
                        && restarts < RESTARTS =>
                {
                    restarts += 1;
                    continue 'list;
                }
                Err(e) => return Err(e),
            };
            let ListPage {
                items: page_items,
                continue_token,
                ..
            } = page;
            items.extend(page_items);
            match continue_token {
                Some(token) => request.continue_token = Some(token),
                None => return Ok(items),
            }
        }
    }
}

/// One page of a list answer: its `items`, `metadata.resourceVersion` and
/// `metadata.continue` (empty means the last page); `None` when the answer
/// is not a list.
pub(crate) fn page_of(list: Option<Value>) -> Option<ListPage> {
    let mut list = match list? {
        Value::Object(list) => list,
        _ => return None,
    };
    let metadata = list.remove("metadata");
    let text = |key: &str| {
        metadata
            .as_ref()
            .and_then(|m| m.get(key))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let items = match list.remove("items")? {
        Value::Array(items) => items,
        // The API server encodes an empty list's items as null.
        Value::Null => Vec::new(),
        _ => return None,
    };
    Some(ListPage {
        items,
        resource_version: text("resourceVersion"),
        continue_token: text("continue"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_empty_continue_token_means_the_last_page() {
        let list =
            json!({"items": [{"a": 1}], "metadata": {"resourceVersion": "7", "continue": ""}});
        let page = page_of(Some(list)).unwrap();
        assert_eq!(page.items.len(), 1);
        assert_eq!(page.resource_version.as_deref(), Some("7"));
        assert_eq!(page.continue_token, None);
        let more = json!({"items": null, "metadata": {"resourceVersion": "8", "continue": "t"}});
        let page = page_of(Some(more)).unwrap();
        assert!(page.items.is_empty());
        assert_eq!(page.continue_token.as_deref(), Some("t"));
    }

    #[test]
    fn an_answer_that_is_not_a_list_has_no_page() {
        assert_eq!(page_of(None), None);
        assert_eq!(page_of(Some(json!({"kind": "Widget"}))), None);
        assert_eq!(page_of(Some(json!({"items": {}}))), None);
        assert_eq!(page_of(Some(json!([1]))), None);
    }
}
