//! Membership: each replica holds one of a fixed number of membership
//! slot Leases, renews it each round with a write guarded by the version
//! the round's view shows (no read of its own), and learns from the same
//! view who else is alive. A slot's holder is alive while its record keeps
//! changing within a lease duration (judged on the local clock, as the
//! elector judges expiry).
//!
//! The slot renewal also carries this replica's right to its shards: see
//! [`Standing`] and `task.rs`.

use super::{ShardingConfig, View};
use crate::clock::Clock;
use crate::leader::{ElectionStep, LeaseElector, Takeover};
use crate::Error;
use blue_kubernetes_client::Client;
use std::collections::HashMap;

/// What this round's renewal of our slot means for our shards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Standing {
    /// Renewed before our last renewal's lease duration ran out: the
    /// right to every shard we hold runs on from `started`.
    Renewed { started: u64 },
    /// Joined, or renewed only after our right had run out: others may
    /// have taken our shards meanwhile, so none is dispatched again before
    /// it is taken again (a guarded write) from `started` on.
    Restarted { started: u64 },
    /// Not renewed this round (unreachable, say): the rights run out on
    /// their own (dispatch at the renew deadline, writes at the lease's
    /// expiry).
    Unrenewed,
    /// Our slot is provably someone else's, and no other was taken: every
    /// shard stops at once.
    Lost,
}

/// This replica's view of the membership.
#[derive(Debug)]
pub(crate) struct Roster {
    identity: String,
    lease_duration_ms: u64,
    /// One elector per slot: the one for our slot renews it, the others
    /// only record what the views show (or, while we hold none, try to
    /// take a free one).
    slots: Vec<LeaseElector>,
    mine: Option<usize>,
    /// Holders of shards no slot names, since when (local clock).
    absent_since: HashMap<String, u64>,
}

impl Roster {
    pub(crate) fn new(settings: &ShardingConfig) -> Result<Self, Error> {
        let slots = (0..settings.max_members)
            .map(|k| LeaseElector::new(settings.member_lease(k)))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            identity: settings.lease.identity.clone(),
            lease_duration_ms: settings.lease.lease_duration_ms,
            slots,
            mine: None,
            absent_since: HashMap::new(),
        })
    }

    /// The slot Lease names.
    pub(crate) fn names(&self) -> Vec<String> {
        (self.slots.iter())
            .map(|s| s.settings().lease_name.clone())
            .collect()
    }

    /// One round on `view` (read by a request that started at `started`):
    /// renew our slot (or take the first free one), and record the others.
    pub(crate) async fn step(
        &mut self,
        view: &View,
        started: u64,
        client: &dyn Client,
        now: &Clock,
    ) -> Standing {
        for (k, slot) in self.slots.iter_mut().enumerate() {
            if Some(k) != self.mine {
                if let Some(current) = view.get(&slot.settings().lease_name) {
                    slot.seen(current, now());
                }
            }
        }
        let mut standing = Standing::Unrenewed;
        if let Some(k) = self.mine {
            let slot = &mut self.slots[k];
            let Some(current) = view.get(&slot.settings().lease_name) else {
                return Standing::Unrenewed;
            };
            let right_until = slot.gate.write_deadline();
            let current = current.cloned();
            standing = match slot
                .act_on(current, started, client, now, Takeover::Never)
                .await
            {
                ElectionStep::Leading if now() < right_until => Standing::Renewed { started },
                ElectionStep::Leading => Standing::Restarted { started },
                ElectionStep::Lost => {
                    tracing::warn!(
                        slot = k,
                        "sharding: membership slot lost; taking part again"
                    );
                    self.mine = None;
                    Standing::Lost
                }
                _ => Standing::Unrenewed,
            };
        }
        if self.mine.is_none() {
            return match self.join(view, started, client, now).await {
                true => Standing::Restarted { started },
                false => standing,
            };
        }
        standing
    }

    /// Tries the first slot that is free, expired or ours; true if taken.
    async fn join(&mut self, view: &View, started: u64, client: &dyn Client, now: &Clock) -> bool {
        let free = self.slots.iter().position(|s| {
            let holder = s.live_holder(now());
            view.get(&s.settings().lease_name).is_some()
                && holder.is_none_or(|h| h == self.identity)
        });
        let Some(k) = free else {
            return false;
        };
        let slot = &mut self.slots[k];
        let current = view.get(&slot.settings().lease_name).flatten().cloned();
        // Never takes a live slot: only a free or expired one.
        if slot
            .act_on(current, started, client, now, Takeover::AfterExpiry)
            .await
            == ElectionStep::Leading
        {
            tracing::info!(slot = k, identity = %self.identity, "sharding: joined as a member");
            self.mine = Some(k);
        }
        self.mine.is_some()
    }

    /// Whether the shards of `holder` (not us) may be taken over at
    /// `now_ms`: no slot names it as a live member, and one names it
    /// expired (it has not renewed for a lease duration), or none has
    /// named it for a lease duration.
    pub(crate) fn gone(&mut self, holder: &str, now_ms: u64) -> bool {
        let named: Vec<&LeaseElector> = (self.slots.iter())
            .filter(|s| s.holder() == Some(holder))
            .collect();
        if !named.is_empty() {
            self.absent_since.remove(holder);
            return named.iter().all(|s| s.live_holder(now_ms).is_none());
        }
        let since = *self.absent_since.entry(holder.to_owned()).or_insert(now_ms);
        now_ms >= since.saturating_add(self.lease_duration_ms)
    }

    /// How long until the next round should look, at most `period_ms`:
    /// sooner when another member's slot expires sooner, so its shards
    /// move at once.
    pub(crate) fn next_round_in(&self, now_ms: u64, period_ms: u64) -> u64 {
        (self.slots.iter().enumerate())
            .filter(|(k, _)| Some(*k) != self.mine)
            .map(|(_, s)| s.next_attempt_in_ms(now_ms))
            .fold(period_ms, u64::min)
    }

    /// The live members at `now_ms`, sorted and without duplicates.
    pub(crate) fn members(&self, now_ms: u64) -> Vec<String> {
        let mut members: Vec<String> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(k, _)| Some(*k) != self.mine)
            .filter_map(|(_, slot)| slot.live_holder(now_ms))
            .filter(|holder| *holder != self.identity)
            .map(str::to_owned)
            .collect();
        if self.mine.is_some() {
            members.push(self.identity.clone());
        }
        members.sort();
        members.dedup();
        members
    }

    /// Gives our slot up (the runtime is stopping).
    pub(crate) async fn leave(&mut self, client: &dyn Client) {
        if let Some(k) = self.mine.take() {
            if let Err(e) = self.slots[k].release(client).await {
                tracing::warn!(slot = k, error = %e, "sharding: releasing the membership slot failed");
            }
        }
    }
}
