//! The harness around a measured operator: creating `LocalConfigMap`s in
//! bulk, counting Ready ones, timing reactions to edits, creates and
//! deletes. It talks through its own `ProxyClient`, so watching costs the
//! measured operator nothing.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use blue_kubernetes_client::{
    proxy_client, ApiPath, ApiRequest, Client, ErrorKind, Method, PageRequest, PatchType,
    ProxyClient, ProxyConfig, RawApi, ResourceDescriptor,
};
use serde_json::{json, Value};

use crate::api_server::ApiServer;
use crate::changes::{named, Changes};
use crate::contender::Contender;
use crate::measure::median;
use crate::resource::{descriptor, is_ready, name, ready_for, Spec, GROUP, PLURAL, VERSION};
use blue_testbed::support::wait::poll;
use blue_testbed::world::operator::Operator;

/// Requests in flight while creating in bulk: enough to keep the API
/// server busy on two cores, few enough not to trip its rate limits.
const CREATE_CONCURRENCY: usize = 16;

/// Items per page when the harness lists.
const LIST_PAGE: u32 = 500;

/// How long one reaction may take before the run fails.
const REACTION_TIMEOUT: Duration = Duration::from_secs(300);

/// The time from a change until the operator showed it.
#[derive(Clone, Copy, Debug)]
pub struct Reaction {
    /// Until the resource reads Ready for the new generation.
    pub ready: f64,
    /// Until the owned ConfigMap holds the new data.
    pub config_map: f64,
}

/// Destroy deletions of a whole namespace, in seconds.
pub struct Deletions {
    /// From the first resource shown deleting to the last shown gone.
    pub total: f64,
    /// The harness's own DELETE requests, sent one after another: the API
    /// server answers them slower the more the operator writes meanwhile.
    pub sent: f64,
    /// One resource from shown deleting to shown gone, the median.
    pub each: f64,
}

pub struct Harness<'a> {
    pub rt: &'a tokio::runtime::Runtime,
    pub server: &'a ApiServer,
    pub client: Arc<ProxyClient>,
    pub work: &'a Path,
}

impl<'a> Harness<'a> {
    pub fn new(
        rt: &'a tokio::runtime::Runtime,
        server: &'a ApiServer,
        work: &'a Path,
    ) -> Result<Self> {
        // The local 1.20 server knows no CEL rules.
        let crd = local_configmap_operator::cli::runner().crd_yaml(false)?;
        server.kube.apply_crd(&crd, &format!("{PLURAL}.{GROUP}"))?;
        let client = Arc::new(proxy_client(ProxyConfig::new(server.kubectl_options()))?);
        rt.block_on(client.start())?;
        Ok(Self {
            rt,
            server,
            client,
            work,
        })
    }

    fn send(&self, request: ApiRequest) -> Result<Value> {
        Ok(self
            .rt
            .block_on(self.client.send(request))?
            .body
            .unwrap_or(Value::Null))
    }

    /// The LocalConfigMaps of `namespace`, or the one called `name`.
    fn path(namespace: &str, name: Option<&str>) -> Result<ApiPath> {
        Ok(ApiPath::namespaced(
            GROUP, VERSION, namespace, PLURAL, name, None,
        )?)
    }

    /// A new namespace holding `n` LocalConfigMaps `r-00000`... with
    /// `spec`, created [`CREATE_CONCURRENCY`] at a time through the
    /// harness's proxy, so 10,000 take seconds, not the minutes one kubectl
    /// call each would.
    pub fn populate_with(&self, namespace: &str, n: usize, spec: Spec) -> Result<()> {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
        self.send(
            ApiRequest::new(Method::Post, ApiPath::parse("/api/v1/namespaces")?).with_body(ns),
        )?;
        self.create(namespace, 0..n, spec)
    }

    /// Creates `r-<i>` for `i` in `range` in the existing `namespace`, like
    /// [`Harness::populate_with`].
    pub fn create(&self, namespace: &str, range: Range<usize>, spec: Spec) -> Result<()> {
        let collection = Self::path(namespace, None)?;
        let creates = range.map(|i| {
            ApiRequest::new(Method::Post, collection.clone()).with_body(spec.body(&name(i), "0"))
        });
        self.send_all(creates.collect(), false)
    }

    /// Sets the data of `r-<i>` for `i` in `range` to `value` (a new
    /// generation each), many at a time.
    pub fn edit(&self, namespace: &str, range: Range<usize>, value: &str) -> Result<()> {
        let patch = json!({"spec": {"config": {"data": {"v": value}}}});
        let edits = range.map(|i| {
            let path = Self::path(namespace, Some(&name(i)))?;
            let edit = ApiRequest::new(Method::Patch(PatchType::Merge), path);
            Ok(edit.with_body(patch.clone()))
        });
        self.send_all(edits.collect::<Result<_>>()?, false)
    }

    /// Sends `requests`, [`CREATE_CONCURRENCY`] at a time; with
    /// `missing_ok`, a NotFound answer is no failure.
    fn send_all(&self, requests: Vec<ApiRequest>, missing_ok: bool) -> Result<()> {
        let requests = Arc::new(requests);
        let tasks: Vec<_> = (0..CREATE_CONCURRENCY)
            .map(|lane| {
                let (client, requests) = (self.client.clone(), requests.clone());
                self.rt.spawn(async move {
                    for request in requests.iter().skip(lane).step_by(CREATE_CONCURRENCY) {
                        match client.send(request.clone()).await {
                            Err(e) if !(missing_ok && e.kind() == ErrorKind::NotFound) => {
                                return Err(e)
                            }
                            _ => {}
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        for task in tasks {
            self.rt
                .block_on(task)
                .context("a request task panicked")??;
        }
        Ok(())
    }

    /// The resources of `namespace`, read in pages: one list of 10,000
    /// takes the API server longer than a request may while an operator
    /// keeps it busy.
    fn list(&self, namespace: &str) -> Result<Vec<Value>> {
        let mut page = PageRequest::first(LIST_PAGE);
        let mut items = Vec::new();
        loop {
            let got = self
                .rt
                .block_on(self.client.list_page(&descriptor(), namespace, &page))?;
            items.extend(got.items);
            match got.continue_token {
                Some(token) => page.continue_token = Some(token),
                None => return Ok(items),
            }
        }
    }

    /// Resources of `namespace` Ready for their current generation.
    pub fn ready(&self, namespace: &str) -> Result<usize> {
        Ok(self.list(namespace)?.iter().filter(|r| is_ready(r)).count())
    }

    /// Lists until `n` are Ready; returns the time it took. Every 50 ms for
    /// small counts; large lists are spaced out, as each one costs the API
    /// server (and so the operator being timed) real CPU.
    pub fn wait_ready(&self, namespace: &str, n: usize, timeout: Duration) -> Result<Duration> {
        let every = Duration::from_millis(match n {
            0..=200 => 50,
            201..=2_000 => 500,
            _ => 2_000,
        });
        let started = Instant::now();
        poll(&format!("{n} Ready in {namespace}"), timeout, every, || {
            let ready = self.ready(namespace)?;
            ensure!(ready >= n, "{ready} Ready");
            Ok(started.elapsed())
        })
    }

    /// Edits `name`'s data (a new generation); times, from the harness's
    /// watch event of the edit, until the watch shows it Ready for that
    /// generation and until the ConfigMap watch shows the new data.
    pub fn edit_reaction(&self, namespace: &str, name: &str, value: &str) -> Result<Reaction> {
        let (mut resources, mut config_maps) = self.watch_both(namespace)?;
        let path = Self::path(namespace, Some(name))?;
        let patch = json!({"spec": {"config": {"data": {"v": value}}}});
        let edited =
            self.send(ApiRequest::new(Method::Patch(PatchType::Merge), path).with_body(patch))?;
        let generation = edited["metadata"]["generation"].as_i64();
        let never = format!("the watch never showed {name}'s edit");
        let edit = resources.until(&never, |r| {
            named(r, name) && r["metadata"]["generation"].as_i64() >= generation
        })?;
        let never = format!("{name} never Ready for its edit");
        let ready = resources.until(&never, |r| named(r, name) && ready_for(r, generation))?;
        let never = format!("the ConfigMap of {name} never held the edit");
        let config_map =
            config_maps.until(&never, |cm| named(cm, name) && cm["data"]["v"] == value)?;
        Ok(Reaction {
            ready: ready.saturating_duration_since(edit).as_secs_f64(),
            config_map: config_map.saturating_duration_since(edit).as_secs_f64(),
        })
    }

    /// Deletes `name`'s ConfigMap; times, from the ConfigMap watch's
    /// deletion event, until it shows the ConfigMap created again.
    pub fn restore_reaction(&self, namespace: &str, name: &str) -> Result<f64> {
        let (_, mut config_maps) = self.watch_both(namespace)?;
        let path = ApiPath::namespaced("", "v1", namespace, "configmaps", Some(name), None)?;
        self.send(ApiRequest::new(Method::Delete, path))?;
        let never = format!("the watch never showed {name}'s ConfigMap deleted");
        let deleted = config_maps.until_deleted(&never, name)?;
        let never = format!("{name}'s ConfigMap never came back");
        let created = config_maps.until(&never, |cm| named(cm, name))?;
        Ok(created.saturating_duration_since(deleted).as_secs_f64())
    }

    /// Watches of the resources and of the ConfigMaps of `namespace`.
    fn watch_both(&self, namespace: &str) -> Result<(Changes, Changes)> {
        let config_maps = ResourceDescriptor::new("", "v1", "configmaps", "ConfigMap");
        let open = |d| Changes::open(self.rt, &self.client, d, namespace, REACTION_TIMEOUT);
        Ok((open(&descriptor())?, open(&config_maps)?))
    }

    /// Creates `name` with `spec`; times, from the harness's watch event of
    /// the create, until the watch shows it Ready.
    pub fn create_reaction(&self, namespace: &str, name: &str, spec: Spec) -> Result<f64> {
        let (mut resources, _) = self.watch_both(namespace)?;
        let body = spec.body(name, "0");
        self.send(ApiRequest::new(Method::Post, Self::path(namespace, None)?).with_body(body))?;
        let never = format!("the watch never showed {name} created");
        let created = resources.until(&never, |r| named(r, name))?;
        let never = format!("{name} never Ready");
        let ready = resources.until(&never, |r| named(r, name) && ready_for(r, Some(1)))?;
        Ok(ready.saturating_duration_since(created).as_secs_f64())
    }

    /// Creates `r-0`..`r-<n>` at once in `namespace`, where an operator
    /// is already watching; times, from the watch event of the first
    /// create, until the watch has shown every one Ready.
    pub fn burst_ready(&self, namespace: &str, n: usize, spec: Spec) -> Result<f64> {
        let mut resources = self.watch(namespace)?;
        self.create(namespace, 0..n, spec)?;
        let burst = |r: &Value| {
            r["metadata"]["name"]
                .as_str()
                .is_some_and(|s| s.starts_with("r-"))
        };
        let first = resources.until("the watch never showed a create", burst)?;
        let ready = RefCell::new(BTreeSet::new());
        let last = resources.until(&format!("{n} never Ready in {namespace}"), |r| {
            if burst(r) && ready_for(r, Some(1)) {
                ready.borrow_mut().insert(r["metadata"]["name"].to_string());
            }
            ready.borrow().len() >= n
        })?;
        Ok(last.saturating_duration_since(first).as_secs_f64())
    }

    /// Deletes every resource of `namespace`; times, from the watch event
    /// of the first deletion request, until the watch has shown the last
    /// one gone (its finalizer released, i.e. its Destroy finished).
    pub fn delete_all(&self, namespace: &str, n: usize) -> Result<Deletions> {
        let names: Vec<String> = (0..n).map(name).collect();
        self.delete_named(namespace, &names)
    }

    /// Deletes the resources `names` of `namespace` (others stay), timed
    /// as [`delete_all`](Self::delete_all) times them.
    pub fn delete_named(&self, namespace: &str, names: &[String]) -> Result<Deletions> {
        let n = names.len();
        let mut resources = self.watch(namespace)?;
        let sending = Instant::now();
        for name in names {
            let path = Self::path(namespace, Some(name))?;
            self.send(ApiRequest::new(Method::Delete, path))?;
        }
        let sent = sending.elapsed().as_secs_f64();
        // Each resource from the event that shows it deleting to the one
        // that shows it gone.
        let mut marked: HashMap<String, Instant> = HashMap::new();
        let mut each = Vec::new();
        let last = resources.until_seen(
            &format!("{n} never gone in {namespace}"),
            |at, deleted, r| {
                let name = r["metadata"]["name"].as_str().unwrap_or_default();
                if !names.iter().any(|n| n == name) {
                    return false;
                }
                if deleted {
                    let since = marked.get(name).copied().unwrap_or(at);
                    each.push(at.saturating_duration_since(since).as_secs_f64());
                } else if !r["metadata"]["deletionTimestamp"].is_null() {
                    marked.entry(name.to_string()).or_insert(at);
                }
                each.len() >= n
            },
        )?;
        let first = marked.values().min().copied().unwrap_or(last);
        Ok(Deletions {
            total: last.saturating_duration_since(first).as_secs_f64(),
            sent,
            each: median(&each),
        })
    }

    /// A watch of the resources of `namespace`, from now.
    fn watch(&self, namespace: &str) -> Result<Changes> {
        Changes::open(
            self.rt,
            &self.client,
            &descriptor(),
            namespace,
            REACTION_TIMEOUT,
        )
    }

    /// Removes every LocalConfigMap, ConfigMap and Event of `namespace`
    /// with no operator running: finalizers stripped (no namespace
    /// controller runs to do it), then each object deleted, many at a time
    /// (the API server deletes a collection one object after another).
    pub fn discard(&self, namespace: &str) -> Result<()> {
        let mut strips = Vec::new();
        let mut deletes = Vec::new();
        for r in &self.list(namespace)? {
            let name = r["metadata"]["name"]
                .as_str()
                .context("a nameless resource")?;
            let path = Self::path(namespace, Some(name))?;
            if r["metadata"]["finalizers"]
                .as_array()
                .is_some_and(|f| !f.is_empty())
            {
                let strip = json!({"metadata": {"finalizers": null}});
                strips.push(
                    ApiRequest::new(Method::Patch(PatchType::Merge), path.clone()).with_body(strip),
                );
            }
            let config_map =
                ApiPath::namespaced("", "v1", namespace, "configmaps", Some(name), None)?;
            deletes.extend([path, config_map].map(|p| ApiRequest::new(Method::Delete, p)));
        }
        self.send_all(strips, true)?;
        self.send_all(deletes, true)?;
        let events = ApiPath::namespaced("", "v1", namespace, "events", None, None)?;
        self.send(ApiRequest::new(Method::Delete, events))?;
        Ok(())
    }

    /// Starts `who` on `namespace`, logging to the scratch directory.
    pub fn start(&self, who: &Contender, namespace: &str) -> Result<Operator> {
        let log = format!("{}-{namespace}", who.label);
        self.launch(&who.binary, &who.extra, namespace, &log)
    }

    /// Starts `binary` on `namespace` with the flags beyond the cluster's
    /// and the namespace, logging to `<log>.log` in the scratch directory.
    pub fn launch(
        &self,
        binary: &Path,
        extra: &[String],
        namespace: &str,
        log: &str,
    ) -> Result<Operator> {
        let mut args = vec![
            "--context".to_string(),
            self.server.cp.context().to_string(),
            "--kubeconfig".into(),
            self.server.cp.kubeconfig_path().display().to_string(),
            "--namespace".into(),
            namespace.into(),
        ];
        args.extend(extra.iter().cloned());
        let log = self.work.join(format!("{log}.log"));
        Ok(Operator::start(binary, &args, &[], &log, self.work)?)
    }
}
