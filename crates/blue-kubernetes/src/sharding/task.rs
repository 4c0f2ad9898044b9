//! The sharding task next to the runtime: each round it renews this
//! replica's membership, assigns the shards to the live members, takes or
//! renews the shards assigned here, and gives up the others, each only
//! once its running passes have ended.
//!
//! A shard is dispatched here only while its Lease is held within the
//! renew deadline (the gate, as for leader election); a shard being given
//! up keeps being renewed until its passes end, so their writes are not
//! fenced, and is released only then. Its new owner takes it at its next
//! round after the release is visible, or, if this replica died, once the
//! record has not changed for a lease duration.

use super::{assign, Roster, ShardTable, Sharding};
use crate::leader::LeaseElector;
use crate::{Clock, Error};
use blue_kubernetes_client::Client;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Called with a shard this replica starts dispatching, so the resources
/// the runtime set aside for it are looked at again.
pub(crate) type OnGained = Arc<dyn Fn(u32) + Send + Sync>;

/// Everything one round needs.
pub(crate) struct Sharder {
    settings: Sharding,
    table: Arc<ShardTable>,
    roster: Roster,
    shards: Vec<LeaseElector>,
    /// Per shard: dispatching after the last round; when its drain began.
    dispatching: Vec<bool>,
    drain_began: Vec<Option<u64>>,
    client: Arc<dyn Client>,
    now: Clock,
    on_gained: OnGained,
}

impl Sharder {
    pub(crate) fn new(
        settings: Sharding,
        table: Arc<ShardTable>,
        client: Arc<dyn Client>,
        now: Clock,
        on_gained: OnGained,
    ) -> Result<Self, Error> {
        let roster = Roster::new(&settings)?;
        let shards = (0..settings.shards)
            .map(|i| {
                let mut elector = LeaseElector::new(settings.shard_lease(i))?;
                elector.gate = table.gate(i).clone();
                Ok(elector)
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let n = settings.shards as usize;
        Ok(Self {
            settings,
            table,
            roster,
            shards,
            dispatching: vec![false; n],
            drain_began: vec![None; n],
            client,
            now,
            on_gained,
        })
    }

    /// One round: membership, assignment, then every shard held or
    /// assigned here.
    pub(crate) async fn round(&mut self) {
        let client = self.client.clone();
        let members = self.roster.step(client.as_ref(), &self.now).await;
        let me = &self.settings.lease.identity;
        let mine = members.iter().position(|m| m == me);
        let owners = assign(self.settings.shards, &members);
        for shard in 0..self.settings.shards {
            let assigned = mine.is_some() && owners[shard as usize] == mine;
            self.tend(shard, assigned).await;
        }
    }

    async fn tend(&mut self, shard: u32, assigned: bool) {
        let i = shard as usize;
        let client = self.client.as_ref();
        let elector = &mut self.shards[i];
        if assigned {
            self.table.set_draining(shard, false);
            self.drain_began[i] = None;
            elector.step(client, &self.now).await;
        } else if elector.may_write((self.now)()) {
            if !self.table.set_draining(shard, true) {
                self.drain_began[i] = Some((self.now)());
            }
            if self.table.idle(shard) {
                self.release(shard).await;
            } else {
                // Renewed while its passes finish, so their writes land.
                elector.step(client, &self.now).await;
            }
        }
        self.report(shard);
    }

    async fn release(&mut self, shard: u32) {
        let i = shard as usize;
        let lease = self.shards[i].settings().lease_name.clone();
        match self.shards[i].release(self.client.as_ref()).await {
            Ok(_) => {
                let began = self.drain_began[i].take().unwrap_or((self.now)());
                let drained_ms = (self.now)().saturating_sub(began);
                self.table
                    .metrics
                    .drain
                    .observe(Duration::from_millis(drained_ms).as_secs_f64());
                tracing::debug!(%lease, drained_ms, "sharding: shard released");
            }
            Err(e) => tracing::warn!(%lease, error = %e, "sharding: releasing a shard failed"),
        }
    }

    /// One INFO line, and the metrics, when `shard` starts or stops being
    /// dispatched here.
    fn report(&mut self, shard: u32) {
        let i = shard as usize;
        let now = (self.now)();
        let is = self.table.dispatching(shard, now);
        let was = std::mem::replace(&mut self.dispatching[i], is);
        let metrics = &self.table.metrics;
        if is && !was {
            metrics.gained.inc();
            metrics.owned.inc();
            let token = self.table.gate(shard).token(now);
            tracing::info!(shard, token, "sharding: shard gained");
            (self.on_gained)(shard);
        } else if was && !is {
            metrics.lost.inc();
            metrics.owned.dec();
            let why = if self.drain_began[i].is_some() {
                "reassigned: its running passes finish, then it is released"
            } else if self.shards[i].may_write(now) {
                "no renewal within the renew deadline"
            } else {
                "another holder has it, or it was released"
            };
            tracing::info!(shard, why, "sharding: shard lost");
        }
    }

    /// The runtime stopped (its passes have ended): give every shard and
    /// the membership slot up, so the others take over at once.
    pub(crate) async fn leave(&mut self) {
        for shard in 0..self.settings.shards {
            if self.shards[shard as usize].may_write((self.now)()) {
                if !self.table.set_draining(shard, true) {
                    self.drain_began[shard as usize] = Some((self.now)());
                }
                self.release(shard).await;
            }
            self.report(shard);
        }
        self.roster.leave(self.client.as_ref()).await;
    }
}

/// Runs rounds every retry period (and at once when a shard being given
/// up becomes idle) until `stop` fires, then leaves.
pub(crate) async fn run(mut sharder: Sharder, mut stop: watch::Receiver<bool>) {
    let period = Duration::from_millis(sharder.settings.lease.retry_period_ms);
    let table = sharder.table.clone();
    loop {
        sharder.round().await;
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = table.drained.notified() => {}
            _ = stop.changed() => break,
        }
        if *stop.borrow() {
            break;
        }
    }
    sharder.leave().await;
}
