//! Nothing but tests: `tests/schema_1_20.rs` compares acp-types' unstable items with the
//! official schema crate 1.20.0, which cannot enter the workspace's lock (see `Cargo.toml`).
