//! End-to-end checks: the example operators as processes against a real
//! API server (blue-envtest's, provisioned with `cargo xtask control-plane
//! provision`), checked with real kubectl (and psql). One test binary, so
//! the control plane is shared: each test takes a namespace of its own;
//! the checks that restart the API server or manage every namespace start
//! a control plane of their own. Any one runs alone:
//! `cargo test -p blue-e2e <name>`.

mod local_configmap;
mod postgres;
mod storage_migration;
mod support;
