//! The shared `SessionStore` conformance suite (`acp_agent::store::conformance`) against the
//! two stores of this crate: `MemoryStore` and `JsonlStore` (a fresh directory per case).
//!
//! `cargo test -p acp-agent --features test-support --test session_store_conformance`.
#![cfg(feature = "test-support")]

mod memory {
    acp_agent::session_store_conformance!(async { acp_agent::store::MemoryStore::new() });
}

mod jsonl {
    /// A fresh store directory per case.
    fn fresh() -> acp_agent::store::JsonlStore {
        let dir = acp_agent::store::conformance::scratch_dir("agent-jsonl");
        acp_agent::store::JsonlStore::open(&dir).expect("the store opens")
    }

    acp_agent::session_store_conformance!(async { fresh() });
}

/// The macro runs every case the suite lists (a case added to `CASES` but not to the macro
/// would silently never run).
#[test]
fn the_macro_runs_every_case() {
    let source = include_str!("../../acp-store/src/conformance.rs");
    let cases = source
        .split("(@cases $make;")
        .nth(1)
        .and_then(|rest| rest.split(");").next())
        .expect("the macro's case list");
    for case in acp_agent::store::conformance::CASES {
        assert!(cases.contains(case), "{case} is not in the macro");
    }
}
