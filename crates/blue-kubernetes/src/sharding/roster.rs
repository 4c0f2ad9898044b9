//! Membership: each replica holds one of a fixed number of membership
//! slot Leases, and reads the others to learn who is alive. A slot's
//! holder is alive while its record keeps changing within a lease duration
//! (judged on the local clock, as the elector judges expiry).
//!
//! Slots rather than a list of Leases: the Lease calls the client offers
//! are get, create and update, and a slot per replica needs no other.

use super::Sharding;
use crate::leader::{ElectionStep, LeaseElector};
use crate::{Clock, Error};
use blue_kubernetes_client::Client;

/// This replica's view of the membership.
#[derive(Debug)]
pub(crate) struct Roster {
    identity: String,
    /// One elector per slot: the one for our slot renews it, the others
    /// only look (or, while we hold none, try to take a free one).
    slots: Vec<LeaseElector>,
    mine: Option<usize>,
}

impl Roster {
    pub(crate) fn new(settings: &Sharding) -> Result<Self, Error> {
        let slots = (0..settings.max_members)
            .map(|k| LeaseElector::new(settings.member_lease(k)))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            identity: settings.lease.identity.clone(),
            slots,
            mine: None,
        })
    }

    /// One round: renew our slot (or take the first free one), read the
    /// others, and return the live members, sorted, ourselves included
    /// only while we hold a slot.
    pub(crate) async fn step(&mut self, client: &dyn Client, now: &Clock) -> Vec<String> {
        if let Some(k) = self.mine {
            let step = self.slots[k].step(client, now).await;
            if step == ElectionStep::Lost || !self.slots[k].may_dispatch(now()) {
                tracing::warn!(
                    slot = k,
                    "sharding: membership slot lost; taking part again"
                );
                self.mine = None;
            }
        }
        for k in 0..self.slots.len() {
            if self.mine == Some(k) {
                continue;
            }
            let slot = &mut self.slots[k];
            if self.mine.is_none() {
                // Never takes a live slot: only a free or expired one.
                if slot.step(client, now).await == ElectionStep::Leading {
                    tracing::info!(slot = k, identity = %self.identity, "sharding: joined as a member");
                    self.mine = Some(k);
                }
            } else {
                slot.look(client, now).await;
            }
        }
        self.members(now())
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
