//! Our peers of the v2 and negotiation cells, built on acp-agent's and acp-client's `v2`
//! sides: `acp-interop ours-agent --protocol 2|both` and `acp-interop ours-client --protocol
//! 2|both` (`1`, the default, is [`super::ours_agent`] / [`super::ours_client`] as they were).
//!
//! - `2`: v2 only ([`acp_agent::Builder::v2_only`], [`acp_client::Builder::v2_only`]);
//! - `both`: v1 and v2 ([`acp_agent::Builder::v2`] serves the version the client's
//!   `initialize` offers; [`acp_client::Builder::v2`] offers 2 and falls back to 1 when the
//!   agent answers 1). Settled on v1, they run the v1 script exactly as the v1-only peers do.
//!
//! The v2 side follows [`crate::script::script_v2`]; the agent reports what it saw as the v1
//! agent does (plus a `served` event with the version), the client prints its events on stdout.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use acp_agent::v2::types as v2;
use acp_agent::{Error, async_trait};
use acp_client::process::{AgentCommand, AgentProcess};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::peers::remote::AgentTarget;
use crate::report::Reporter;
use crate::script::script_v2;

/// How long our v2 clients wait for the answer to their `initialize` offer.
const OFFER_TIMEOUT: Duration = Duration::from_secs(80);

/// Which protocol versions a peer of ours speaks (`--protocol 1|2|both`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Versions {
    /// v1 only: the v1 peers as they were.
    V1,
    /// v2 only.
    V2,
    /// v1 and v2, negotiated from the client's `initialize`.
    Both,
}

impl Versions {
    /// Parses `1`, `2` or `both`.
    pub fn parse(text: &str) -> Result<Versions, String> {
        match text {
            "1" => Ok(Versions::V1),
            "2" => Ok(Versions::V2),
            "both" => Ok(Versions::Both),
            other => Err(format!("--protocol takes 1, 2 or both, not {other:?}")),
        }
    }

    /// The `--protocol` argument.
    pub fn arg(self) -> &'static str {
        match self {
            Versions::V1 => "1",
            Versions::V2 => "2",
            Versions::Both => "both",
        }
    }
}

fn read<T: serde::de::DeserializeOwned>(value: Value, what: &str) -> Result<T, Error> {
    serde_json::from_value(value)
        .map_err(|e| Error::internal_error(format!("the v2 script's {what} does not read: {e}")))
}

/// Our v2 agent: one turn of the v2 script per prompt.
pub struct OursV2Agent {
    report: Reporter,
    sessions: std::sync::atomic::AtomicU64,
}

impl OursV2Agent {
    /// An agent writing its events to `report`.
    pub fn new(report: Reporter) -> Self {
        OursV2Agent {
            report,
            sessions: Default::default(),
        }
    }

    async fn send(
        &self,
        cx: &acp_agent::v2::Context,
        session: &Value,
        update: Value,
    ) -> Result<(), Error> {
        let notification = read(json!({"sessionId": session, "update": update}), "update")?;
        cx.client().session_update(notification).await
    }
}

#[async_trait]
impl acp_agent::v2::Agent for OursV2Agent {
    async fn initialize(
        &self,
        params: v2::InitializeRequest,
        _cx: &acp_agent::v2::Context,
    ) -> Result<v2::InitializeResponse, Error> {
        self.report.event(json!({"event": "initialize", "protocolVersion": params.protocol_version, "info": params.info}));
        Ok(v2::InitializeResponse::new(
            2,
            v2::Implementation::new("ours-interop-agent-v2", env!("CARGO_PKG_VERSION")),
        ))
    }

    async fn session_new(
        &self,
        _params: v2::NewSessionRequest,
        _cx: &acp_agent::v2::Context,
    ) -> Result<v2::NewSessionResponse, Error> {
        let n = self
            .sessions
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(v2::NewSessionResponse::new(format!(
            "ours-v2-session-{}",
            n + 1
        )))
    }

    async fn session_prompt(
        &self,
        params: v2::PromptRequest,
        cx: &acp_agent::v2::Context,
    ) -> Result<v2::PromptResponse, Error> {
        let sc = script_v2();
        let prompt = serde_json::to_value(&params.prompt).unwrap_or_default();
        let blocks: Vec<&Value> = prompt
            .as_array()
            .map(|a| a.iter().map(|b| &b["type"]).collect())
            .unwrap_or_default();
        let text: Vec<&str> = prompt
            .as_array()
            .map(|a| a.iter().filter_map(|b| b["text"].as_str()).collect())
            .unwrap_or_default();
        self.report
            .event(json!({"event": "prompt", "blocks": blocks, "text": text.join(" ")}));
        let session = serde_json::to_value(&params.session_id).unwrap_or_default();
        let (first, rest) = sc
            .before
            .split_first()
            .ok_or_else(|| Error::internal_error("empty v2 script"))?;
        self.send(cx, &session, first.clone()).await?;
        let user = json!({"sessionUpdate": "user_message", "messageId": sc.user_message_id, "content": prompt});
        self.send(cx, &session, user).await?;
        for update in rest {
            self.send(cx, &session, update.clone()).await?;
        }
        let mut permission = sc.permission.clone();
        permission["sessionId"] = session.clone();
        let answer = cx
            .client()
            .session_request_permission(read(permission, "permission")?)
            .await?;
        self.report
            .event(json!({"event": "permission", "outcome": answer.outcome}));
        for update in &sc.after {
            self.send(cx, &session, update.clone()).await?;
        }
        Ok(v2::PromptResponse::new(sc.user_message_id.as_str()))
    }
}

/// Serves our agent in the `versions` given on stdio (`V1` is [`super::ours_agent::run`]).
pub async fn run_agent(report: Reporter, versions: Versions) {
    let v2 = OursV2Agent::new(report.clone());
    let served = match versions {
        Versions::V1 => return super::ours_agent::run(report).await,
        Versions::V2 => acp_agent::Builder::v2_only(v2).stdio().await,
        Versions::Both => {
            acp_agent::Builder::new(super::ours_agent::OursAgent::new(report.clone()))
                .v2(v2)
                .stdio()
                .await
        }
    };
    let reason = match served {
        Ok(acp_agent::v2::Served::V1(conn)) => {
            report.event(json!({"event": "served", "protocolVersion": 1}));
            conn.closed().await.to_string()
        }
        Ok(acp_agent::v2::Served::V2(conn)) => {
            report.event(json!({"event": "served", "protocolVersion": 2}));
            conn.closed().await.to_string()
        }
        Err(e) => format!("no connection: {e}"),
    };
    report.event(json!({"event": "closed", "sdk": "ours", "reason": reason}));
}

/// Our v2 client: prints every update and answers the permission request with the script's
/// allow option.
struct OursV2Client {
    out: Reporter,
    /// Notified at the idle `state_update` (a permit is kept if nobody waits yet).
    idle: Arc<Notify>,
}

#[async_trait]
impl acp_client::v2::Client for OursV2Client {
    async fn session_update(&self, params: v2::UpdateSessionNotification) -> Result<(), Error> {
        let update = serde_json::to_value(&params.update).unwrap_or_default();
        self.out
            .event(json!({"event": "update", "sessionId": params.session_id, "update": update}));
        if update["sessionUpdate"] == "state_update"
            && update["state"] == "idle"
            && update["stopReason"].is_string()
        {
            self.out
                .event(json!({"event": "stop", "stopReason": update["stopReason"]}));
            self.idle.notify_one();
        }
        Ok(())
    }

    async fn session_request_permission(
        &self,
        params: v2::RequestPermissionRequest,
    ) -> Result<v2::RequestPermissionResponse, Error> {
        let request = serde_json::to_value(&params).unwrap_or_default();
        let allow = &script_v2().allow_option;
        let options = request["options"].as_array().cloned().unwrap_or_default();
        let option = options
            .iter()
            .find(|o| o["optionId"] == allow.as_str())
            .or(options.first())
            .ok_or_else(|| Error::invalid_params("no permission options"))?;
        self.out.event(json!({"event": "permission", "title": request["title"], "subject": request["subject"], "outcome": "selected", "optionId": option["optionId"]}));
        read(
            json!({"outcome": {"outcome": "selected", "optionId": option["optionId"]}}),
            "answer",
        )
    }
}

/// Runs our client in the `versions` given against the agent `target` in workspace `cwd`:
/// the v2 script when the agent answers 2, the v1 script ([`super::ours_client`]) when it
/// answers 1 (`V1` is [`super::ours_client::run`]).
pub async fn run_client(
    cwd: PathBuf,
    target: AgentTarget,
    versions: Versions,
) -> Result<(), Box<dyn std::error::Error>> {
    if versions == Versions::V1 {
        return super::ours_client::run(cwd, target).await;
    }
    let AgentTarget::Spawn(command) = target else {
        return Err("the v2 cells run over stdio only".into());
    };
    let out = Reporter::stdout();
    let cwd = std::fs::canonicalize(cwd)?;
    let (program, args) = command.split_first().ok_or("no agent command after --")?;
    let mut process = AgentProcess::spawn(&AgentCommand::new(program).args(args.iter().cloned()))?;
    let (stdout, stdin) = process.take_stdio().ok_or("the agent's stdio was taken")?;
    let idle = Arc::new(Notify::new());
    let client = OursV2Client {
        out: out.clone(),
        idle: idle.clone(),
    };
    let info = v2::Implementation::new("ours-interop-client-v2", env!("CARGO_PKG_VERSION"));
    let init = v2::InitializeRequest::new(2, info);
    let v1 = super::ours_client::OursClient::new(out.clone(), &cwd)?;
    let connected = match versions {
        Versions::V2 => {
            let mut offer = acp_client::v2::Offer::v2_only(init);
            offer.timeout = OFFER_TIMEOUT;
            acp_client::Builder::v2_only(client, offer)
                .io(stdout, stdin)
                .await?
        }
        Versions::V1 | Versions::Both => {
            let mut offer = acp_client::v2::Offer::both(init, super::ours_client::v1_initialize());
            // A node agent on a loaded machine can take longer than the default 30 s to start
            // answering; the cell's own timeout (90 s) still bounds the run.
            offer.timeout = OFFER_TIMEOUT;
            acp_client::Builder::shared(v1.clone())
                .v2(client, offer)
                .io(stdout, stdin)
                .await?
        }
    };
    let (connection, initialize) = match connected {
        acp_client::v2::Connected::V1 {
            connection,
            initialize,
        } => {
            let end = super::ours_client::End::Process(Box::new(process));
            return super::ours_client::drive(v1, connection, *initialize, &cwd, end).await;
        }
        acp_client::v2::Connected::V2 {
            connection,
            initialize,
        } => (connection, initialize),
    };
    out.event(json!({"event": "initialized", "protocolVersion": initialize.protocol_version, "agent": initialize.info.name}));
    let agent = connection.agent();
    let cwd_text = cwd.to_string_lossy().into_owned();
    let session = agent
        .session_new(v2::NewSessionRequest::new(cwd_text.as_str()))
        .await?;
    out.event(json!({"event": "session", "sessionId": session.session_id}));
    let text = v2::ContentBlock::Text(v2::TextContent::new(script_v2().prompt.as_str()));
    let inserted = agent
        .session_prompt(v2::PromptRequest::new(session.session_id.clone(), [text]))
        .await?;
    out.event(json!({"event": "inserted", "messageId": inserted.message_id}));
    tokio::time::timeout(Duration::from_secs(10), idle.notified())
        .await
        .map_err(|_| "no idle state_update within 10 s")?;
    connection.close();
    let status = process.shutdown(Duration::from_secs(5)).await?;
    out.event(json!({"event": "agent_exit", "code": status.code(), "signal": null}));
    out.event(json!({"event": "done"}));
    Ok(())
}
