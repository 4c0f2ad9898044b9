//! The controller's clock: milliseconds since the Unix epoch, the system's
//! or a test's fake one.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A clock returning milliseconds since the Unix epoch. Inject a fake one in tests.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// The system clock.
pub fn system_clock() -> Clock {
    Arc::new(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    })
}
