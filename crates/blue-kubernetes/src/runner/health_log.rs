//! Log lines for the people who run the operator when its state flips:
//! cluster calls failing or succeeding again, leadership gained or lost.
//! One line per flip, so a long outage costs one line.

use crate::{telemetry::Stats, Runtime};

/// What the last look at the runtime showed.
#[derive(Default)]
pub(crate) struct HealthLog {
    last: Stats,
    failing: bool,
    /// Leader election is on, so leadership flips are worth a line.
    elected: bool,
    leading: bool,
}

impl HealthLog {
    pub(crate) fn new(elected: bool) -> Self {
        Self {
            elected,
            ..Self::default()
        }
    }

    /// Looks at `runtime`'s counters since the last look.
    pub(crate) fn check(&mut self, runtime: &Runtime) {
        let now = runtime.stats();
        let leading = runtime.is_leader();
        if self.elected && leading != self.leading {
            match leading {
                true => tracing::info!("leading: this replica reconciles"),
                false => tracing::info!("not leading: waiting for the lease"),
            }
            self.leading = leading;
        }
        if now.fenced_writes > self.last.fenced_writes {
            tracing::warn!("lease expired while reconciles ran: their status writes were refused");
        }
        let failures = |s: &Stats| s.transport_failures.values().sum::<u64>() + s.reconcile_errors;
        let failed = failures(&now) > failures(&self.last);
        // Lists are rare while watching: events and reconciles show
        // success too.
        let progressed = now.polls > self.last.polls
            || now.watch_events > self.last.watch_events
            || now.reconciles > self.last.reconciles;
        if failed && !self.failing {
            tracing::warn!("cluster calls failing (cluster unreachable, credentials rejected or a write refused); retrying");
            self.failing = true;
        } else if progressed && !failed && self.failing {
            tracing::info!("cluster calls succeeding again");
            self.failing = false;
        }
        self.last = now;
    }
}
