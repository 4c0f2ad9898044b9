//! The queue between a pass and the API server for Events: a pass pushes
//! and moves on; one background task writes them in order (so a repeat
//! finds its series' Event already stored and raises its count), like
//! client-go's event broadcaster.
//!
//! A Normal Reconciling Event waits [`RECONCILING_GRACE`] before it is
//! written, while other Events go on: most passes end well within it, and
//! their outcome replaces it (a new resource costs one Event write, not
//! two, even when the writer is idle). A flush writes the waiting ones at
//! once.
//!
//! The writer is started on the first push, inside whatever tokio runtime
//! the pass runs on, and ends when the recorder is dropped. Should that
//! runtime go away first (a controller used from several runtimes), the
//! next push starts a new writer. A full queue drops the Event (counted as
//! `dropped`), as the rate limit does: Events are advice, never worth
//! blocking a reconcile for.

use super::{Outgoing, Shared};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{mpsc, Notify};
use tokio::time::{sleep_until, Instant};

/// Events queued at most; beyond this they are dropped.
const CAPACITY: usize = 1024;

/// How long a Normal Reconciling Event waits for its object's outcome.
pub(crate) const RECONCILING_GRACE: Duration = Duration::from_secs(1);

#[derive(Default)]
pub(super) struct Outbox {
    sender: Mutex<Option<mpsc::Sender<Outgoing>>>,
    pending: Arc<Pending>,
}

/// Queued writes not yet finished, and a wake-up for whoever waits for none.
#[derive(Default)]
struct Pending {
    count: AtomicUsize,
    drained: Notify,
    /// A flush asks the writer to write waiting Events now.
    hurry: Notify,
}

impl Pending {
    fn finish(&self) {
        if self.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.drained.notify_waiters();
        }
    }
}

impl Outbox {
    /// Queues `outgoing`; false when it was dropped (queue full, or no
    /// tokio runtime to write from).
    pub(super) fn push(&self, shared: &Arc<Shared>, outgoing: Outgoing) -> bool {
        let mut sender = self.sender.lock().unwrap_or_else(PoisonError::into_inner);
        self.pending.count.fetch_add(1, Ordering::AcqRel);
        let mut outgoing = outgoing;
        // At most twice: a writer whose runtime ended is replaced once.
        for _ in 0..2 {
            let tx = match sender.as_ref() {
                Some(tx) => tx,
                None => match self.start(shared) {
                    Some(tx) => sender.insert(tx),
                    None => break,
                },
            };
            match tx.try_send(outgoing) {
                Ok(()) => return true,
                Err(mpsc::error::TrySendError::Full(_)) => break,
                Err(mpsc::error::TrySendError::Closed(back)) => {
                    outgoing = back;
                    *sender = None;
                }
            }
        }
        self.pending.finish();
        false
    }

    fn start(&self, shared: &Arc<Shared>) -> Option<mpsc::Sender<Outgoing>> {
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let (tx, rx) = mpsc::channel::<Outgoing>(CAPACITY);
        let (shared, pending) = (shared.clone(), self.pending.clone());
        runtime.spawn(write_all(rx, shared, pending));
        Some(tx)
    }

    /// Waits until nothing queued is left unwritten, Events waiting out
    /// their grace included (written at once).
    pub(super) async fn flush(&self) {
        self.pending.hurry.notify_one();
        loop {
            // Registered before the check, so a finish in between wakes it.
            let drained = self.pending.drained.notified();
            if self.pending.count.load(Ordering::Acquire) == 0 {
                return;
            }
            drained.await;
        }
    }
}

/// The writer: Events in the order they came, but for Normal Reconciling
/// ones, which wait their grace (in order) unless a flush hurries them.
async fn write_all(mut rx: mpsc::Receiver<Outgoing>, shared: Arc<Shared>, pending: Arc<Pending>) {
    let mut waiting: VecDeque<(Instant, Outgoing)> = VecDeque::new();
    let write = |o| async {
        shared.write(o).await;
        pending.finish();
    };
    loop {
        let due = waiting.front().map(|(at, _)| *at);
        tokio::select! {
            biased;
            received = rx.recv() => match received {
                Some(o) if o.waits() => waiting.push_back((Instant::now() + RECONCILING_GRACE, o)),
                Some(o) => write(o).await,
                None => break,
            },
            // Always listened to, so a flush with nothing waiting leaves no
            // stale permit to hurry a later Event.
            () = pending.hurry.notified() => {
                for (_, o) in std::mem::take(&mut waiting) {
                    write(o).await;
                }
            }
            () = sleep_until(due.unwrap_or_else(Instant::now)), if due.is_some() => {
                if let Some((_, o)) = waiting.pop_front() {
                    write(o).await;
                }
            }
        }
    }
    for (_, o) in waiting {
        write(o).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn flush_returns_at_once_when_nothing_is_queued() {
        Outbox::default().flush().await;
    }

    #[tokio::test]
    async fn the_last_finish_wakes_a_flush() {
        let outbox = Arc::new(Outbox::default());
        outbox.pending.count.store(2, Ordering::Release);
        let waiting = tokio::spawn({
            let outbox = outbox.clone();
            async move { outbox.flush().await }
        });
        tokio::task::yield_now().await;
        outbox.pending.finish();
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "one write is still pending");
        outbox.pending.finish();
        waiting.await.unwrap();
        assert_eq!(outbox.pending.count.load(Ordering::Acquire), 0);
    }
}
