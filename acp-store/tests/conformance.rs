//! The shared `SessionStore` conformance suite (`acp_store::conformance`) against the stores
//! of this crate: `MemoryStore`, `JsonlStore` and `SqliteStore` (a fresh directory per case).
//!
//! `cargo test -p acp-store --features test-support --test conformance`.
#![cfg(feature = "test-support")]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh store directory per case (removed when the test process starts over).
fn fresh_dir(kind: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "acp-store-conformance-{kind}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
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
