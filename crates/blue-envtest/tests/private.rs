//! A control plane of a test's own: stopped on drop, its processes and
//! directory gone and its port closed.

use std::net::TcpStream;
use std::path::PathBuf;
use std::time::Duration;

use blue_envtest::{Component, Envtest};

/// The port of `https://127.0.0.1:<port>`.
fn port(server: &str) -> u16 {
    server.rsplit(':').next().unwrap().parse().unwrap()
}

fn alive(pid: u32) -> bool {
    PathBuf::from(format!("/proc/{pid}")).exists()
}

#[test]
fn a_private_server_stops_on_drop() {
    let env = Envtest::start().unwrap();
    let cp = env.control_plane();
    let (dir, port) = (cp.dir().to_path_buf(), port(cp.server()));
    let pids = [Component::Etcd, Component::ApiServer].map(|c| cp.pid(c).unwrap());
    assert!(pids.iter().all(|&pid| alive(pid)));
    TcpStream::connect(("127.0.0.1", port)).unwrap();

    drop(env);
    for pid in pids {
        assert!(!alive(pid), "process {pid} outlived the drop");
    }
    assert!(!dir.exists(), "{} was not removed", dir.display());
    let connect =
        TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1));
    assert!(connect.is_err(), "port {port} still accepts connections");
}

#[test]
fn a_private_server_is_stopped_when_its_test_panics() {
    let dir = std::sync::Mutex::new(PathBuf::new());
    let panicked = std::panic::catch_unwind(|| {
        let env = Envtest::start().unwrap();
        *dir.lock().unwrap() = env.control_plane().dir().to_path_buf();
        panic!("the test fails");
    });
    assert!(panicked.is_err());
    let dir = dir.into_inner().unwrap();
    assert!(!dir.as_os_str().is_empty() && !dir.exists());
}

#[test]
fn the_api_server_restarts_in_place() {
    let env = Envtest::start().unwrap();
    let ns = env.namespace("before-restart").unwrap();
    env.control_plane().restart(Component::ApiServer).unwrap();
    env.kubectl(&["get", "namespace", &ns]).unwrap();
}
