//! The controller's rules (the crate README, "One pass, in order") and
//! plain data, free of I/O and of handles: when a resource is due, with
//! the times status records and each resource's interval stretch (`due`),
//! reading a resource: its metadata, what it asks for and its common spec
//! fields (`resource`), the status a pass writes (`status`, `phase`),
//! immutable fields (`immutable`) and the names we own (`names`).

pub(crate) mod due;
pub(crate) mod immutable;
pub(crate) mod names;
pub(crate) mod phase;
pub(crate) mod resource;
pub(crate) mod status;
