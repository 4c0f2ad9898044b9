//! Captures `tracing` events emitted on the current thread, for asserting
//! on what the controller logs.
//!
//! A process-wide subscriber (installed once) rather than a scoped one:
//! with scoped subscribers, a test thread that hits a callsite first can
//! cache "no interest" for everyone, and events go missing at random.

use std::cell::RefCell;
use std::fmt::Write;
use std::sync::Once;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// One event: its level and its fields rendered as `name=value` pairs.
pub type Line = (Level, String);

thread_local! {
    static CAPTURED: RefCell<Option<Vec<Line>>> = const { RefCell::new(None) };
}

struct ThreadCapture;

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, "{}={value:?} ", field.name());
    }
}

impl Subscriber for ThreadCapture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        CAPTURED.with(|captured| {
            if let Some(lines) = captured.borrow_mut().as_mut() {
                let mut fields = Fields(String::new());
                event.record(&mut fields);
                lines.push((*event.metadata().level(), fields.0));
            }
        });
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Runs `f` on this thread and returns it with the events it emitted here.
pub fn capture<T>(f: impl FnOnce() -> T) -> (T, Vec<Line>) {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        tracing::subscriber::set_global_default(ThreadCapture).expect("no other global subscriber");
    });
    CAPTURED.with(|c| *c.borrow_mut() = Some(Vec::new()));
    let value = f();
    let lines = CAPTURED.with(|c| c.borrow_mut().take()).unwrap_or_default();
    (value, lines)
}
