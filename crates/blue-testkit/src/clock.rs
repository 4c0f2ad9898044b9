//! A manually driven clock in milliseconds since the Unix epoch.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// 2024-01-01T00:00:00Z, the instant a default [`FakeClock`] starts at.
///
/// ```
/// assert_eq!(blue_testkit::DEFAULT_START_MS, 1_704_067_200_000);
/// ```
pub const DEFAULT_START_MS: u64 = 1_704_067_200_000;

/// A clock that only moves when told to.
///
/// Clones share one counter, so a test can keep a handle, give another to the
/// code under test (through [`FakeClock::as_fn`]) and move time for both.
///
/// ```
/// use blue_testkit::FakeClock;
/// let clock = FakeClock::new(1_000);
/// let now = clock.as_fn();
/// clock.advance(500);
/// assert_eq!(now(), 1_500);
/// ```
#[derive(Clone, Debug)]
pub struct FakeClock {
    ms: Arc<AtomicU64>,
}

impl Default for FakeClock {
    /// A clock at [`DEFAULT_START_MS`].
    ///
    /// ```
    /// use blue_testkit::{FakeClock, DEFAULT_START_MS};
    /// assert_eq!(FakeClock::default().now_ms(), DEFAULT_START_MS);
    /// ```
    fn default() -> Self {
        Self::new(DEFAULT_START_MS)
    }
}

impl FakeClock {
    /// A clock reading `start_ms` milliseconds since the Unix epoch.
    ///
    /// ```
    /// let clock = blue_testkit::FakeClock::new(42);
    /// assert_eq!(clock.now_ms(), 42);
    /// ```
    pub fn new(start_ms: u64) -> Self {
        Self {
            ms: Arc::new(AtomicU64::new(start_ms)),
        }
    }

    /// The current reading, in milliseconds since the Unix epoch.
    ///
    /// ```
    /// let clock = blue_testkit::FakeClock::new(7);
    /// assert_eq!(clock.now_ms(), 7);
    /// ```
    pub fn now_ms(&self) -> u64 {
        self.ms.load(Ordering::SeqCst)
    }

    /// Moves the clock forward by `ms` milliseconds (saturating).
    ///
    /// ```
    /// let clock = blue_testkit::FakeClock::new(0);
    /// clock.advance(1_000);
    /// clock.advance(1);
    /// assert_eq!(clock.now_ms(), 1_001);
    /// ```
    pub fn advance(&self, ms: u64) {
        // fetch_update never fails with a closure that always returns Some.
        let _ = self
            .ms
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_add(ms))
            });
    }

    /// Sets the clock to `ms`; it may move backwards.
    ///
    /// ```
    /// let clock = blue_testkit::FakeClock::new(100);
    /// clock.set(5);
    /// assert_eq!(clock.now_ms(), 5);
    /// ```
    pub fn set(&self, ms: u64) {
        self.ms.store(ms, Ordering::SeqCst);
    }

    /// The clock as the closure type the controller's `now` setting takes.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let clock = blue_testkit::FakeClock::new(10);
    /// let now: Arc<dyn Fn() -> u64 + Send + Sync> = clock.as_fn();
    /// clock.set(20);
    /// assert_eq!(now(), 20);
    /// ```
    pub fn as_fn(&self) -> Arc<dyn Fn() -> u64 + Send + Sync> {
        let ms = Arc::clone(&self.ms);
        Arc::new(move || ms.load(Ordering::SeqCst))
    }

    /// The current reading as an RFC 3339 timestamp with second precision,
    /// the format Kubernetes uses for `creationTimestamp`.
    ///
    /// ```
    /// let clock = blue_testkit::FakeClock::new(blue_testkit::DEFAULT_START_MS + 1_999);
    /// assert_eq!(clock.rfc3339(), "2024-01-01T00:00:01Z");
    /// ```
    pub fn rfc3339(&self) -> String {
        rfc3339(self.now_ms())
    }
}

/// Formats milliseconds since the Unix epoch as an RFC 3339 timestamp with
/// second precision (milliseconds are truncated), e.g. `2024-01-01T00:00:00Z`.
///
/// ```
/// assert_eq!(blue_testkit::rfc3339(0), "1970-01-01T00:00:00Z");
/// ```
pub fn rfc3339(ms: u64) -> String {
    let at = SystemTime::UNIX_EPOCH + Duration::from_millis(ms);
    humantime::format_rfc3339_seconds(at).to_string()
}
