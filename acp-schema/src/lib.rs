//! The JSON Schema documents that describe each Agent Client Protocol dialect.
//!
//! These documents are the single source of truth of acp-rs: `acp-codegen` turns each one
//! into a Rust module of `acp-types`, and applications can use them to validate messages at
//! run time with any JSON Schema (draft 2020-12) validator.
//!
//! Each document also lists its methods in a top-level `x-methods` array (wire name, the side
//! that serves it, request or notification, params and result types); see `CONVENTIONS.md` in
//! this crate for every annotation the generator understands.
//!
//! ```
//! let schema: serde_json::Value = serde_json::from_str(acp_schema::V1).unwrap();
//! assert_eq!(schema["x-dialect"], "v1");
//! ```
#![deny(missing_docs)]

/// A protocol dialect with a schema in this crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SchemaDocument {
    /// Short name of the dialect (`"v1"`), as in the document's `x-dialect`.
    pub dialect: &'static str,
    /// File name of the document inside this crate's `schemas/` folder.
    pub file_name: &'static str,
    /// The document itself (JSON text).
    pub text: &'static str,
}

/// The stable ACP v1 schema: integer `protocolVersion: 1`, sessions, `session/update`.
pub const V1: &str = include_str!("../schemas/v1.json");

/// The draft ACP v2 schema (integer `protocolVersion: 2`): role-neutral `initialize`,
/// `session/resume` with replay, prompts answered on insertion, upserts with three-state
/// patches. Imported from the official schema JSON by `tools/import_v2.py`; generated into
/// acp-types' `v2` module (behind its `v2` feature).
pub const V2: &str = include_str!("../schemas/v2.json");

/// The unstable overlay of v1: items peers already speak that the stable schema lacks, each
/// naming (in `x-unstable`) the cargo feature of `acp-types` that turns it on. The generator
/// folds it into [`V1`].
pub const V1_UNSTABLE: &str = include_str!("../schemas/v1-unstable.json");

/// The 0.0.9 dialect (Gemini CLI `--experimental-acp`, crate `agentic-coding-protocol` 0.0.9):
/// string `protocolVersion: "0.0.9"`, one implicit conversation, `pushToolCall`.
pub const LEGACY_0_0_9: &str = include_str!("../schemas/legacy-0.0.9.json");

/// The threads dialect, the first form of the protocol: no handshake, conversation threads,
/// no `jsonrpc` member.
pub const THREADS: &str = include_str!("../schemas/threads.json");

/// The probe dialect (the probe code-search agent's `--acp`): string `protocolVersion: "1"`,
/// `newSession`/`prompt`, the reply streamed as `messageChunk` notifications.
pub const PROBE: &str = include_str!("../schemas/probe.json");

/// The crow dialect (the crow agent and IDE): v1 spelled in snake_case, `@type`-tagged
/// updates, `cancel` as a request.
pub const CROW: &str = include_str!("../schemas/crow.json");

/// Every schema this crate ships, in the order the generator processes them.
pub const ALL: &[SchemaDocument] = &[
    SchemaDocument {
        dialect: "v1",
        file_name: "v1.json",
        text: V1,
    },
    SchemaDocument {
        dialect: "v2",
        file_name: "v2.json",
        text: V2,
    },
    SchemaDocument {
        dialect: "legacy-0.0.9",
        file_name: "legacy-0.0.9.json",
        text: LEGACY_0_0_9,
    },
    SchemaDocument {
        dialect: "threads",
        file_name: "threads.json",
        text: THREADS,
    },
    SchemaDocument {
        dialect: "probe",
        file_name: "probe.json",
        text: PROBE,
    },
    SchemaDocument {
        dialect: "crow",
        file_name: "crow.json",
        text: CROW,
    },
];
