//! The controller's rules (the crate README, "One pass, in order") and
//! plain data, free of I/O and of handles: when a resource is due
//! (`due`), what its common spec fields mean (`spec`), the status a pass
//! writes (`status`), the names we own (`names`), reading a resource's
//! metadata (`resource`), what the resource asks for (`intent`), time
//! as status stores it (`time`), and each resource's interval stretch
//! (`jitter`).

pub(crate) mod due;
pub(crate) mod immutable;
pub(crate) mod intent;
pub(crate) mod jitter;
pub(crate) mod names;
pub(crate) mod phase;
pub(crate) mod resource;
pub(crate) mod spec;
pub(crate) mod status;
pub(crate) mod time;
