//! The official Rust SDK's v2 side in the matrix (`agent-client-protocol` 5.2.0, feature
//! `unstable_protocol_v2`): `acp-interop rust-agent --protocol 2` and `acp-interop rust-client
//! --protocol 2`, following [`crate::script::script_v2`] as ours do.
//!
//! Built the way that SDK's v2 examples (`simple_agent_v2`, `v2_one_shot_client`) are: an
//! `Agent.v2()` / `Client.v2()` builder with typed handlers; the prompt's turn needs an answer
//! from the client, so it runs beside the dispatch loop (`ConnectionTo::spawn`). The crate has
//! no agent or client speaking both versions, so it has no negotiation cells of its own
//! beyond its v1 peers against our both-versions ones.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v2::{ConnectionTo, Responder, schema};
use agent_client_protocol::{AcpAgent, AcpAgentConfig, Agent, Client, Error, Stdio};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::peers::remote::AgentTarget;
use crate::report::Reporter;
use crate::script::script_v2;

/// Decodes a value of the v2 script: the same JSON every SDK's peer sends.
fn from_script<T: DeserializeOwned>(value: Value) -> Result<T, Error> {
    serde_json::from_value(value).map_err(Error::into_internal_error)
}

fn update(cx: &ConnectionTo<Client>, session: &Value, update: Value) -> Result<(), Error> {
    let notification: schema::UpdateSessionNotification =
        from_script(json!({"sessionId": session, "update": update}))?;
    cx.send_notification(notification)
}

/// The turn: the script's updates around its permission request.
async fn work(
    cx: ConnectionTo<Client>,
    report: Reporter,
    session: Value,
    prompt: Value,
) -> Result<(), Error> {
    let sc = script_v2();
    let (first, rest) = sc.before.split_first().ok_or_else(Error::internal_error)?;
    update(&cx, &session, first.clone())?;
    update(
        &cx,
        &session,
        json!({"sessionUpdate": "user_message", "messageId": sc.user_message_id, "content": prompt}),
    )?;
    for u in rest {
        update(&cx, &session, u.clone())?;
    }
    let mut permission = sc.permission.clone();
    permission["sessionId"] = session.clone();
    let request: schema::RequestPermissionRequest = from_script(permission)?;
    let answer = cx.send_request(request).block_task().await?;
    report.event(json!({"event": "permission", "outcome": answer.outcome}));
    for u in &sc.after {
        update(&cx, &session, u.clone())?;
    }
    Ok(())
}

/// Serves the official crate's v2 agent on stdio.
pub async fn run_agent(report: Reporter) -> Result<(), Error> {
    let (r_init, r_prompt) = (report.clone(), report.clone());
    let sessions = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let result = Agent
        .v2()
        .name("rust-interop-agent-v2")
        .on_receive_request(
            async move |request: schema::InitializeRequest,
                        responder: Responder<schema::InitializeResponse>,
                        _cx: ConnectionTo<Client>| {
                r_init.event(json!({"event": "initialize", "protocolVersion": request.protocol_version, "info": request.info}));
                responder.respond(
                    schema::InitializeResponse::new(
                        ProtocolVersion::V2,
                        schema::Implementation::new("rust-interop-agent-v2", "5.2.0"),
                    )
                    .capabilities(
                        schema::AgentCapabilities::new().session(schema::SessionCapabilities::new()),
                    ),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_request: schema::NewSessionRequest,
                        responder: Responder<schema::NewSessionResponse>,
                        _cx: ConnectionTo<Client>| {
                let n = sessions.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                responder.respond(schema::NewSessionResponse::new(format!("rust-v2-session-{n}")))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: schema::PromptRequest,
                        responder: Responder<schema::PromptResponse>,
                        cx: ConnectionTo<Client>| {
                let prompt = serde_json::to_value(&request.prompt).map_err(Error::into_internal_error)?;
                let blocks: Vec<Value> = prompt.as_array().map(|a| a.iter().map(|b| b["type"].clone()).collect()).unwrap_or_default();
                let text: Vec<&str> = prompt.as_array().map(|a| a.iter().filter_map(|b| b["text"].as_str()).collect()).unwrap_or_default();
                r_prompt.event(json!({"event": "prompt", "blocks": blocks, "text": text.join(" ")}));
                let session = serde_json::to_value(&request.session_id).map_err(Error::into_internal_error)?;
                let report = r_prompt.clone();
                // The permission request needs the dispatch loop: run the turn beside it.
                cx.clone().spawn(async move {
                    let result = work(cx, report, session, prompt)
                        .await
                        .map(|()| schema::PromptResponse::new(script_v2().user_message_id.clone()));
                    responder.respond_with_result(result)
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_to(Stdio::new())
        .await;
    report.event(json!({"event": "closed", "sdk": "rust", "error": result.as_ref().err().map(|e| e.to_string())}));
    result
}

/// Runs the official crate's v2 client against the agent `target` (stdio only) in `cwd`.
pub async fn run_client(
    cwd: PathBuf,
    target: AgentTarget,
) -> Result<(), Box<dyn std::error::Error>> {
    let AgentTarget::Spawn(command) = target else {
        return Err("the v2 cells run over stdio only".into());
    };
    let (program, args) = command.split_first().ok_or("no agent command after --")?;
    let agent = AcpAgent::new(
        AcpAgentConfig::new(program).args(args.iter().map(|a| a.to_string_lossy().into_owned())),
    );
    let out = Reporter::stdout();
    let cwd = std::fs::canonicalize(cwd)?;
    let idle = Arc::new(Notify::new());
    let (o_update, o_perm, o_main, idle_update) =
        (out.clone(), out.clone(), out.clone(), idle.clone());
    Client
        .v2()
        .name("rust-interop-client-v2")
        .on_receive_notification(
            async move |n: schema::UpdateSessionNotification, _cx: ConnectionTo<Agent>| {
                let update = serde_json::to_value(&n.update).map_err(Error::into_internal_error)?;
                o_update.event(json!({"event": "update", "sessionId": n.session_id, "update": update}));
                if update["sessionUpdate"] == "state_update" && update["state"] == "idle" && update["stopReason"].is_string() {
                    o_update.event(json!({"event": "stop", "stopReason": update["stopReason"]}));
                    idle_update.notify_one();
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: schema::RequestPermissionRequest,
                        responder: Responder<schema::RequestPermissionResponse>,
                        _cx: ConnectionTo<Agent>| {
                let allow = &script_v2().allow_option;
                let option = request
                    .options
                    .iter()
                    .find(|o| o.option_id.to_string() == *allow)
                    .or(request.options.first())
                    .ok_or_else(Error::invalid_params)?;
                let subject = serde_json::to_value(&request.subject).map_err(Error::into_internal_error)?;
                o_perm.event(json!({"event": "permission", "title": request.title, "subject": subject, "outcome": "selected", "optionId": option.option_id}));
                responder.respond(schema::RequestPermissionResponse::new(
                    schema::RequestPermissionOutcome::Selected(schema::SelectedPermissionOutcome::new(
                        option.option_id.clone(),
                    )),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(agent, async move |cx: ConnectionTo<Agent>| {
            let init = cx
                .send_request(schema::InitializeRequest::new(
                    ProtocolVersion::V2,
                    schema::Implementation::new("rust-interop-client-v2", "5.2.0"),
                ))
                .block_task()
                .await?;
            o_main.event(json!({"event": "initialized", "protocolVersion": init.protocol_version, "agent": init.info.name}));
            let session = cx
                .send_request(schema::NewSessionRequest::new(cwd.clone()))
                .block_task()
                .await?;
            o_main.event(json!({"event": "session", "sessionId": session.session_id}));
            let prompt: schema::PromptRequest = from_script(json!({
                "sessionId": session.session_id,
                "prompt": [{"type": "text", "text": script_v2().prompt}],
            }))?;
            let inserted = cx.send_request(prompt).block_task().await?;
            o_main.event(json!({"event": "inserted", "messageId": inserted.message_id}));
            tokio::time::timeout(Duration::from_secs(10), idle.notified())
                .await
                .map_err(|_| Error::internal_error().data("no idle state_update within 10 s"))?;
            Ok(())
        })
        .await?;
    out.event(json!({"event": "agent_exit", "code": null, "signal": null, "note": "AcpAgent owns the process; the tap records its exit"}));
    out.event(json!({"event": "done"}));
    Ok(())
}
