//! blue-kubernetes (placeholder).
