//! The shared `SessionStore` conformance suite (`acp_store::conformance`) against the stores
//! of this crate: `MemoryStore`, `JsonlStore` and `SqliteStore` (a fresh directory per case).
//!
//! `cargo test -p acp-store --features test-support --test conformance`.
#![cfg(feature = "test-support")]

use std::path::PathBuf;

/// A fresh store directory per case.
fn fresh_dir(kind: &str) -> PathBuf {
    acp_store::conformance::scratch_dir(kind)
}

mod memory {
    acp_store::session_store_conformance!(async { acp_store::MemoryStore::new() });
}

mod jsonl {
    acp_store::session_store_conformance!(async {
        acp_store::JsonlStore::open(super::fresh_dir("jsonl")).expect("the store opens")
    });
}

mod sqlite {
    acp_store::session_store_conformance!(async {
        acp_store::SqliteStore::open(super::fresh_dir("sqlite")).expect("the store opens")
    });
}
