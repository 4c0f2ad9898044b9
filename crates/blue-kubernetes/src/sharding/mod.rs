//! Optional scale-out across replicas (the crate README, "Scale-out:
//! sharding across replicas"): the settings, the
//! pure assignment of shards to members and of resources to shards, the
//! shard table the passes check, the round's view of every Lease (one
//! list), the membership roster, and the task that holds the membership
//! and shard Leases next to the runtime.
//!
//! # Guarantees
//! - A pass runs past `identity` only in the replica holding its shard's
//!   Lease, within the renew deadline of its last membership renewal; its
//!   writes are fenced by that renewal's lease duration (the
//!   leader-election fence, with the shard's gate). Shard Leases are taken
//!   by a guarded write and not renewed: the membership slot carries them
//!   (see `task.rs` for why a late renewal extends nothing).
//! - Equal identities have equal shards, so the process-local identity
//!   lock is enough: two replicas never hold one identity's shard at once.
//! - A shard is given up only after its running passes end; the next owner
//!   starts after the release, or once the holder's membership slot
//!   expired.
//!
//! # Caveats
//! - A replica cut off from the API server keeps running the callbacks it
//!   started after its lease expired, as with leader election; the
//!   fencing token is for infrastructure that can refuse them.
//! - Every replica calls `identity` for resources that come due, to learn
//!   their shard: it must be side-effect free (and cheap).

mod assignment;
mod roster;
mod settings;
mod table;
pub(crate) mod task;
mod view;

pub use settings::ShardingConfig;

pub(crate) use assignment::{assign, shard_of};
pub(crate) use roster::{Roster, Standing};
pub(crate) use table::ShardTable;
pub(crate) use view::{Reader, View};
