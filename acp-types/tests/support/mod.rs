//! Shared helpers for acp-types' integration tests.
pub mod official;
