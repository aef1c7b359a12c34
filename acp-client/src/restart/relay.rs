//! The application's [`Client`] as every connection of a [`super::SupervisedAgent`] sees it:
//! shared across restarts, with the replayed updates of sessions being reloaded held back
//! (its `impl Client` is generated: `relay/generated.rs`).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use acp_rpc::Error;
use acp_rpc::sync::lock;
use acp_types::v1::*;

use crate::Client;

#[rustfmt::skip]
mod generated;

/// The application's client, shared by every connection the supervisor makes, with the
/// updates of sessions being reloaded held back.
pub(crate) struct Relay<C: Client> {
    pub(crate) client: Arc<C>,
    /// Sessions being reloaded: their replayed updates are not passed on.
    pub(super) muted: Mutex<HashSet<SessionId>>,
}

/// A connection's view of the [`Relay`].
pub(crate) struct Shared<C: Client>(pub(crate) Arc<Relay<C>>);

impl<C: Client> Shared<C> {
    /// `session/update`, the one method not simply handed on (the rest are in the generated
    /// `impl Client for Shared`): the replayed updates of a session being reloaded are held
    /// back.
    pub(crate) async fn session_update_hook(
        &self,
        params: SessionNotification,
    ) -> Result<(), Error> {
        if lock(&self.0.muted).contains(&params.session_id) {
            return Ok(());
        }
        self.0.client.session_update(params).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records which of its methods were called.
    #[derive(Default)]
    struct Recording(Mutex<Vec<&'static str>>);

    #[async_trait::async_trait]
    impl Client for Recording {
        async fn session_update(&self, _: SessionNotification) -> Result<(), Error> {
            lock(&self.0).push("session/update");
            Ok(())
        }
        async fn kill_terminal(
            &self,
            _: KillTerminalRequest,
        ) -> Result<KillTerminalResponse, Error> {
            lock(&self.0).push("terminal/kill");
            Ok(KillTerminalResponse::new())
        }
        #[cfg(feature = "unstable_mcp_over_acp")]
        async fn mcp_message(&self, _: MessageMcpRequest) -> Result<MessageMcpResponse, Error> {
            lock(&self.0).push("mcp/message");
            Err(Error::internal_error("recorded"))
        }
        async fn ext_notification(&self, _: &str, _: serde_json::Value) -> Result<(), Error> {
            lock(&self.0).push("_ext");
            Ok(())
        }
    }

    fn update(session: &str) -> SessionNotification {
        SessionNotification::new(
            SessionId::from(session),
            SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from("hi"))),
        )
    }

    #[tokio::test]
    async fn the_relay_hands_every_method_on_and_holds_back_only_muted_updates() {
        let client = Arc::new(Recording::default());
        let relay = Shared(Arc::new(Relay {
            client: client.clone(),
            muted: Mutex::new(HashSet::from([SessionId::from("reloading")])),
        }));
        relay.session_update(update("reloading")).await.unwrap();
        relay.session_update(update("live")).await.unwrap();
        let kill = KillTerminalRequest::new(SessionId::from("live"), TerminalId::from("t"));
        relay.kill_terminal(kill).await.unwrap();
        relay
            .ext_notification("_ext", serde_json::Value::Null)
            .await
            .unwrap();
        #[cfg_attr(not(feature = "unstable_mcp_over_acp"), allow(unused_mut))]
        let mut expected = vec!["session/update", "terminal/kill", "_ext"];
        #[cfg(feature = "unstable_mcp_over_acp")]
        {
            // Unstable methods too: the relay is generated from the same method table.
            let message: MessageMcpRequest = serde_json::from_value(serde_json::json!({
                "serverId": "s", "requestId": "r1", "method": "tools/list"
            }))
            .unwrap();
            let e = relay.mcp_message(message).await.unwrap_err();
            assert_eq!(e.message, "recorded");
            expected.push("mcp/message");
        }
        assert_eq!(*lock(&client.0), expected);
    }
}
