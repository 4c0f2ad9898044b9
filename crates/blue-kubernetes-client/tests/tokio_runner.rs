//! The default runner: no shell, captured output, and a deadline that kills
//! the whole process group.

mod common;

use blue_kubernetes_client::{
    kubectl_client, Error, Invocation, KubectlConfig, RequestParams, Runner, TokioRunner,
};
use common::script;
use std::path::Path;
use std::time::{Duration, Instant};

fn invocation(argv: &[&str], timeout_ms: u64) -> Invocation {
    Invocation {
        argv: argv.iter().map(|s| (*s).to_owned()).collect(),
        env: Vec::new(),
        timeout_ms,
    }
}

/// True while `pid` is a live (non-zombie) process. A zombie counts as gone:
/// it has stopped running and only waits for its parent (possibly a
/// non-reaping init in a container) to collect it.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().next());
            state != Some("Z") && state != Some("X")
        }
        Err(_) => false,
    }
}

/// Death after SIGKILL is asynchronous: give the kernel a bounded moment.
fn wait_until_gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

fn read_pid(path: &Path) -> u32 {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn deadline_kills_kubectl_and_everything_it_spawned() {
    let bin = tempfile::tempdir().unwrap();
    let pids = bin.path().display();
    // A kubectl that starts a background grandchild and then blocks; both
    // hold stdout open, so only killing the whole group ends the run.
    let kubectl = script(
        bin.path(),
        "kubectl",
        &format!(
            "sleep 30 &\necho $! > {pids}/grandchild.pid\necho $$ > {pids}/leader.pid\nsleep 30"
        ),
    );
    let client = kubectl_client(
        KubectlConfig::for_context("dev")
            .with_kubectl(&kubectl)
            .with_runner(TokioRunner::new()),
    )
    .unwrap();

    let started = Instant::now();
    let err = client
        .request(
            &["get", "pods"],
            RequestParams::default().with_timeout_ms(1_500),
        )
        .await
        .unwrap_err();

    assert!(
        matches!(err, Error::Timeout { ref operation, timeout_ms: 1_500 } if operation == "get"),
        "{err:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "returned promptly"
    );
    let grandchild = read_pid(&bin.path().join("grandchild.pid"));
    let leader = read_pid(&bin.path().join("leader.pid"));
    assert!(wait_until_gone(leader), "kubectl {leader} still running");
    assert!(
        wait_until_gone(grandchild),
        "grandchild {grandchild} still running"
    );
}

#[tokio::test]
async fn background_child_holding_the_output_open_is_killed_at_the_deadline() {
    let bin = tempfile::tempdir().unwrap();
    let pids = bin.path().display();
    // kubectl itself exits at once, but leaves a child holding stdout open.
    let kubectl = script(
        bin.path(),
        "kubectl",
        &format!("sleep 30 &\necho $! > {pids}/grandchild.pid\nexit 0"),
    );
    let argv = [kubectl.to_str().unwrap(), "get", "pods"];
    let err = TokioRunner::new()
        .run(invocation(&argv, 1_000))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    let grandchild = read_pid(&bin.path().join("grandchild.pid"));
    assert!(
        wait_until_gone(grandchild),
        "grandchild {grandchild} still running"
    );
}

#[tokio::test]
async fn runner_timeout_names_the_operation_not_a_flag_value() {
    let bin = tempfile::tempdir().unwrap();
    let kubectl = script(bin.path(), "kubectl", "exec sleep 30");
    let argv = [
        kubectl.to_str().unwrap(),
        "--context",
        "c",
        "--request-timeout=1s",
        "get",
        "pods",
    ];
    let err = TokioRunner::new()
        .run(invocation(&argv, 100))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Timeout { ref operation, timeout_ms: 100 } if operation == "get"),
        "{err:?}"
    );
}

#[tokio::test]
async fn exit_code_stdout_and_stderr_are_captured() {
    let bin = tempfile::tempdir().unwrap();
    let kubectl = script(bin.path(), "kubectl", "echo out; echo err >&2; exit 3");
    let output = TokioRunner::new()
        .run(invocation(&[kubectl.to_str().unwrap()], 10_000))
        .await
        .unwrap();
    assert_eq!(output.exit_code, 3);
    assert_eq!(output.stdout, "out\n");
    assert_eq!(output.stderr, "err\n");
}

#[tokio::test]
async fn extra_environment_reaches_the_process() {
    let mut inv = invocation(&["sh", "-c", "printf %s \"$BLUE_TEST_VAR\""], 10_000);
    inv.env
        .push(("BLUE_TEST_VAR".into(), "from-invocation".into()));
    let output = TokioRunner::new().run(inv).await.unwrap();
    assert_eq!(output.stdout, "from-invocation");
}

#[tokio::test]
async fn stdin_is_closed() {
    // `cat` with a closed stdin ends immediately with no output.
    let output = TokioRunner::new()
        .run(invocation(&["cat"], 10_000))
        .await
        .unwrap();
    assert_eq!(output.exit_code, 0);
    assert_eq!(output.stdout, "");
}

#[tokio::test]
async fn arguments_are_never_interpreted_by_a_shell() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("pwned");
    let hostile = format!("$(touch {})", marker.display());
    let client = kubectl_client(
        KubectlConfig::for_context("dev; touch /tmp/x")
            .with_kubectl("/bin/echo")
            .with_runner(TokioRunner::new()),
    )
    .unwrap();
    let text = client
        .request(&["get", &hostile, "`id`"], RequestParams::raw())
        .await
        .unwrap()
        .into_text()
        .unwrap();
    assert_eq!(
        text,
        format!("--context dev; touch /tmp/x --request-timeout=30s get {hostile} `id`\n")
    );
    assert!(!marker.exists());
}

#[tokio::test]
async fn missing_binary_is_a_spawn_error_without_the_path() {
    let client = kubectl_client(
        KubectlConfig::for_context("dev")
            .with_kubectl("/nonexistent/secret-dir/kubectl")
            .with_runner(TokioRunner::new()),
    )
    .unwrap();
    let err = client
        .request(&["get", "ns"], RequestParams::default())
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        Error::Spawn { ref operation, source_kind: std::io::ErrorKind::NotFound } if operation == "get"
    ));
    assert!(!format!("{err} {err:?}").contains("secret-dir"));
}

#[tokio::test]
async fn empty_argv_is_a_spawn_error() {
    let err = TokioRunner::new()
        .run(invocation(&[], 1_000))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Spawn { .. }));
}

#[tokio::test]
async fn slow_process_does_not_block_the_runtime() {
    // One thread only: a blocking runner would serialise these two runs.
    let started = Instant::now();
    let runner = TokioRunner::new();
    let slow = async {
        let result = runner.run(invocation(&["sleep", "30"], 2_000)).await;
        (result, started.elapsed())
    };
    let quick = async {
        let result = runner.run(invocation(&["true"], 10_000)).await;
        (result, started.elapsed())
    };
    let ((slow, slow_done), (quick, quick_done)) = tokio::join!(slow, quick);
    assert!(matches!(slow, Err(Error::Timeout { .. })));
    assert_eq!(quick.unwrap().exit_code, 0);
    assert!(
        quick_done < slow_done,
        "the short run finished while the long one was in flight"
    );
}
