//! Generated modules (hand-written file): one folder per dialect, each with `types.rs` and
//! `methods.rs` written by `cargo xtask codegen`. Nothing below this file is edited by hand.

#[cfg(feature = "v1")]
#[rustfmt::skip]
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod v1 {
    //! ACP v1, generated from `acp-schema/schemas/v1.json`.
    pub mod types;
    pub mod methods;
}
