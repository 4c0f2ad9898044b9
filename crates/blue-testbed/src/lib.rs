//! The testbed of `cargo xtask demo` and of the benchmarks (`blue-bench`):
//! the cluster a run uses (a local control plane, provisioned on first use,
//! or an existing one by context), the example installed into a namespace,
//! the operators built with cargo and started as processes; and what every
//! developer task shares: signals, kubectl, waiting, scratch directories,
//! Debian's packages and cargo. Not published.

pub mod cluster;
pub mod support;
pub mod world;
