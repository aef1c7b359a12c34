//! One line of a trace file: the workspace's one wire record, defined in
//! [`acp_rpc::record`] (the format, the directions, the former interop transcript it still
//! reads), so that the engine's recording tap, the interop suite's relay, `acp check
//! --trace` and `acp trace` itself all write what `acp trace view` reads.

pub use acp_rpc::record::{AGENT_TO_CLIENT, CLIENT_TO_AGENT, EXIT, Record, START, now};
