//! The [`Agent`] trait: what an application implements to be an ACP agent, one method per v1
//! method an agent serves. It is generated from the method table (`agent/generated.rs`);
//! the connection's bookkeeping around some methods (the handshake, sessions, the store,
//! prompts) is in the dispatcher's hooks (`dispatch.rs`).

#[rustfmt::skip]
mod generated;

pub use generated::Agent;
