//! Ctrl-C (SIGINT) and SIGTERM as a flag, so long runs stop between checks
//! and still clean up through their guards instead of dying mid-way.
//!
//! The signals are blocked in the calling thread (call [`install`] first
//! thing, before any other thread exists, so every thread inherits the
//! mask) and a dedicated thread waits for them. Children inherit the
//! blocked mask (`std::process::Command` does not reset it), which is fine
//! for short kubectl runs but not for processes we later stop with SIGTERM:
//! start those inside [`with_default_mask`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::sys::signal::{SigSet, Signal};

static REQUESTED: AtomicBool = AtomicBool::new(false);
static INSTALLED: OnceLock<()> = OnceLock::new();

fn signals() -> SigSet {
    SigSet::from_iter([Signal::SIGINT, Signal::SIGTERM])
}

/// Blocks SIGINT/SIGTERM and starts the waiting thread (once per process).
pub fn install() -> Result<()> {
    if INSTALLED.get().is_some() {
        return Ok(());
    }
    let set = signals();
    set.thread_block().context("blocking SIGINT/SIGTERM")?;
    thread::Builder::new()
        .name("interrupt".into())
        .spawn(move || loop {
            if let Ok(sig) = set.wait() {
                eprintln!("\n{sig} received: stopping and cleaning up");
                REQUESTED.store(true, Ordering::SeqCst);
            }
        })
        .context("starting the signal thread")?;
    let _ = INSTALLED.set(());
    Ok(())
}

/// Runs `f` (which spawns long-lived children) with SIGINT/SIGTERM
/// unblocked in this thread, so the children start with them deliverable.
/// A signal arriving in that short window terminates xtask the default
/// way; the watchdogs then clean up.
pub fn with_default_mask<T>(f: impl FnOnce() -> T) -> T {
    if INSTALLED.get().is_none() {
        return f();
    }
    let set = signals();
    let unblocked = set.thread_unblock().is_ok();
    let result = f();
    if unblocked {
        // Re-blocking only fails for invalid arguments, which these are not.
        let _ = set.thread_block();
    }
    result
}

/// True once SIGINT or SIGTERM arrived.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// Sleeps up to `duration`; returns early (true) when interrupted.
pub fn sleep(duration: Duration) -> bool {
    let deadline = Instant::now() + duration;
    loop {
        if requested() {
            return true;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        thread::sleep(left.min(Duration::from_millis(50)));
    }
}
