//! The driver against a list that outlives its continue token: paused
//! time, a client that pages a fixed set of objects and counts writes.

use super::*;
use crate::telemetry::Metrics;
use async_trait::async_trait;
use blue_kubernetes_client::{ApiResponse, ErrorKind};
use serde_json::json;
use std::sync::{Arc, Mutex};

const PAGE: usize = 3;

/// Seven objects, listed [`PAGE`] at a time; a continue token answers
/// `410 Gone` while `expire` says so (then stops expiring).
struct Pages {
    objects: Vec<Value>,
    expire: Mutex<u32>,
    written: Mutex<Vec<String>>,
}

impl Pages {
    fn new(expire: u32) -> Self {
        let objects = (0..7)
            .map(|i| {
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"namespace": "ns", "name": format!("w{i}"),
                                 "uid": format!("uid-{i}"), "resourceVersion": "1"}})
            })
            .collect();
        Self {
            objects,
            expire: Mutex::new(expire),
            written: Mutex::new(Vec::new()),
        }
    }

    fn page(&self, offset: usize) -> Value {
        let end = (offset + PAGE).min(self.objects.len());
        let remaining = self.objects.len() - end;
        let next = match remaining {
            0 => String::new(),
            _ => format!("at-{end}"),
        };
        json!({"metadata": {"continue": next, "remainingItemCount": remaining},
               "items": self.objects[offset..end]})
    }
}

#[async_trait]
impl Client for Pages {
    async fn list_resources(&self, _: &ResourceDescriptor, _: &str) -> Result<Vec<Value>, Error> {
        unreachable!("the migration lists page by page")
    }
    async fn get_resource(
        &self,
        _: &ResourceDescriptor,
        _: &str,
        _: &str,
    ) -> Result<Option<Value>, Error> {
        unreachable!("the migration reads through lists")
    }
    async fn update_status(
        &self,
        _: &ResourceDescriptor,
        _: &Value,
        _: &Value,
    ) -> Result<Value, Error> {
        unreachable!("the migration writes whole objects")
    }
    async fn update_finalizers(
        &self,
        _: &ResourceDescriptor,
        _: &Value,
        _: &[String],
    ) -> Result<Value, Error> {
        unreachable!("the migration writes whole objects")
    }
    async fn send_raw(&self, request: ApiRequest) -> Result<ApiResponse, Error> {
        let body = match request.method {
            Method::Get => {
                let path = request.path.as_str();
                let offset = match path.split_once("continue=at-") {
                    None => 0,
                    Some((_, at)) => {
                        let mut expire = self.expire.lock().unwrap();
                        if *expire > 0 {
                            *expire -= 1;
                            return Err(Error::Http {
                                method: "GET",
                                status: 410,
                                kind: ErrorKind::Gone,
                            });
                        }
                        at.split('&').next().unwrap().parse().unwrap()
                    }
                };
                self.page(offset)
            }
            Method::Put => {
                let mut object = request.body.unwrap();
                let name = object["metadata"]["name"].as_str().unwrap().to_owned();
                self.written.lock().unwrap().push(name);
                object["metadata"]["resourceVersion"] = json!("2");
                object
            }
            _ => unreachable!("a pass only lists and writes"),
        };
        Ok(ApiResponse {
            status: 200,
            body: Some(body),
        })
    }
}

fn mark() -> decision::Mark {
    decision::Mark {
        storage: "v1".into(),
        generation: 2,
        hash: "h".into(),
    }
}

/// One pass of the driver over `client`: its tally and the names written.
async fn pass_over(client: &Pages) -> (decision::Tally, Vec<String>) {
    let target = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    let clock: Clock = Arc::new(|| 0);
    let metrics = MigrationMetrics::new(&Metrics::new());
    let may_write = || true;
    let driver = Driver {
        client,
        target: &target,
        page_size: PAGE as u32,
        pace: Pace::new(50),
        clock: &clock,
        metrics: &metrics,
        may_write: &may_write,
    };
    let tally = match driver.pass(Pass::new(mark())).await {
        Ok(PassEnd::Finished(pass)) => pass.tally,
        _ => panic!("the pass did not finish"),
    };
    (tally, client.written.lock().unwrap().clone())
}

fn names(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("w{i}")).collect()
}

#[tokio::test(start_paused = true)]
async fn a_pass_writes_every_object_once_over_its_pages() {
    let (tally, written) = pass_over(&Pages::new(0)).await;
    assert_eq!(written, names(0..7));
    assert_eq!((tally.rewritten, tally.left), (7, 0));
}

#[tokio::test(start_paused = true)]
async fn an_expired_continue_token_lists_again_and_skips_what_the_pass_wrote() {
    // The first two continues expire: the pass lists from the start
    // twice, writes nothing twice, and still ends.
    let (tally, written) = pass_over(&Pages::new(2)).await;
    assert_eq!(written, names(0..7), "each object written exactly once");
    assert_eq!((tally.rewritten, tally.conflicts, tally.left), (7, 0, 0));
}
