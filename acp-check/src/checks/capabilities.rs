//! Capability honesty, the agent's side: what it advertises works. (Its use of what the
//! client offered is graded from the whole wire in [`super::wide`].)

use std::time::Instant;

use acp_types::v1::{
    AudioContent, CloseSessionRequest, ContentBlock, EmbeddedResource, ImageContent,
    ListSessionsRequest, McpServer, McpServerHttp, McpServerSse, NewSessionRequest, PromptRequest,
    ResumeSessionRequest, SessionConfigValueId, SetSessionConfigOptionRequest,
    SetSessionModeRequest, TextResourceContents,
};
use serde_json::Value;

use super::run::{Conn, Run, outcome_of, to_value};
use crate::report::Outcome;

/// A 1x1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
/// A short silent WAV.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";
/// Where the MCP check points its server: a port nothing listens on.
const MCP_URL: &str = "http://127.0.0.1:9/acp-check-mcp";

pub(crate) async fn run(run: &mut Run<'_>) {
    let names = [
        "capabilities.prompt_content",
        "capabilities.modes",
        "capabilities.config_options",
        "capabilities.session_methods",
        "capabilities.mcp",
    ];
    if !run.wants(&names) {
        return;
    }
    let started = Instant::now();
    let (conn, session) = match run.session().await {
        Ok(s) => s,
        Err(e) => {
            for name in names {
                run.record(name, started, Outcome::skip(format!("no session: {e}")));
            }
            return;
        }
    };
    let created = crate::wire::lock(&conn.session)
        .clone()
        .map(|(_, r)| r)
        .unwrap_or_default();
    if run.wants(&["capabilities.prompt_content"]) {
        let started = Instant::now();
        let outcome = prompt_content(run, &conn, &session).await;
        run.record("capabilities.prompt_content", started, outcome);
    }
    if run.wants(&["capabilities.modes"]) {
        let started = Instant::now();
        let outcome = modes(run, &conn, &session, &created).await;
        run.record("capabilities.modes", started, outcome);
    }
    if run.wants(&["capabilities.config_options"]) {
        let started = Instant::now();
        let outcome = config_options(run, &conn, &session, &created).await;
        run.record("capabilities.config_options", started, outcome);
    }
    if run.wants(&["capabilities.session_methods"]) {
        let started = Instant::now();
        let outcome = session_methods(run, &conn, &session).await;
        run.record("capabilities.session_methods", started, outcome);
    }
    if run.wants(&["capabilities.mcp"]) {
        let started = Instant::now();
        let outcome = mcp(run, &conn).await;
        run.record("capabilities.mcp", started, outcome);
    }
}

async fn prompt_content(run: &Run<'_>, conn: &Conn, session: &str) -> Outcome {
    let caps = ["image", "audio", "embeddedContext"];
    let mut accepted = Vec::new();
    for cap in caps {
        if conn.advertises(&["promptCapabilities", cap]).is_none() {
            continue;
        }
        let block: ContentBlock = match cap {
            "image" => ImageContent::new(PNG, "image/png").into(),
            "audio" => AudioContent::new(WAV, "audio/wav").into(),
            _ => EmbeddedResource::new(TextResourceContents::new(
                "notes embedded by acp check",
                "file:///acp-check/notes.md",
            ))
            .into(),
        };
        let text = run.options.script.prompts[0].clone();
        let request = PromptRequest::new(session, [text.into(), block]);
        let turn = run.options.bounds.turn;
        let reply = run
            .call_within(conn, "session/prompt", to_value(&request), turn)
            .await;
        match &reply {
            Ok(r) if r.error().is_none() => accepted.push(cap),
            _ => {
                return Outcome::fail(format!(
                    "advertised `{cap}` but a prompt with it got {}",
                    outcome_of(&reply)
                ));
            }
        }
        // Stray updates of the turn must not leak into the next request's window.
        tokio::time::sleep(super::run::GRACE).await;
    }
    if accepted.is_empty() {
        return Outcome::skip("no prompt content kind beyond text and links advertised");
    }
    Outcome::pass(format!("accepted {}", accepted.join(", ")))
}

async fn modes(run: &Run<'_>, conn: &Conn, session: &str, created: &Value) -> Outcome {
    let ids: Vec<String> = created
        .pointer("/modes/availableModes")
        .and_then(Value::as_array)
        .map(|modes| {
            modes
                .iter()
                .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if ids.is_empty() {
        return Outcome::skip("session/new offered no modes");
    }
    for id in &ids {
        let request = SetSessionModeRequest::new(session, id.as_str());
        let reply = run.call(conn, "session/set_mode", to_value(&request)).await;
        if !matches!(&reply, Ok(r) if r.error().is_none()) {
            return Outcome::fail(format!(
                "session/set_mode to offered mode `{id}`: {}",
                outcome_of(&reply)
            ));
        }
    }
    Outcome::pass(format!("set {}", ids.join(", ")))
}

async fn config_options(run: &Run<'_>, conn: &Conn, session: &str, created: &Value) -> Outcome {
    let options: Vec<(String, String)> = created
        .get("configOptions")
        .and_then(Value::as_array)
        .map(|options| {
            options
                .iter()
                .filter_map(|o| {
                    Some((
                        o.get("id")?.as_str()?.to_owned(),
                        o.get("currentValue")?.as_str()?.to_owned(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    if options.is_empty() {
        return Outcome::skip("session/new offered no select config options");
    }
    for (id, value) in &options {
        let request = SetSessionConfigOptionRequest::new(
            session,
            id.as_str(),
            SessionConfigValueId::from(value.clone()),
        );
        let reply = run
            .call(conn, "session/set_config_option", to_value(&request))
            .await;
        if !matches!(&reply, Ok(r) if r.error().is_none()) {
            return Outcome::fail(format!(
                "session/set_config_option `{id}` = `{value}` (its current value): {}",
                outcome_of(&reply)
            ));
        }
    }
    Outcome::pass(format!("{} options set", options.len()))
}

async fn session_methods(run: &Run<'_>, conn: &Conn, session: &str) -> Outcome {
    let mut tried = Vec::new();
    for method in ["list", "resume", "close"] {
        if conn.advertises(&["sessionCapabilities", method]).is_none() {
            continue;
        }
        let (wire_method, params) = match method {
            "list" => ("session/list", to_value(&ListSessionsRequest::new())),
            "resume" => (
                "session/resume",
                to_value(&ResumeSessionRequest::new(session, run.cwd())),
            ),
            _ => {
                // Closing the run's session would end the checks that follow: close a new one.
                let reply = run.new_session(conn).await;
                let Some(id) = reply.as_ref().ok().and_then(super::run::session_id) else {
                    return Outcome::fail(format!("a session to close: {}", outcome_of(&reply)));
                };
                ("session/close", to_value(&CloseSessionRequest::new(id)))
            }
        };
        let reply = run.call(conn, wire_method, params).await;
        let ok = match &reply {
            Ok(r) if method == "list" => r
                .result()
                .and_then(|r| r.get("sessions"))
                .is_some_and(Value::is_array),
            Ok(r) => r.error().is_none(),
            Err(_) => false,
        };
        if !ok {
            return Outcome::fail(format!("advertised {wire_method}: {}", outcome_of(&reply)));
        }
        tried.push(wire_method);
    }
    if tried.is_empty() {
        return Outcome::skip("none of session/list, session/resume, session/close advertised");
    }
    Outcome::pass(tried.join(", "))
}

async fn mcp(run: &Run<'_>, conn: &Conn) -> Outcome {
    let mut tried = Vec::new();
    for transport in ["http", "sse"] {
        if conn.advertises(&["mcpCapabilities", transport]).is_none() {
            continue;
        }
        let server: McpServer = match transport {
            "http" => McpServerHttp::new("acp-check", MCP_URL, []).into(),
            _ => McpServerSse::new("acp-check", MCP_URL, []).into(),
        };
        let request = NewSessionRequest::new(run.cwd(), [server]);
        let reply = run.call(conn, "session/new", to_value(&request)).await;
        match mcp_answer(transport, &reply) {
            Ok(note) => tried.push(note),
            Err(failed) => return failed,
        }
    }
    if tried.is_empty() {
        return Outcome::skip("no MCP transport beyond stdio advertised");
    }
    Outcome::pass(tried.join("; "))
}

/// How a `session/new` with an MCP server over an advertised `transport` was answered, for
/// `capabilities.mcp` and `v2.sessions.mcp`: a note when it was accepted or refused other than
/// as invalid, a failure when it was refused as invalid (`-32602`) or not answered.
pub(crate) fn mcp_answer(
    transport: &str,
    reply: &Result<crate::wire::Reply, crate::wire::NoReply>,
) -> Result<String, Outcome> {
    match reply {
        Ok(r) if r.error().is_some_and(|(code, _)| code == -32602) => Err(Outcome::fail(format!(
            "advertised MCP over {transport}, but session/new with such a server was refused as invalid: {}",
            r.describe()
        ))),
        Ok(r) => Ok(match r.error() {
            Some((code, _)) => format!("{transport}: refused with {code}, not as invalid"),
            None => format!("{transport}: accepted"),
        }),
        Err(e) => Err(Outcome::fail(format!(
            "session/new with an MCP server over {transport}: {e}"
        ))),
    }
}

/// `capabilities.offered_only`'s own turn: a fresh agent offered no file writing (and
/// otherwise what the run offers) is sent the prompt script's `write` turn. An agent that
/// asks to write anyway (OpenCode calls `fs/write_text_file` whatever it was offered) is
/// caught by the check, which grades every connection against what it offered
/// ([`super::wide`]). Without this turn, a run offering file writing (the default) could
/// not tell such an agent from an honest one.
pub(crate) async fn write_not_offered(run: &mut Run<'_>) {
    if !run.wants(&["capabilities.offered_only"]) || run.options.script.write.trim().is_empty() {
        return;
    }
    run.write_turn = Some(write_turn(run).await);
}

async fn write_turn(run: &mut Run<'_>) -> Result<(), String> {
    let offer = crate::Offer {
        write: false,
        ..run.options.offer
    };
    let client = crate::client::CheckClient::new(offer, run.workspace.clone())
        .map(std::sync::Arc::new)
        .map_err(|e| format!("cannot open the workspace: {e}"))?;
    let conn = run
        .fresh_with(client, offer)
        .await
        .map_err(|e| format!("cannot start the agent: {e}"))?;
    let reply = run.initialize(&conn, 1).await;
    let init = match &reply {
        Ok(r) => r.result().cloned(),
        Err(_) => None,
    }
    .ok_or_else(|| format!("`initialize`: {}", outcome_of(&reply)))?;
    *crate::wire::lock(&conn.init) = Some(init);
    let reply = run
        .new_session_authenticated(&conn)
        .await?
        .map_err(|e| format!("`session/new`: {e}"))?;
    let session = super::run::session_id(&reply)
        .ok_or_else(|| format!("`session/new`: {}", reply.describe()))?;
    let request = PromptRequest::new(session, [run.options.script.write.clone().into()]);
    let turn = run.options.bounds.turn;
    let reply = run
        .call_within(&conn, "session/prompt", to_value(&request), turn)
        .await;
    match &reply {
        Ok(r) if r.error().is_none() => Ok(()),
        _ => Err(format!("`session/prompt`: {}", outcome_of(&reply))),
    }
}
