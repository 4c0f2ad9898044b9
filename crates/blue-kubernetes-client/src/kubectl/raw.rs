//! [`RawApi`] for [`KubectlClient`]: raw requests as `kubectl --raw` runs.
//!
//! kubectl prints only the body, so a success reads as status 200 and a
//! failure is classified from kubectl's output like every other run.

use crate::{
    ApiPath, ApiRequest, ApiResponse, Error, KubectlClient, Method, PatchType, RawApi,
    RequestParams,
};

#[async_trait::async_trait]
impl RawApi for KubectlClient {
    /// `GET`: `get --raw PATH`; `POST`: `create --raw PATH -f BODY`; `PUT`:
    /// `replace --raw PATH -f BODY`; `DELETE`: `delete --raw PATH [-f BODY]`;
    /// `PATCH` (kubectl has no raw patch): `patch RESOURCE NAME [-n NS]
    /// [--subresource S] --type T -p BODY` for an object path.
    async fn send(&self, request: ApiRequest) -> Result<ApiResponse, Error> {
        let path = request.path.as_str();
        let body = request.body.as_ref().map(serde_json::Value::to_string);
        let mut args: Vec<String> = match (request.method, &body) {
            (Method::Get, _) => vec!["get".into(), "--raw".into(), path.into()],
            (Method::Post, _) => raw_with_input("create", path),
            (Method::Put, _) => raw_with_input("replace", path),
            (Method::Delete, None) => vec!["delete".into(), "--raw".into(), path.into()],
            (Method::Delete, Some(_)) => raw_with_input("delete", path),
            (Method::Patch(kind), Some(patch)) => patch_args(&request.path, kind, patch)?,
            (Method::Patch(_), None) => {
                return Err(Error::InvalidOption {
                    field: "body",
                    reason: "a patch needs a body",
                })
            }
        };
        let mut options = RequestParams::default();
        if let Some(timeout) = request.timeout {
            options =
                options.with_timeout_ms(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX));
        }
        if matches!(request.method, Method::Post | Method::Put)
            || (request.method == Method::Delete && body.is_some())
        {
            options = options.with_input(body.unwrap_or_else(|| "{}".into()));
        }
        if matches!(request.method, Method::Patch(_)) {
            args.extend(["-o".into(), "json".into()]);
        }
        let response = self.request(&args, options).await?;
        Ok(ApiResponse {
            status: 200,
            body: response.into_json(),
        })
    }
}

fn raw_with_input(verb: &str, path: &str) -> Vec<String> {
    [verb, "--raw", path, "-f", "-"].map(str::to_owned).to_vec()
}

/// `patch` arguments for `/api/v1/[namespaces/NS/]PLURAL/NAME[/SUB]` or
/// `/apis/G/V/[namespaces/NS/]PLURAL/NAME[/SUB]`.
fn patch_args(path: &ApiPath, kind: PatchType, patch: &str) -> Result<Vec<String>, Error> {
    let segments: Vec<&str> = path.as_str().trim_start_matches('/').split('/').collect();
    let (resource_prefix, rest) = match segments.as_slice() {
        ["api", "v1", rest @ ..] => (None, rest),
        ["apis", group, version, rest @ ..] => (Some((*group, *version)), rest),
        _ => return Err(not_an_object()),
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(*ns), rest),
        _ => (None, rest),
    };
    let (plural, name, subresource) = match rest {
        [plural, name] => (*plural, *name, None),
        [plural, name, sub] => (*plural, *name, Some(*sub)),
        _ => return Err(not_an_object()),
    };
    let resource = match resource_prefix {
        Some((group, version)) => format!("{plural}.{version}.{group}"),
        None => plural.to_owned(),
    };
    let mut args = vec!["patch".to_owned(), resource, name.to_owned()];
    if let Some(ns) = namespace {
        args.extend(["-n".to_owned(), ns.to_owned()]);
    }
    if let Some(sub) = subresource {
        args.push(format!("--subresource={sub}"));
    }
    let kind = match kind {
        PatchType::Merge => "merge",
        PatchType::Json => "json",
        PatchType::Strategic => "strategic",
        // kubectl has no raw server-side apply.
        PatchType::Apply => {
            return Err(Error::Unsupported {
                operation: "apply patch",
            })
        }
    };
    args.extend([format!("--type={kind}"), "-p".to_owned(), patch.to_owned()]);
    Ok(args)
}

fn not_an_object() -> Error {
    Error::InvalidOption {
        field: "path",
        reason: "kubectl can only patch an object path (.../PLURAL/NAME[/SUBRESOURCE])",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_paths_become_kubectl_patch_arguments() {
        let p = ApiPath::parse("/apis/coordination.k8s.io/v1/namespaces/ops/leases/op").unwrap();
        assert_eq!(
            patch_args(&p, PatchType::Merge, "{}").unwrap(),
            [
                "patch",
                "leases.v1.coordination.k8s.io",
                "op",
                "-n",
                "ops",
                "--type=merge",
                "-p",
                "{}"
            ]
        );
        let p = ApiPath::parse("/api/v1/namespaces/dev/configmaps/app").unwrap();
        assert_eq!(
            patch_args(&p, PatchType::Json, "[]").unwrap()[..4],
            ["patch", "configmaps", "app", "-n"]
        );
        let p = ApiPath::parse("/apis/g/v1/namespaces/dev/ws/w/status").unwrap();
        assert!(patch_args(&p, PatchType::Merge, "{}")
            .unwrap()
            .contains(&"--subresource=status".to_owned()));
        let list = ApiPath::parse("/api/v1/namespaces/dev/configmaps").unwrap();
        assert!(patch_args(&list, PatchType::Merge, "{}").is_err());
        let apply = patch_args(&p, PatchType::Apply, "{}").unwrap_err();
        assert!(matches!(apply, Error::Unsupported { .. }), "{apply}");
    }
}
