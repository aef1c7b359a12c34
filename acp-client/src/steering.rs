//! Steering: a message for a turn that is still running (`_session/steering`).
//!
//! People type the next instruction while the agent works. ACP v1 has no method for it;
//! Claude's ACP agent (`claude-agent-acp`) and the Codex adapter (`codex-acp`) ship the same
//! extension, which other agents copy:
//!
//! * the agent advertises it in its `initialize` answer, `_meta.steering.supported: true`
//!   ([`advertised`]);
//! * the client sends `_session/steering` with `{sessionId, prompt: ContentBlock[]}`, and
//!   here always `_meta.steering.idleBehavior: "promptRequired"`, so that an agent whose
//!   turn has just ended answers [`SteeringOutcome::PromptRequired`] instead of starting a
//!   turn of its own that the client never asked for and cannot cancel;
//! * the answer is `{outcome: "injected" | "startedNewTurn" | "promptRequired" |
//!   "failed"}` ([`SteeringOutcome`]).
//!
//! Without the advertisement a client queues the message and sends it as the next
//! `session/prompt` when the turn ends (what `acp chat` does).

use acp_rpc::Error;
use acp_types::v1::{ContentBlock, InitializeResponse, SessionId};
use serde_json::{Value, json};

use crate::AgentHandle;

/// The extension method's name.
pub const METHOD: &str = "_session/steering";

/// Whether the agent advertised steering: `_meta.steering.supported` is `true` in its
/// `initialize` answer.
pub fn advertised(init: &InitializeResponse) -> bool {
    init.meta
        .as_ref()
        .and_then(|meta| meta.get("steering"))
        .and_then(|steering| steering.get("supported"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// What the agent did with a steering message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SteeringOutcome {
    /// It went into the running turn.
    Injected,
    /// No turn was running and the agent started one with it (agents that ignore
    /// `idleBehavior`).
    StartedNewTurn,
    /// No turn was running: send it as a `session/prompt` (nothing was consumed).
    PromptRequired,
    /// The agent could not take it; the text is its reason, when it gave one.
    Failed(String),
}

impl SteeringOutcome {
    /// Reads the `outcome` of a `_session/steering` answer; an answer without a known
    /// outcome is [`SteeringOutcome::Failed`], naming what came.
    pub fn from_answer(answer: &Value) -> SteeringOutcome {
        match answer.get("outcome").and_then(Value::as_str) {
            Some("injected") => SteeringOutcome::Injected,
            Some("startedNewTurn") => SteeringOutcome::StartedNewTurn,
            Some("promptRequired") => SteeringOutcome::PromptRequired,
            Some("failed") => SteeringOutcome::Failed(
                answer
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("the agent gave no reason")
                    .to_owned(),
            ),
            _ => SteeringOutcome::Failed(format!("an answer without a known outcome: {answer}")),
        }
    }
}

/// The params of a `_session/steering` request (with `idleBehavior: "promptRequired"`).
pub fn request(session_id: &SessionId, prompt: &[ContentBlock]) -> Value {
    json!({
        "sessionId": session_id,
        "prompt": prompt,
        "_meta": {"steering": {"idleBehavior": "promptRequired"}},
    })
}

impl AgentHandle {
    /// Sends `prompt` into the session's running turn (`_session/steering`, see
    /// [`crate::steering`]); ask only an agent that [`advertised`] it.
    pub async fn steer(
        &self,
        session_id: &SessionId,
        prompt: &[ContentBlock],
    ) -> Result<SteeringOutcome, Error> {
        let answer = self.ext_method(METHOD, request(session_id, prompt)).await?;
        Ok(SteeringOutcome::from_answer(&answer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_types::v1::ProtocolVersion;

    #[test]
    fn only_a_true_supported_flag_advertises_steering() {
        let plain = InitializeResponse::new(ProtocolVersion::V1);
        assert!(!advertised(&plain));
        let with = |meta: Value| {
            let mut init = InitializeResponse::new(ProtocolVersion::V1);
            init.meta = serde_json::from_value(meta).ok();
            init
        };
        assert!(advertised(&with(json!({"steering": {"supported": true}}))));
        assert!(!advertised(&with(
            json!({"steering": {"supported": false}})
        )));
        assert!(!advertised(&with(
            json!({"steering": {"supported": "yes"}})
        )));
        assert!(!advertised(&with(json!({"steering": true}))));
    }

    #[test]
    fn outcomes_are_read_and_unknown_ones_are_failures() {
        let read = |v: Value| SteeringOutcome::from_answer(&v);
        assert_eq!(
            read(json!({"outcome": "injected"})),
            SteeringOutcome::Injected
        );
        assert_eq!(
            read(json!({"outcome": "startedNewTurn"})),
            SteeringOutcome::StartedNewTurn
        );
        assert_eq!(
            read(json!({"outcome": "promptRequired", "reason": "no turn"})),
            SteeringOutcome::PromptRequired
        );
        assert_eq!(
            read(json!({"outcome": "failed", "reason": "busy"})),
            SteeringOutcome::Failed("busy".into())
        );
        assert!(matches!(read(json!({})), SteeringOutcome::Failed(_)));
        assert!(matches!(read(json!(null)), SteeringOutcome::Failed(_)));
    }

    #[test]
    fn the_request_asks_for_prompt_required_when_idle() {
        let params = request(&SessionId("s1".into()), &[ContentBlock::text("stop")]);
        assert_eq!(params["sessionId"], "s1");
        assert_eq!(params["prompt"][0]["text"], "stop");
        assert_eq!(
            params["_meta"]["steering"]["idleBehavior"],
            "promptRequired"
        );
    }
}
