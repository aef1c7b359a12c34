//! The 0.0.9 dialect against its real implementation, crates.io `agentic-coding-protocol`
//! 0.0.9 (futures IO through tokio-util's compat layer, `!Send` handlers on a `LocalSet`):
//!
//! * their editor (`AgentConnection`) drives our v1 agent, served by `acp_agent::negotiate`,
//!   which detects the dialect and runs the 0.0.9 adapter;
//! * our v1 client, through `acp_client::negotiate` and the 0.0.9 adapter, drives their
//!   `Agent` (which silently drops the v1 handshake, so the negotiation falls back to 0.0.9
//!   after the probe timeout).
//!
//! Both cover streaming (text and thoughts), `pushToolCall` + `updateToolCall`,
//! `requestToolCallConfirmation` with each outcome, `readTextFile`/`writeTextFile`,
//! `cancelSendMessage`, and an error reply.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_client::Dialect;
use acp_rpc::Error;
use acp_types::v1::*;
use agentic_coding_protocol as old;
use serde_json::{Value, json};
use tokio::task::LocalSet;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

fn v<T: serde::de::DeserializeOwned>(j: Value) -> T {
    serde_json::from_value(j).expect("test JSON matches the type")
}

async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within 10 s"))
}

#[path = "legacy_0_0_9_crate/our_client.rs"]
mod our_client;
#[path = "legacy_0_0_9_crate/their_editor.rs"]
mod their_editor;
