//! Draft protocol v2 on the agent side: serve a client that speaks v2.
//!
//! Implement [`Agent`] (at least `initialize`, answering `protocolVersion: 2`) and start it
//! with [`serve`] on the client's stdin and stdout (or any line transport). The agent calls
//! its client through the [`ClientHandle`] in each request's [`Context`]: `session_update`
//! for the session's upserts, `session_request_permission`, `elicitation_create`. The types
//! are [`acp_types::v2`], re-exported here as [`types`].
//!
//! The sides are generated from v2's method table (acp-dialects' `v2` module); v1's session
//! bookkeeping, store and prompt streams are v1 only.
//!
//! An agent that speaks both versions starts with [`crate::Builder::v2`] (one version only:
//! [`crate::Builder::v2_only`], [`crate::Builder::v1_only`]) and serves the version the
//! client's `initialize` offers:
//!
//! | the client offers | the agent has v2 and v1 | only v1 | only v2 |
//! | --- | --- | --- | --- |
//! | `protocolVersion` 2 or more | v2 | v1 (its answer says 1) | v2 |
//! | `protocolVersion` 1 | v1 | v1 | v2 (its answer says 2) |
//! | anything else first | v1 | v1 | v2 |
//!
//! The served side answers the `initialize` itself, so the client learns the version from
//! the answer and decides whether it can go on, as the specification says.
//!
//! A v1 agent alone serves v2 clients through the v1<->v2 translation: [`serve_v1`] for v2
//! only, or a negotiating builder that also accepts v2
//! (`Builder::new(agent).negotiate(NegotiateOptions::default().with_v2(true))`), which serves
//! v1, v2 or a legacy dialect by the client's first message, as `acp agent` does.
//!
//! A `session/prompt` retried with the same `idempotencyKey` is answered with the first
//! attempt's answer (the same `messageId`) without calling [`Agent::session_prompt`] again;
//! a retry while the first attempt runs waits for it. At most [`MAX_KEYS_PER_SESSION`] keys
//! are remembered per session, for as long as the connection lasts
//! ([`acp_dialects::v2::prompt_keys`] has the rules; an agent that keeps sessions across
//! connections records the key with the message itself).

pub use acp_dialects::v2::prompt_keys::MAX_KEYS_PER_SESSION;
pub use acp_dialects::v2::{
    Agent, AgentConnection, ClientHandle, Context, serve, serve_over, serve_with,
};
pub use acp_types::v2 as types;

pub(crate) mod versions;

pub use versions::{Served, VersionError, first_line_goes_to_v2};

pub use acp_dialects::v2::Translation;

/// Serves a v1 `agent` (the crate's [`crate::Agent`]) to a client that speaks v2, through
/// acp-dialects' v1<->v2 translation (its module docs, `acp_dialects::v2`, hold the mapping
/// and what cannot be mapped). With [`crate::legacy::AdapterOptions::local_terminals`] the
/// translation runs the agent's terminal commands itself, and with its `fs` serves the
/// agent's file calls (v2 clients have neither).
pub fn serve_v1(
    agent: impl crate::Agent,
    reader: impl acp_dialects::Input,
    writer: impl acp_dialects::Output,
    options: acp_dialects::AdapterOptions,
) -> Translation {
    serve_v1_with(agent, reader, writer, options, None, None)
}

/// [`serve_v1`] with the v1 agent's sessions kept in `store` for `identity` (a negotiating
/// builder's, `NegotiateOptions::with_v2`).
pub(crate) fn serve_v1_with(
    agent: impl crate::Agent,
    reader: impl acp_dialects::Input,
    writer: impl acp_dialects::Output,
    options: acp_dialects::AdapterOptions,
    store: Option<std::sync::Arc<dyn crate::store::SessionStore>>,
    identity: Option<std::sync::Arc<str>>,
) -> Translation {
    serve_v1_over(agent, (reader, writer), options, store, identity)
}

/// [`serve_v1_with`] with the v2 client on any transport (the frames of
/// `Builder::negotiate(..).over_frames`).
pub(crate) fn serve_v1_over(
    agent: impl crate::Agent,
    transport: impl acp_rpc::transport::Transport,
    options: acp_dialects::AdapterOptions,
    store: Option<std::sync::Arc<dyn crate::store::SessionStore>>,
    identity: Option<std::sync::Arc<str>>,
) -> Translation {
    // The v1 connection the builder would make (`Builder::new(agent).over(end)`), made here
    // from below so that v2 does not depend on the builder, which depends on v2.
    let v1_agent = |end| {
        crate::connection::serve_inner(agent, end, crate::Config::default(), store, identity)
            .client()
            .peer()
            .clone()
    };
    acp_dialects::v2::serve_v1_agent_over(v1_agent, transport, options)
}

/// Serves a v2 `agent` (this module's [`Agent`]) to a client that speaks v1, through
/// acp-dialects' v1<->v2 translation (the mapping of "A v2 agent behind a v1 client" in
/// `acp_dialects::v2`): the v1 client's `initialize` reaches the agent as a v2 one, its
/// prompts end with the turn's `state_update` idle, and what v1 cannot show (v2 terminals,
/// a whole message replacing one shown) is left out with a `warn` log. The agent runs on an
/// in-memory message pair behind the translation.
pub fn serve_to_v1(
    agent: impl Agent,
    reader: impl acp_dialects::Input,
    writer: impl acp_dialects::Output,
    options: acp_dialects::AdapterOptions,
) -> Translation {
    let v2_agent = |end| {
        serve_over(agent, end, crate::Config::default())
            .peer()
            .clone()
    };
    acp_dialects::v2::serve_v2_agent_to_v1(v2_agent, reader, writer, options)
}
