//! What every task shares and nothing here depends on a cluster: signals,
//! kubectl, the PASS/FAIL reporter, the wait loop, temporary files and processes.

pub mod cargo;
pub mod debian;
pub mod interrupt;
pub mod kube;
pub mod processes;
pub mod random;
pub mod temp_dir;
pub mod wait;
