//! blue-identity (placeholder).
