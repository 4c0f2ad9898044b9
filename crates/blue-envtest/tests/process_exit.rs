//! The shared control plane lives in a static and is never dropped: its
//! processes must die with the test process however it ends, and its
//! directory must go with them. Each case runs this test binary again as a
//! child that starts the shared server, prints what to look for, and ends.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use blue_envtest::{Component, Envtest};

const CHILD: &str = "BLUE_ENVTEST_EXIT_CHILD";

/// In the child: start the shared server, print its pids and directory, end
/// the way the parent asked.
#[test]
fn child() {
    let Ok(how) = std::env::var(CHILD) else {
        return;
    };
    let cp = Envtest::shared().unwrap().control_plane();
    let pids = [Component::Etcd, Component::ApiServer].map(|c| cp.pid(c).unwrap());
    println!("pids={} {} dir={}", pids[0], pids[1], cp.dir().display());
    if how == "kill" {
        let me = nix::unistd::Pid::this();
        nix::sys::signal::kill(me, nix::sys::signal::Signal::SIGKILL).unwrap();
    }
}

/// Runs the child; returns the pids and directory it printed.
fn run_child(how: &str) -> (Vec<u32>, String) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD, how)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("pids="))
        .map(|(_, rest)| rest);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = line.unwrap_or_else(|| panic!("the child printed no pids: {stdout} {stderr}"));
    let (pids, dir) = line.split_once(" dir=").unwrap();
    let pids = pids.split(' ').map(|p| p.parse().unwrap()).collect();
    (pids, dir.to_string())
}

/// Within 10 s, none of `pids` runs any more (zombies included: the
/// children are reparented and reaped) and `dir` is gone.
fn all_gone(pids: &[u32], dir: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let running = || {
        pids.iter()
            .any(|pid| Path::new(&format!("/proc/{pid}")).exists())
    };
    while (running() || Path::new(dir).exists()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!running(), "processes {pids:?} outlived the test process");
    assert!(!Path::new(dir).exists(), "{dir} outlived the test process");
}

#[test]
fn the_shared_server_dies_when_the_test_process_exits() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let (pids, dir) = run_child("exit");
    all_gone(&pids, &dir);
}

#[test]
fn the_shared_server_dies_when_the_test_process_is_killed() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let (pids, dir) = run_child("kill");
    all_gone(&pids, &dir);
}
