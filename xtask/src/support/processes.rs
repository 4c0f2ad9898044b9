//! Live processes from `/proc`, and which still mention a path: the proof
//! that a run left nothing behind (blue-envtest's).

pub use blue_envtest::procfs::{all, processes_mentioning, stat_fields};
