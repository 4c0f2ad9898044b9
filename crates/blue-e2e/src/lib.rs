//! The testbed pieces shared by the end-to-end and chaos checks (this
//! package's test binaries) and by `cargo xtask bench` and `demo`: reading
//! resource status, percentiles, the flags connecting an operator, scraping its HTTP endpoints, and tokens for
//! an operator connecting as its ServiceAccount. Not published.

pub mod connect;
pub mod guarded_server;
pub mod in_cluster;
pub mod postgres;
pub mod postgres_fixture;
pub mod scrape;
pub mod stats;
pub mod status;
