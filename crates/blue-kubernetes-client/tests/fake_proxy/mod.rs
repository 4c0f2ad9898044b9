//! A fake `kubectl proxy`: a hyper server on a Unix socket inside the test,
//! and a fake `kubectl` script that links its `--unix-socket` path to that
//! server, records its pid and argv, then sleeps as the "proxy" process.

#![allow(dead_code)] // each test binary uses a different subset

use blue_kubernetes_client::{proxy_client, KubectlConfig, ProxyClient, ProxyConfig};
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Planted in every response body, the script's stderr and request bodies.
pub const MARKER: &str = "hunter2-marker";

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub content_type: String,
    pub body: String,
}

/// A canned answer: status and body.
#[derive(Clone, Debug)]
pub enum Answer {
    Reply(u16, String),
    /// One reply per request, in order; the last one repeats.
    Replies(Vec<(u16, String)>),
    /// Status 200 and a body the test writes through [`Fake::stream`].
    Stream,
    /// Never answer.
    Hang,
}

type Chunk = Result<Frame<Bytes>, std::io::Error>;

/// The server's end of one streamed body.
pub struct StreamHandle(tokio::sync::mpsc::UnboundedSender<Chunk>);

impl StreamHandle {
    /// Writes `text` as one chunk; false once the client is gone.
    pub fn send(&self, text: &str) -> bool {
        self.0
            .send(Ok(Frame::data(Bytes::from(text.to_owned()))))
            .is_ok()
    }

    /// Breaks the connection mid-body (hyper aborts it).
    pub fn break_connection(&self) {
        let _ = self.0.send(Err(std::io::Error::other("broken")));
    }

    /// Resolves once the client dropped the body (closed the connection).
    pub async fn closed(&self) {
        self.0.closed().await;
    }
}

#[derive(Default)]
pub struct ServerState {
    pub connections: usize,
    pub seen: Vec<Seen>,
    pub answers: HashMap<String, Answer>,
    /// The streamed bodies, in request order, until a test takes them.
    pub streams: Vec<Option<StreamHandle>>,
}

pub type Shared = Arc<Mutex<ServerState>>;

/// A fake proxy setup in its own temporary directory.
pub struct Fake {
    pub dir: tempfile::TempDir,
    pub state: Shared,
    server: tokio::task::JoinHandle<()>,
}

impl Fake {
    /// Starts the server (needs a tokio runtime) and writes the script.
    pub fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("tmp")).unwrap();
        // Written by `sh`, not this process (see `common::script`).
        crate::common::script(
            dir.path(),
            "kubectl",
            &format!(
                r#"echo $$ >> "$FAKE_PIDS"
printf '%s\n' "$*" >> "$FAKE_ARGV"
echo "error: {MARKER} token" >&2
for a in "$@"; do case "$a" in --unix-socket=*) sock="${{a#--unix-socket=}}";; esac; done
[ -n "$FAKE_EXIT" ] && exit 1
ln -s "$FAKE_SERVER" "$sock"
exec sleep 600"#
            ),
        );
        let state: Shared = Arc::default();
        let listener = tokio::net::UnixListener::bind(dir.path().join("server.sock")).unwrap();
        let served = state.clone();
        let server = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                served.lock().unwrap().connections += 1;
                let state = served.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| handle(state.clone(), req));
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self { dir, state, server }
    }

    /// Options whose kubectl is the script, with `tmp` as temp_dir.
    pub fn kubectl_options(&self) -> KubectlConfig {
        let d = self.dir.path();
        let path = |name: &str| d.join(name).to_str().unwrap().to_owned();
        KubectlConfig::for_context("fake-ctx")
            .with_kubectl(d.join("kubectl"))
            .with_temp_dir(d.join("tmp"))
            .with_env("FAKE_PIDS", path("pids"))
            .with_env("FAKE_ARGV", path("argv"))
            .with_env("FAKE_SERVER", path("server.sock"))
    }

    pub fn client(&self, configure: impl FnOnce(&mut ProxyConfig)) -> ProxyClient {
        let mut options = ProxyConfig::new(self.kubectl_options());
        configure(&mut options);
        proxy_client(options).unwrap()
    }

    pub fn answer(&self, path: &str, answer: Answer) {
        self.state
            .lock()
            .unwrap()
            .answers
            .insert(path.to_owned(), answer);
    }

    /// Takes the server's end of the `index`th streamed body; dropping it
    /// ends the body cleanly.
    pub fn stream(&self, index: usize) -> StreamHandle {
        self.state.lock().unwrap().streams[index]
            .take()
            .expect("a streamed body not taken yet")
    }

    pub fn connections(&self) -> usize {
        self.state.lock().unwrap().connections
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// Every pid the script recorded (one per proxy start).
    pub fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.dir.path().join("pids"))
            .unwrap_or_default()
            .lines()
            .map(|l| l.trim().parse().unwrap())
            .collect()
    }

    pub fn argv(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("argv"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Proxy directories left in `tmp`.
    pub fn socket_dirs(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.dir.path().join("tmp"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect()
    }

    /// Asserts that no recorded proxy process and no proxy directory remain.
    pub fn assert_nothing_left(&self) {
        for pid in self.pids() {
            assert!(!is_alive(pid), "proxy process {pid} is still alive");
        }
        assert_eq!(self.socket_dirs(), Vec::<PathBuf>::new());
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.server.abort();
        // Whatever a failed test left running dies with it.
        for pid in self.pids() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// True while `pid` exists and is not a zombie.
pub fn is_alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// SIGKILLs `pid` and returns once it has died (a zombie awaiting our reap).
pub fn kill(pid: i32) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // Signal delivery is asynchronous: wait for the state change itself.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while is_alive(pid) {
        assert!(
            std::time::Instant::now() < deadline,
            "{pid} survived SIGKILL"
        );
        std::thread::yield_now();
    }
}

/// A Kubernetes `Status` body with `reason`, carrying the marker.
pub fn status(reason: &str, code: u16) -> String {
    serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "status": "Failure",
        "reason": reason, "code": code,
        "message": format!("secret {MARKER} in the message"),
    })
    .to_string()
}

type Body = BoxBody<Bytes, std::io::Error>;

fn full(body: String) -> Body {
    Full::new(Bytes::from(body))
        .map_err(|never| match never {})
        .boxed()
}

async fn handle(
    state: Shared,
    request: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Body>, std::convert::Infallible> {
    let method = request.method().to_string();
    let path = request.uri().to_string();
    let content_type = request
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = request.into_body().collect().await.unwrap().to_bytes();
    let answer = {
        let mut s = state.lock().unwrap();
        s.seen.push(Seen {
            method,
            path: path.clone(),
            content_type,
            body: String::from_utf8_lossy(&body).into_owned(),
        });
        match s.answers.get_mut(&path) {
            Some(Answer::Replies(replies)) if replies.len() > 1 => {
                let (code, body) = replies.remove(0);
                Some(Answer::Reply(code, body))
            }
            Some(Answer::Replies(replies)) => replies
                .first()
                .map(|(code, body)| Answer::Reply(*code, body.clone())),
            other => other.cloned(),
        }
    };
    let (code, body) = match answer {
        Some(Answer::Reply(code, body)) => (code, full(body)),
        Some(Answer::Stream) => {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Chunk>();
            state.lock().unwrap().streams.push(Some(StreamHandle(tx)));
            let chunks = futures::stream::unfold(rx, |mut rx| async move {
                rx.recv().await.map(|chunk| (chunk, rx))
            });
            (200, StreamBody::new(chunks).boxed())
        }
        Some(Answer::Hang) => std::future::pending().await,
        Some(Answer::Replies(_)) => unreachable!("replies are resolved above"),
        None => (
            200,
            full(serde_json::json!({"kind": "Echo", "path": path}).to_string()),
        ),
    };
    Ok(hyper::Response::builder().status(code).body(body).unwrap())
}
