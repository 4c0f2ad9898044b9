//! A [`Runner`] that answers kubectl command lines from a [`FakeCluster`].

mod argv;
mod commands;
mod leases;
mod raw;
mod stderr;

use crate::FakeCluster;
use argv::Rejected;
use blue_kubernetes_client::{Error, Invocation, Output, ResourceDescriptor, Runner};
use serde_json::Value;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// A fake `kubectl` binary: interprets the command lines the kubectl transport
/// produces against a [`FakeCluster`], so the real `KubectlClient` can be
/// tested, and its kubectl invocations counted, without a server.
///
/// Supported, after `[kubectl, (--kubeconfig K), (--context C),
/// (--request-timeout=Ns)]`:
/// - `get PLURAL.GROUP (-n NS | --all-namespaces | -A) [--chunk-size=N]
///   [-l | --selector SELECTOR] -o json` (a `List`);
/// - `get PLURAL.GROUP NAME -n NS [--ignore-not-found] -o json`;
/// - `replace --raw /apis/G/V/namespaces/NS/PLURAL/NAME/status -f FILE`
///   (the body is read from `FILE`);
/// - `patch PLURAL.GROUP NAME -n NS --type=merge -p JSON -o json` where the
///   patch sets `metadata.finalizers` (with an optional `resourceVersion`);
/// - for a cluster-scoped type the same without `-n` (which is ignored
///   anyway), and the status path `/apis/G/V/PLURAL/NAME/status`; without
///   `-n` a namespaced type is looked up in `default`, the context's
///   namespace;
/// - `get --raw /apis/G/V` (discovery), `create --raw
///   /apis/authorization.k8s.io/v1/selfsubjectaccessreviews -f FILE`, and
///   `create|replace --raw /api/v1/namespaces/NS/events[/NAME] -f FILE`;
/// - the Lease requests: `get --raw`, `create --raw` and `replace --raw` on
///   `/apis/coordination.k8s.io/v1/namespaces/NS/leases[/NAME]`.
///
/// `PLURAL.VERSION.GROUP` names a type too; another version is unknown.
///
/// Each maps onto one [`Client`](blue_kubernetes_client::Client) call of the cluster, so the cluster's faults,
/// latency and call log apply. Failures exit 1 with kubectl's own stderr
/// texts. Clones share the invocation record.
///
/// ```
/// use blue_kubernetes_client::{Invocation, ResourceDescriptor, Runner};
/// use blue_testkit::{FakeCluster, FakeKubectl};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let widgets = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
/// let cluster = FakeCluster::new();
/// cluster.create(&widgets, "default", "a", serde_json::json!({}));
/// let kubectl = FakeKubectl::new(cluster).with_type(widgets);
/// let argv = ["kubectl", "--context", "dev", "--request-timeout=30s",
///             "get", "widgets.example.com", "-n", "default", "-o", "json"];
/// let out = kubectl.run(Invocation {
///     argv: argv.iter().map(|s| s.to_string()).collect(),
///     env: vec![],
///     timeout_ms: 45_000,
/// }).await.unwrap();
/// assert_eq!(out.exit_code, 0);
/// let list: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
/// assert_eq!(list["items"][0]["metadata"]["name"], "a");
/// assert_eq!(kubectl.count(), 1);
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct FakeKubectl {
    cluster: FakeCluster,
    types: Vec<ResourceDescriptor>,
    invocations: Arc<Mutex<Vec<Invocation>>>,
}

fn ok(stdout: String) -> Output {
    Output {
        exit_code: 0,
        stdout,
        stderr: String::new(),
    }
}

fn fail(stderr: String) -> Output {
    Output {
        exit_code: 1,
        stdout: String::new(),
        stderr: format!("{stderr}\n"),
    }
}

fn pretty(value: &Value) -> String {
    // Serializing a Value cannot fail.
    format!(
        "{}\n",
        serde_json::to_string_pretty(value).unwrap_or_default()
    )
}

impl FakeKubectl {
    /// A fake kubectl over `cluster`, knowing no types yet.
    ///
    /// ```
    /// let kubectl = blue_testkit::FakeKubectl::new(blue_testkit::FakeCluster::new());
    /// assert_eq!(kubectl.count(), 0);
    /// ```
    pub fn new(cluster: FakeCluster) -> Self {
        Self {
            cluster,
            types: Vec::new(),
            invocations: Arc::default(),
        }
    }

    /// Makes `descriptor`'s type known (as `plural.group`, as
    /// `plural.version.group` and by its `/apis/...` path), as installing
    /// its CRD would. Another version (`plural.v2.group`) stays unknown.
    ///
    /// ```
    /// use blue_kubernetes_client::ResourceDescriptor;
    /// let d = ResourceDescriptor::new("example.com", "v1", "widgets", "Widget");
    /// let kubectl = blue_testkit::FakeKubectl::new(blue_testkit::FakeCluster::new()).with_type(d);
    /// ```
    pub fn with_type(mut self, descriptor: ResourceDescriptor) -> Self {
        self.types.push(descriptor);
        self
    }

    /// The cluster behind this kubectl.
    ///
    /// ```
    /// let cluster = blue_testkit::FakeCluster::new();
    /// let kubectl = blue_testkit::FakeKubectl::new(cluster.clone());
    /// assert_eq!(kubectl.cluster().revision(), cluster.revision());
    /// ```
    pub fn cluster(&self) -> &FakeCluster {
        &self.cluster
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Invocation>> {
        self.invocations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Every invocation run so far, in order, understood or not.
    ///
    /// ```
    /// let kubectl = blue_testkit::FakeKubectl::new(blue_testkit::FakeCluster::new());
    /// assert!(kubectl.invocations().is_empty());
    /// ```
    pub fn invocations(&self) -> Vec<Invocation> {
        self.lock().clone()
    }

    /// The command part (after the binary and global flags) of every
    /// invocation, e.g. `["get", "widgets.example.com", "-n", "default", "-o", "json"]`.
    ///
    /// ```
    /// let kubectl = blue_testkit::FakeKubectl::new(blue_testkit::FakeCluster::new());
    /// assert!(kubectl.commands().is_empty());
    /// ```
    pub fn commands(&self) -> Vec<Vec<String>> {
        self.lock()
            .iter()
            .map(|inv| argv::command_args(&inv.argv).to_vec())
            .collect()
    }

    /// How many times kubectl was run.
    ///
    /// ```
    /// let kubectl = blue_testkit::FakeKubectl::new(blue_testkit::FakeCluster::new());
    /// assert_eq!(kubectl.count(), 0);
    /// ```
    pub fn count(&self) -> usize {
        self.lock().len()
    }

    /// Forgets the invocations run so far.
    ///
    /// ```
    /// let kubectl = blue_testkit::FakeKubectl::new(blue_testkit::FakeCluster::new());
    /// kubectl.reset();
    /// assert_eq!(kubectl.count(), 0);
    /// ```
    pub fn reset(&self) {
        self.lock().clear();
    }

    pub(super) fn by_name(&self, resource: &str) -> Option<&ResourceDescriptor> {
        self.types
            .iter()
            .find(|d| d.qualified_plural() == resource || d.versioned_plural() == resource)
    }
}

#[async_trait::async_trait]
impl Runner for FakeKubectl {
    async fn run(&self, invocation: Invocation) -> Result<Output, Error> {
        let args = argv::command_args(&invocation.argv).to_vec();
        self.lock().push(invocation);
        Ok(match argv::parse(&args) {
            Ok(command) => self.execute(command).await,
            Err(Rejected::UnknownCommand(verb)) => fail(stderr::unknown_command(&verb)),
            Err(Rejected::Unsupported(why)) => {
                fail(format!("error: unsupported by FakeKubectl: {why}"))
            }
        })
    }
}
