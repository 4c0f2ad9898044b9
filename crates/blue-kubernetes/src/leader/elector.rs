//! The leader-election state machine: one acquire-or-renew attempt per
//! [`LeaseElector::step`], on an injected clock, with client-go's rules.
//!
//! Expiry is judged on the local clock from the moment a change of the
//! record was *observed*, never from the times written in it, so clocks of
//! different machines need not agree; only their rates must.

use super::gate::Gate;
use super::token::{self, FencingToken};
use crate::clock::Clock;
use crate::replicas::LeaderElectionConfig;
use crate::Error;
use blue_kubernetes_client::{Client, ErrorKind, Lease, LeaseSpec};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

/// What one [`LeaseElector::step`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ElectionStep {
    /// This process acquired or renewed the lease.
    Leading,
    /// Another holder's lease has not expired; nothing was written.
    Following,
    /// This process was leading and provably is not any more (its renewal
    /// lost a conflict, or the record names another holder): dispatching
    /// and writing stop at once.
    Lost,
    /// The attempt failed (e.g. the API server is unreachable); a leader
    /// keeps leading until its renew deadline passes.
    Failed,
}

/// When [`LeaseElector::act_on`] may take over a record another holder
/// names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Takeover {
    /// Once it has not changed for a lease duration (leader election, and
    /// the membership slots).
    AfterExpiry,
    /// At once: the caller knows the holder is gone (a shard whose holder
    /// has no live membership slot).
    Now,
    /// Never (our own membership slot, which only we renew).
    Never,
}

/// A Lease record as last seen, and when (local clock) it was first seen.
#[derive(Debug)]
struct Observed {
    lease: Lease,
    at_ms: u64,
}

/// One candidate: tries to acquire the Lease, renews it while leading, and
/// tells the runtime whether it may dispatch work and write.
///
/// While leading, [`may_dispatch`](Self::may_dispatch) holds until the renew
/// deadline after the start of the last successful renewal, and
/// [`may_write`](Self::may_write) until the lease duration after it: no
/// other candidate can take over before then, because it must first see
/// the record unchanged for a whole lease duration, counted from a moment
/// after that renewal landed.
#[derive(Debug)]
pub struct LeaseElector {
    settings: LeaderElectionConfig,
    observed: Option<Observed>,
    /// Start of our last successful acquire or renew, while we hold it.
    renewed_at: Option<u64>,
    /// Why the last attempt failed, if it did (never the error's text).
    failure: Option<ErrorKind>,
    /// The token of our ownership, while we hold the Lease.
    token: Option<FencingToken>,
    /// The greatest token seen on the Lease (recorded there or ours): a
    /// record set back below it is not continued.
    highest: Option<FencingToken>,
    pub(crate) gate: Arc<Gate>,
}

impl LeaseElector {
    /// A candidate with validated `settings`; it holds nothing yet.
    pub fn new(settings: LeaderElectionConfig) -> Result<Self, Error> {
        settings.validate()?;
        Ok(Self {
            settings,
            observed: None,
            renewed_at: None,
            failure: None,
            token: None,
            highest: None,
            gate: Arc::default(),
        })
    }

    /// The settings this candidate runs with.
    pub fn settings(&self) -> &LeaderElectionConfig {
        &self.settings
    }

    /// True while this process may start new work at `now_ms`.
    pub fn may_dispatch(&self, now_ms: u64) -> bool {
        self.gate.may_dispatch(now_ms)
    }

    /// True while this process may write status and finalizers at `now_ms`.
    pub fn may_write(&self, now_ms: u64) -> bool {
        self.gate.may_write(now_ms)
    }

    /// The fencing token of this process's ownership, while it may write
    /// at `now_ms`: what callbacks receive.
    pub fn fencing_token(&self, now_ms: u64) -> Option<FencingToken> {
        self.gate.token(now_ms)
    }

    /// One attempt: read the Lease, then create it, renew it, take it over
    /// once expired, or leave it to its holder. Every write is guarded by
    /// the resourceVersion just read, so of two candidates acting on one
    /// record at most one succeeds.
    pub async fn step(&mut self, client: &dyn Client, now: &Clock) -> ElectionStep {
        let step = self.attempt(client, now).await;
        if step != ElectionStep::Failed {
            self.failure = None;
        }
        step
    }

    /// The kind of error that made the last [`step`](Self::step) fail
    /// (`None` after a step that did not fail), e.g. `Forbidden` when the
    /// Lease permissions are missing.
    pub fn last_failure(&self) -> Option<ErrorKind> {
        self.failure
    }

    async fn attempt(&mut self, client: &dyn Client, now: &Clock) -> ElectionStep {
        let started = now();
        let s = &self.settings;
        match client.get_lease(&s.lease_namespace, &s.lease_name).await {
            Ok(current) => {
                let takeover = Takeover::AfterExpiry;
                self.act_on(current, started, client, now, takeover).await
            }
            Err(e) => self.failed(e.kind()),
        }
    }

    /// One attempt on `current`, the record as read by a request that
    /// started at `started` (by [`step`](Self::step), or in the sharding
    /// roster's list of every Lease): create it, renew it, take it over as
    /// `takeover` allows, or leave it to its holder. Every write is
    /// guarded by the resourceVersion of `current`.
    pub(crate) async fn act_on(
        &mut self,
        current: Option<Lease>,
        started: u64,
        client: &dyn Client,
        now: &Clock,
        takeover: Takeover,
    ) -> ElectionStep {
        let s = &self.settings;
        let Some(current) = current else {
            let mut lease = Lease::new(
                &s.lease_namespace,
                &s.lease_name,
                self.spec_after(None, started),
            );
            let token = self.token_after(None, started);
            token::record(&mut lease, token);
            return match client.create_lease(&lease).await {
                Ok(stored) => self.won(stored, token, started, now()),
                Err(e) if matches!(e.kind(), ErrorKind::Forbidden | ErrorKind::Unauthorized) => {
                    self.failed(e.kind())
                }
                // Someone else created it first: read it next time.
                Err(_) => self.not_won(),
            };
        };
        self.observe(&current, now());
        let mine = current.spec.holder() == Some(self.settings.identity.as_str());
        if self.renewed_at.is_some() && !mine {
            return self.lose();
        }
        let may_take = match takeover {
            Takeover::AfterExpiry => self.expired(now()),
            Takeover::Now => true,
            Takeover::Never => false,
        };
        if !mine && current.spec.holder().is_some() && !may_take {
            return ElectionStep::Following;
        }
        let mut next = current.clone();
        next.spec = self.spec_after(Some(&current.spec), started);
        let token = self.token_after(Some(&current), started);
        token::record(&mut next, token);
        match client.update_lease(&next).await {
            Ok(stored) => self.won(stored, token, started, now()),
            Err(e) if e.is_conflict() => self.not_won(),
            Err(e) => self.failed(e.kind()),
        }
    }

    /// Records `current` (`None`: absent) as read at `now_ms`, writing
    /// nothing; a record naming another holder of a Lease we hold means
    /// we lost it: dispatching and writing stop at once.
    pub(crate) fn seen(&mut self, current: Option<&Lease>, now_ms: u64) {
        match current {
            Some(current) => self.observe(current, now_ms),
            None => self.observed = None,
        }
        let me = Some(self.settings.identity.as_str());
        if self.renewed_at.is_some() && self.holder() != me {
            self.lose();
        }
    }

    /// Whether this process holds the Lease: it won or renewed it and
    /// has not lost or released it since (its gate may have run out).
    pub(crate) fn held(&self) -> bool {
        self.renewed_at.is_some()
    }

    /// The holder the record last seen names, expired or not.
    pub(crate) fn holder(&self) -> Option<&str> {
        self.observed.as_ref()?.lease.spec.holder()
    }

    /// The holder of the record last seen, unless it has expired by
    /// `now_ms` (by the same rule that lets a candidate take it over).
    pub(crate) fn live_holder(&self, now_ms: u64) -> Option<&str> {
        let holder = self.observed.as_ref()?.lease.spec.holder()?;
        (!self.expired(now_ms)).then_some(holder)
    }

    /// Gives the lease up if this process holds it, so a follower takes
    /// over at its next attempt. Dispatching and writing stop first.
    /// Returns whether a release was written.
    pub async fn release(&mut self, client: &dyn Client) -> Result<bool, Error> {
        self.gate.revoke();
        self.token = None;
        if self.renewed_at.take().is_none() {
            return Ok(false);
        }
        let Some(observed) = self.observed.take() else {
            return Ok(false);
        };
        client.release_lease(&observed.lease).await?;
        Ok(true)
    }

    /// How long to wait before the next [`step`](Self::step): one retry
    /// period, or less when another holder's lease expires sooner, so a
    /// follower takes over at expiry rather than up to a retry period later.
    pub fn next_attempt_in_ms(&self, now_ms: u64) -> u64 {
        let retry = self.settings.retry_period_ms;
        let Some(o) = &self.observed else {
            return retry;
        };
        let other = o
            .lease
            .spec
            .holder()
            .is_some_and(|h| h != self.settings.identity);
        match self.expiry_ms() {
            Some(at) if self.renewed_at.is_none() && other && at > now_ms => {
                (at - now_ms).min(retry)
            }
            _ => retry,
        }
    }

    fn observe(&mut self, current: &Lease, at_ms: u64) {
        let changed = self
            .observed
            .as_ref()
            .is_none_or(|o| o.lease.resource_version != current.resource_version);
        if changed {
            self.saw(token::recorded(current).map(|(t, _)| t));
            self.observed = Some(Observed {
                lease: current.clone(),
                at_ms,
            });
        }
    }

    /// The holder has not changed the record for a whole lease duration
    /// (ours, or the one it recorded if longer).
    fn expired(&self, now_ms: u64) -> bool {
        self.expiry_ms().is_none_or(|at| now_ms >= at)
    }

    /// When the observed record expires on our clock, if one was observed.
    fn expiry_ms(&self) -> Option<u64> {
        let o = self.observed.as_ref()?;
        let recorded = o
            .lease
            .spec
            .lease_duration_seconds
            .map_or(0, |s| u64::try_from(s).unwrap_or(0) * 1000);
        let duration = self.settings.lease_duration_ms.max(recorded);
        Some(o.at_ms.saturating_add(duration))
    }

    /// The token of the write about to be sent on `current`: ours while
    /// we hold the Lease, else a new owner's (a record that names us while
    /// we do not hold it is no proof of anything: a forged write, or an
    /// earlier process under the same identity).
    fn token_after(&self, current: Option<&Lease>, started: u64) -> FencingToken {
        match self.token {
            Some(ours) if self.renewed_at.is_some() && current.is_some() => ours,
            _ => token::next(current, self.highest, started),
        }
    }

    fn saw(&mut self, token: Option<FencingToken>) {
        self.highest = self.highest.max(token);
    }

    fn spec_after(&self, previous: Option<&LeaseSpec>, started: u64) -> LeaseSpec {
        let me = self.settings.identity.as_str();
        let kept = previous.filter(|p| p.holder() == Some(me));
        // The API's count of holder changes, kept for the tools that show
        // it (never below zero, as the API server requires); the fencing
        // token does not rest on it.
        let transitions = previous
            .and_then(|p| p.lease_transitions)
            .unwrap_or(0)
            .max(0);
        LeaseSpec {
            holder_identity: Some(me.to_owned()),
            lease_duration_seconds: Some(self.settings.lease_duration_seconds()),
            acquire_time: match kept {
                Some(p) => p.acquire_time.clone(),
                None => Some(micro_time(started)),
            },
            renew_time: Some(micro_time(started)),
            lease_transitions: Some(match (kept, previous) {
                (Some(_), _) | (None, None) => transitions,
                (None, Some(_)) => transitions.saturating_add(1),
            }),
        }
    }

    fn won(
        &mut self,
        stored: Lease,
        token: FencingToken,
        started: u64,
        at_ms: u64,
    ) -> ElectionStep {
        self.renewed_at = Some(started);
        self.token = Some(token);
        self.saw(Some(token));
        self.gate.set_token(token);
        self.observed = Some(Observed {
            lease: stored,
            at_ms,
        });
        let s = &self.settings;
        self.gate
            .renewed(started, s.renew_deadline_ms, s.lease_duration_ms);
        ElectionStep::Leading
    }

    fn failed(&mut self, kind: ErrorKind) -> ElectionStep {
        self.failure = Some(kind);
        ElectionStep::Failed
    }

    fn not_won(&mut self) -> ElectionStep {
        match self.renewed_at {
            Some(_) => self.lose(),
            None => ElectionStep::Following,
        }
    }

    fn lose(&mut self) -> ElectionStep {
        self.renewed_at = None;
        self.token = None;
        self.gate.revoke();
        ElectionStep::Lost
    }
}

/// Kubernetes `MicroTime` text: RFC 3339 with exactly six fraction digits.
fn micro_time(ms: u64) -> String {
    humantime::format_rfc3339_micros(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_time_has_six_fraction_digits() {
        assert_eq!(micro_time(1_500), "1970-01-01T00:00:01.500000Z");
    }
}
