//! The cluster-level calls of [`KubectlClient`]: discovery, access reviews
//! and Events, all through `kubectl get|create|replace --raw`.

use super::request::decode;
use crate::names::object_name;
use crate::{AccessCheck, ApiResource, Error, ErrorKind, KubectlClient, RequestParams};
use serde_json::Value;

const ACCESS_REVIEWS: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

/// The discovery path of a group/version.
pub(crate) fn discovery_path(group: &str, version: &str) -> String {
    match group {
        "" => format!("/api/{version}"),
        group => format!("/apis/{group}/{version}"),
    }
}

pub(crate) async fn server_resources(
    client: &KubectlClient,
    group: &str,
    version: &str,
) -> Result<Option<Vec<ApiResource>>, Error> {
    if !group.is_empty() {
        object_name(group, "group")?;
    }
    object_name(version, "version")?;
    let path = discovery_path(group, version);
    let list = match client
        .request(&["get", "--raw", &path], RequestParams::default())
        .await
    {
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        other => other?.into_json(),
    };
    let resources = list
        .and_then(|mut l| l.get_mut("resources").map(Value::take))
        .ok_or_else(|| decode("get"))?;
    serde_json::from_value(resources)
        .map(Some)
        .map_err(|_| decode("get"))
}

pub(crate) async fn can_i(client: &KubectlClient, check: &AccessCheck) -> Result<bool, Error> {
    let args = ["create", "--raw", ACCESS_REVIEWS, "-f", "-"];
    let options = RequestParams::default().with_input(check.review().to_string());
    let review = client
        .request(&args, options)
        .await?
        .into_json()
        .ok_or_else(|| decode("create"))?;
    review
        .pointer("/status/allowed")
        .and_then(Value::as_bool)
        .ok_or_else(|| decode("create"))
}

pub(crate) async fn create_event(
    client: &KubectlClient,
    namespace: &str,
    event: &Value,
) -> Result<Value, Error> {
    let path = format!("/api/v1/namespaces/{namespace}/events");
    write(client, "create", &path, event).await
}

pub(crate) async fn update_event(
    client: &KubectlClient,
    namespace: &str,
    name: &str,
    event: &Value,
) -> Result<Value, Error> {
    let path = format!("/api/v1/namespaces/{namespace}/events/{name}");
    write(client, "replace", &path, event).await
}

async fn write(
    client: &KubectlClient,
    verb: &str,
    path: &str,
    body: &Value,
) -> Result<Value, Error> {
    let options = RequestParams::default().with_input(body.to_string());
    client
        .request(&[verb, "--raw", path, "-f", "-"], options)
        .await?
        .into_json()
        .ok_or_else(|| decode(verb))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_core_group_is_discovered_under_api() {
        assert_eq!(discovery_path("", "v1"), "/api/v1");
        assert_eq!(discovery_path("example.com", "v1"), "/apis/example.com/v1");
    }
}
