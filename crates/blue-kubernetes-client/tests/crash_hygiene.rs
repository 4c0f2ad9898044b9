//! A process killed mid-request (SIGKILL: no destructor runs) leaves no
//! kubectl running and, once the next client starts, no file behind.

mod common;

use blue_kubernetes_client::{kubectl_client, KubectlConfig, RequestParams};
use common::{entries, script};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_DIR: &str = "BLUE_CRASH_TEST_DIR";
const DOC: &str = r#"{"kind":"Secret","data":{"password":"aHVudGVyMg=="}}"#;

/// Not a test of its own: the child process of
/// `sigkilled_process_leaves_no_kubectl_and_no_file`, which runs it with
/// `--ignored`; starts a request whose fake kubectl never answers.
#[tokio::test]
#[ignore = "the child process of sigkilled_process_leaves_no_kubectl_and_no_file, which runs it"]
async fn child_process_hangs_in_a_request() {
    let dir = std::env::var_os(CHILD_DIR)
        .map(PathBuf::from)
        .expect("run by sigkilled_process_leaves_no_kubectl_and_no_file, which sets the directory");
    let kubectl = dir.join("kubectl");
    let options = KubectlConfig::for_context("test")
        .with_kubectl(&kubectl)
        .with_temp_dir(dir.join("tmp"))
        .with_env("PID_FILE", dir.join("kubectl.pid").display().to_string())
        .with_timeout_ms(600_000);
    let client = kubectl_client(options).unwrap();
    let _ = client
        .request(
            &["apply", "-f", "-"],
            RequestParams::default().with_input(DOC),
        )
        .await;
    unreachable!("the parent kills this process first");
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Running, and not a zombie waiting for a reaper.
fn is_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .next();
        state != Some("Z")
    })
}

fn scratch_dirs(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn sigkilled_process_leaves_no_kubectl_and_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    script(
        dir.path(),
        "kubectl",
        r#"echo $$ > "$PID_FILE"; exec sleep 600"#,
    );
    let pid_file = dir.path().join("kubectl.pid");

    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_process_hangs_in_a_request",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_DIR, dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill the child even if an assertion below fails.
    struct Reap(std::process::Child);
    impl Drop for Reap {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Reap(child);

    wait_for("kubectl to start", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n'))
    });
    let kubectl: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Should the check below fail, the fake kubectl must not outlive the test.
    struct KillOnDrop(u32);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            if is_running(self.0) {
                let pid = nix::unistd::Pid::from_raw(self.0 as i32);
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            }
        }
    }
    let _kubectl_guard = KillOnDrop(kubectl);
    assert!(is_running(kubectl));
    assert_eq!(entries(&tmp).len(), 1, "the input file exists mid-request");

    child.0.kill().unwrap(); // SIGKILL
    child.0.wait().unwrap();
    wait_for("kubectl to die with its parent", || !is_running(kubectl));
    assert_eq!(scratch_dirs(&tmp).len(), 1, "SIGKILL ran no cleanup");

    // The next client sweeps the dead process's directory.
    let next = kubectl_client(KubectlConfig::for_context("test").with_temp_dir(&tmp)).unwrap();
    assert!(scratch_dirs(&tmp).is_empty(), "{:?}", scratch_dirs(&tmp));
    drop(next);
}

#[test]
fn a_live_clients_scratch_directory_survives_another_clients_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let runner = |_inv| async { Ok(common::ok("{}")) };
    let first = kubectl_client(common::options(runner, tmp.path())).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let hold = rt.block_on(async {
        first
            .request(
                &["apply", "-f", "-"],
                RequestParams::default().with_input(DOC),
            )
            .await
    });
    assert!(hold.is_ok());
    assert_eq!(scratch_dirs(tmp.path()).len(), 1);
    let second = kubectl_client(common::options(runner, tmp.path())).unwrap();
    assert_eq!(scratch_dirs(tmp.path()).len(), 1, "the live one stays");
    drop((first, second));
    assert!(scratch_dirs(tmp.path()).is_empty());
}
