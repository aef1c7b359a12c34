//! Nothing but tests: `tests/schema_1_20.rs` compares acp-types' unstable items with the
//! official schema crate 1.20.0, which cannot enter the workspace's lock (see `Cargo.toml`);
//! `tests/unknown_fields.rs` reads a field no enabled feature names (the workspace's build has
//! them all on).
