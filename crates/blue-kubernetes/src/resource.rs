//! The custom resource as the controller reads and writes it: what it
//! asks for ([`Intent`]), its [`Metadata`] and [`ManagementPolicy`] as a
//! callback sees them, the common spec fields' limits, the [`Phase`] and
//! [`Reason`] its status records, and when it is due for a check
//! ([`is_due`]).

pub use crate::domain::due::is_due;
pub use crate::domain::names::is_object_name;
pub use crate::domain::phase::{Phase, Reason};
pub use crate::domain::resource::Intent;
pub use crate::domain::resource::{
    reconcile_interval_pattern, ManagementPolicy, MAX_RECONCILE_INTERVAL_MS,
};
pub use crate::package::context::Metadata;
