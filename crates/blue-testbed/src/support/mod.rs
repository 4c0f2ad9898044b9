//! What every task shares and nothing here depends on a cluster: signals,
//! kubectl, the wait loop, scratch directories, Debian's packages and cargo.

pub mod cargo;
pub mod debian;
pub mod interrupt;
pub mod kube;
pub mod temp_dir;
pub mod wait;
