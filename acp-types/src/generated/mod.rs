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

#[cfg(feature = "v2")]
#[rustfmt::skip]
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod v2 {
    //! ACP v2 (draft), generated from `acp-schema/schemas/v2.json`.
    pub mod types;
    pub mod methods;
}

#[cfg(feature = "legacy-0-0-9")]
#[rustfmt::skip]
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod legacy_0_0_9 {
    //! The 0.0.9 dialect, generated from `acp-schema/schemas/legacy-0.0.9.json`.
    pub mod types;
    pub mod methods;
}

#[cfg(feature = "legacy-threads")]
#[rustfmt::skip]
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod threads {
    //! The threads dialect, generated from `acp-schema/schemas/threads.json`.
    pub mod types;
    pub mod methods;
}

#[cfg(feature = "probe")]
#[rustfmt::skip]
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod probe {
    //! The probe dialect, generated from `acp-schema/schemas/probe.json`.
    pub mod types;
    pub mod methods;
}

#[cfg(feature = "crow")]
#[rustfmt::skip]
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod crow {
    //! The crow dialect, generated from `acp-schema/schemas/crow.json`.
    pub mod types;
    pub mod methods;
}
