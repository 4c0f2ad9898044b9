//! The sharding task next to the runtime. Each round reads every Lease
//! at once (one list), renews this replica's membership slot with a write
//! guarded by the version the list shows, assigns the shards to the live
//! members, takes the shards assigned here, and gives up the others, each
//! only once its running passes have ended. Steady state: one list and
//! one write per round, whatever the number of shards or resources.
//!
//! # The right to a shard
//! A shard Lease is taken by a write guarded by the version read (so of
//! two takers one wins) and is then not renewed: it names its holder until
//! the holder releases it. The holder's right to dispatch and write under
//! it is carried by its membership slot: each renewal of the slot that
//! started at `s` lets it dispatch until `s` + renew deadline and write
//! until `s` + lease duration (the shard's gate, as for leader election).
//!
//! Another replica takes a shard over only when its Lease is released, or
//! when its holder has no live slot: the slot has not changed for a lease
//! duration since it was seen, or no slot has named the holder for that
//! long. A renewal of the holder's slot that lands after that moment
//! would extend nothing: a renewal counts only if its answer arrives while
//! the previous one's lease duration runs ([`Standing::Renewed`]), and
//! such a renewal lands before any other replica can see the slot expire.
//! One that arrives later ([`Standing::Restarted`]), or a slot found lost,
//! stops every shard at once, and each is dispatched again only after it
//! is taken again by a guarded write, which fails if another replica took
//! it meanwhile. The fencing token is kept on the shard Lease by the
//! elector (see `leader::token`) and grows with every new owner.

use super::{assign, Reader, Roster, ShardTable, ShardingConfig, Standing, View};
use crate::clock::Clock;
use crate::leader::{LeaseElector, Takeover};
use crate::Error;
use blue_kubernetes_client::{Client, ErrorKind};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Called with a shard this replica starts dispatching, so the resources
/// the runtime set aside for it are looked at again.
pub(crate) type OnGained = Arc<dyn Fn(u32) + Send + Sync>;

/// Everything one round needs.
pub(crate) struct Sharder {
    settings: ShardingConfig,
    table: Arc<ShardTable>,
    reader: Reader,
    roster: Roster,
    shards: Vec<LeaseElector>,
    /// Per shard: held, and its gate runs with the current slot renewals
    /// (false after a restart until it is taken again).
    verified: Vec<bool>,
    /// Per shard: dispatching after the last round; when its drain began.
    dispatching: Vec<bool>,
    drain_began: Vec<Option<u64>>,
    /// The start of the slot renewal this round made, if it made one.
    renewed: Option<u64>,
    /// Why the last view could not be read, if it could not.
    failing: Option<ErrorKind>,
    client: Arc<dyn Client>,
    now: Clock,
    on_gained: OnGained,
}

impl Sharder {
    pub(crate) fn new(
        settings: ShardingConfig,
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
            reader: Reader::new(&settings.lease.lease_namespace),
            settings,
            table,
            roster,
            shards,
            verified: vec![false; n],
            dispatching: vec![false; n],
            drain_began: vec![None; n],
            renewed: None,
            failing: None,
            client,
            now,
            on_gained,
        })
    }

    /// One round: the view, membership, assignment, then every shard held
    /// or assigned here.
    pub(crate) async fn round(&mut self) {
        let client = self.client.clone();
        let started = (self.now)();
        let view = match self.read(client.as_ref()).await {
            Some(view) => view,
            None => {
                // Nothing renewed: the gates run out on their own.
                self.renewed = None;
                (0..self.settings.shards).for_each(|shard| self.report(shard));
                return;
            }
        };
        let standing = self
            .roster
            .step(&view, started, client.as_ref(), &self.now)
            .await;
        self.renewed = match standing {
            Standing::Renewed { started } => {
                self.extend(started);
                Some(started)
            }
            Standing::Restarted { started } => {
                self.stop_all("membership renewed only after it had run out");
                Some(started)
            }
            Standing::Lost => {
                self.stop_all("membership slot lost");
                None
            }
            Standing::Unrenewed => None,
        };
        let now = (self.now)();
        let members = self.roster.members(now);
        let me = &self.settings.lease.identity;
        let mine = members.iter().position(|m| m == me);
        let owners = assign(self.settings.shards, &members);
        for shard in 0..self.settings.shards {
            let assigned = mine.is_some() && owners[shard as usize] == mine;
            self.tend(shard, assigned, &view).await;
        }
    }

    /// The round's view; `None` (logged once per failing stretch) when it
    /// cannot be read.
    async fn read(&mut self, client: &dyn Client) -> Option<View> {
        // Read one by one, only the shards that may be taken here need be.
        let wanted: Vec<String> = (0..self.settings.shards)
            .filter(|&s| !self.verified[s as usize])
            .map(|s| self.settings.shard_lease_name(s))
            .collect();
        let result = self
            .reader
            .read(client, &wanted, &self.roster.names())
            .await;
        match (result, self.failing) {
            (Ok(view), failing) => {
                if failing.is_some() {
                    tracing::info!("sharding: the Leases are readable again");
                }
                self.failing = None;
                Some(view)
            }
            (Err(kind), None) => {
                tracing::warn!(%kind, "sharding: reading the Leases fails; retrying");
                self.failing = Some(kind);
                None
            }
            (Err(_), Some(_)) => None,
        }
    }

    /// Every shard held here runs on with the slot renewal from `started`.
    fn extend(&mut self, started: u64) {
        let lease = &self.settings.lease;
        for (i, elector) in self.shards.iter().enumerate() {
            if elector.held() && self.verified[i] {
                (elector.gate).renewed(started, lease.renew_deadline_ms, lease.lease_duration_ms);
            }
        }
    }

    /// Stops dispatching and writing under every shard at once; each must
    /// be taken again before it runs here again.
    fn stop_all(&mut self, why: &str) {
        if self.verified.iter().any(|v| *v) {
            tracing::warn!(why, "sharding: every shard stops until it is taken again");
        }
        for (i, elector) in self.shards.iter().enumerate() {
            elector.gate.revoke();
            self.verified[i] = false;
        }
    }

    async fn tend(&mut self, shard: u32, assigned: bool, view: &View) {
        let i = shard as usize;
        let now = (self.now)();
        let current = view.get(&self.settings.shard_lease_name(shard));
        if let Some(current) = current {
            // Another holder named: lost (its gate stops at once).
            self.shards[i].seen(current, now);
            if !self.shards[i].held() {
                self.verified[i] = false;
            }
        }
        if assigned {
            self.table.set_draining(shard, false);
            self.drain_began[i] = None;
            if !self.verified[i] {
                if let (Some(current), Some(renewed)) = (current, self.renewed) {
                    self.take(shard, current.cloned(), renewed).await;
                }
            }
        } else if self.shards[i].held() {
            if !self.table.set_draining(shard, true) {
                self.drain_began[i] = Some(now);
            }
            // Kept (its gate runs with the slot) while its passes finish,
            // so their writes land; released only then.
            if self.table.idle(shard) {
                self.release(shard).await;
            }
        } else if let Some(Some(stale)) = current {
            // Named ours, though not held here (a release that failed):
            // released again, or its next owner would wait for us to go.
            if stale.spec.holder() == Some(self.settings.lease.identity.as_str())
                && self.table.idle(shard)
            {
                if let Err(e) = self.client.release_lease(stale).await {
                    tracing::warn!(shard, error = %e, "sharding: releasing a shard failed");
                }
            }
        }
        self.report(shard);
    }

    /// Takes `shard` (its record `current`) if it is free, ours, or held
    /// by a replica that is gone; its gate then runs with the slot renewal
    /// from `renewed`.
    async fn take(
        &mut self,
        shard: u32,
        current: Option<blue_kubernetes_client::Lease>,
        renewed: u64,
    ) {
        let i = shard as usize;
        let now = (self.now)();
        let me = self.settings.lease.identity.as_str();
        let takeover = match current.as_ref().and_then(|c| c.spec.holder()) {
            None => Takeover::Now,
            Some(holder) if holder == me => Takeover::Now,
            Some(holder) if self.roster.gone(holder, now) => Takeover::Now,
            Some(_) => Takeover::Never,
        };
        if takeover == Takeover::Never {
            return;
        }
        let elector = &mut self.shards[i];
        let step =
            (elector.act_on(current, renewed, self.client.as_ref(), &self.now, takeover)).await;
        if step == crate::leader::ElectionStep::Leading {
            let lease = &self.settings.lease;
            (elector.gate).renewed(renewed, lease.renew_deadline_ms, lease.lease_duration_ms);
            self.verified[i] = true;
        }
    }

    async fn release(&mut self, shard: u32) {
        let i = shard as usize;
        self.verified[i] = false;
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
            let token = self.shards[i].fencing_token(now);
            let token = token.map(tracing::field::display);
            tracing::info!(shard, token, "sharding: shard gained");
            (self.on_gained)(shard);
        } else if was && !is {
            metrics.lost.inc();
            metrics.owned.dec();
            let why = if self.drain_began[i].is_some() {
                "reassigned: its running passes finish, then it is released"
            } else if self.shards[i].may_write(now) {
                "no membership renewal within the renew deadline"
            } else {
                "another holder has it, it was released, or membership ran out"
            };
            tracing::info!(shard, why, "sharding: shard lost");
        }
    }

    /// The runtime stopped (its passes have ended): give every shard and
    /// the membership slot up, so the others take over at once.
    pub(crate) async fn leave(&mut self) {
        for shard in 0..self.settings.shards {
            if self.shards[shard as usize].held() {
                if !self.table.set_draining(shard, true) {
                    self.drain_began[shard as usize] = Some((self.now)());
                }
                self.release(shard).await;
            }
            self.report(shard);
        }
        self.roster.leave(self.client.as_ref()).await;
    }

    /// How long to wait before the next round.
    fn next_round_in(&self) -> Duration {
        let period = self.settings.lease.retry_period_ms;
        Duration::from_millis(self.roster.next_round_in((self.now)(), period))
    }
}

/// Runs rounds every retry period (sooner when another member's slot
/// expires sooner, and at once when a shard being given up becomes idle)
/// until `stop` fires, then leaves.
pub(crate) async fn run(mut sharder: Sharder, mut stop: watch::Receiver<bool>) {
    let table = sharder.table.clone();
    loop {
        sharder.round().await;
        tokio::select! {
            _ = tokio::time::sleep(sharder.next_round_in()) => {}
            _ = table.drained.notified() => {}
            _ = stop.changed() => break,
        }
        if *stop.borrow() {
            break;
        }
    }
    sharder.leave().await;
}
