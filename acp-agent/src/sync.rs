//! Locking that survives a panic (acp-rpc's [`acp_rpc::sync::lock`]): a handler that
//! panicked while holding a lock must not take the connection's state down with it.

pub(crate) use acp_rpc::sync::lock;
