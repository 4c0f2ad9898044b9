//! blue-testkit (placeholder).
