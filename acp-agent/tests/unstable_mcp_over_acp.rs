//! MCP over ACP (feature `unstable_mcp_over_acp`): `mcp/message` both ways between an agent
//! served by acp-agent and a raw client over a duplex pipe.
//!
//! The agent calls the client's MCP servers through [`acp_agent::ClientHandle::mcp_message`]
//! (refused locally unless its own `initialize` answer advertised `mcpCapabilities.acp`), and
//! serves the client's calls to servers it declared through [`Agent::mcp_message`].
//!
//! `cargo test -p acp-agent --features unstable --test unstable_mcp_over_acp`.
#![cfg(feature = "unstable_mcp_over_acp")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_agent::CAPABILITY_NOT_ADVERTISED;
use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, ErrorCode, PromptContext};
use acp_rpc::{Config, Connection, Handler, NotificationContext, Params, RawValue, RequestContext};
use serde_json::{Value, json};

/// What the agent's calls to the client's MCP server gave.
type Outcomes = Arc<Mutex<Vec<Result<MessageMcpResponse, Error>>>>;

/// An agent that, on each prompt, calls the client's MCP servers, and that serves one MCP
/// server of its own (`agent-srv`).
struct Tooling {
    advertise: bool,
    outcomes: Outcomes,
    notified: Arc<Mutex<Vec<MessageMcpNotification>>>,
}

#[acp_agent::async_trait]
impl Agent for Tooling {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(
            InitializeResponse::new(ProtocolVersion::V1).agent_capabilities(
                AgentCapabilities::new()
                    .mcp_capabilities(McpCapabilities::new().acp(self.advertise)),
            ),
        )
    }

    async fn new_session(
        &self,
        p: NewSessionRequest,
        _cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        // The client's server arrives typed, beside any other transport.
        assert!(
            p.mcp_servers
                .iter()
                .any(|s| matches!(s, McpServer::Acp(a) if a.server_id.0 == "srv-1")),
            "{:?}",
            p.mcp_servers
        );
        Ok(NewSessionResponse::new("s1"))
    }

    async fn prompt(&self, _p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let client = cx.client();
        for server in ["srv-1", "srv-err", "srv-missing", "srv-bad"] {
            let call = MessageMcpRequest::new(server, "r1", "tools/call").params(
                serde_json::Map::from_iter([("name".to_owned(), Value::from("grep"))]),
            );
            let outcome = client.mcp_message(call).await;
            self.outcomes.lock().unwrap().push(outcome);
        }
        let progress = MessageMcpNotification::new("srv-1", "r1", "notifications/cancelled");
        if let Err(e) = client.mcp_message_notification(progress).await {
            self.outcomes.lock().unwrap().push(Err(e));
        }
        Ok(PromptResponse::new(StopReason::EndTurn))
    }

    async fn mcp_message(
        &self,
        p: MessageMcpRequest,
        _cx: &AgentContext,
    ) -> Result<MessageMcpResponse, Error> {
        if p.server_id.0 != "agent-srv" {
            return Err(Error::invalid_params(format!(
                "no MCP server {} on this connection",
                p.server_id.0
            )));
        }
        Ok(
            MessageMcpResult::new(json!({"tools": [{"name": "summarise"}], "asked": p.method}))
                .into(),
        )
    }

    async fn mcp_message_notification(&self, p: MessageMcpNotification) {
        self.notified.lock().unwrap().push(p);
    }
}

/// The raw client: serves MCP server `srv-1` (a result), `srv-err` (an MCP error with a
/// `null` data) and `srv-bad` (neither), and records the `mcp/message` traffic it receives.
#[derive(Clone, Default)]
struct McpHost {
    requests: Arc<Mutex<Vec<Value>>>,
    notifications: Arc<Mutex<Vec<Value>>>,
}

#[acp_rpc::async_trait]
impl Handler for McpHost {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let p: Value = params.parse()?;
        self.requests.lock().unwrap().push(p.clone());
        // Wire bytes on purpose: this is the peer, written as a client on any SDK would.
        let answer = match (method, p["serverId"].as_str()) {
            ("mcp/message", Some("srv-1")) => {
                r#"{"result":{"content":[{"type":"text","text":"3 matches"}],"isError":false}}"#
            }
            ("mcp/message", Some("srv-err")) => {
                r#"{"error":{"code":-32602,"message":"unknown tool","data":null}}"#
            }
            // Neither outcome: the caller must not take it for either.
            ("mcp/message", Some("srv-bad")) => r#"{"_meta":{}}"#,
            ("mcp/message", _) => return Err(Error::invalid_params("no such MCP server")),
            _ => return Err(Error::method_not_found(method)),
        };
        Ok(RawValue::from_string(answer.to_owned()).expect("valid JSON"))
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        if method == "mcp/message" {
            self.notifications.lock().unwrap().push(params.parse()?);
        }
        Ok(())
    }
}

struct Setup {
    client: Connection,
    host: McpHost,
    outcomes: Outcomes,
    notified: Arc<Mutex<Vec<MessageMcpNotification>>>,
    _agent: acp_agent::AgentConnection,
}

fn setup(advertise: bool) -> Setup {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    let outcomes = Outcomes::default();
    let notified = Arc::new(Mutex::new(Vec::new()));
    let agent = acp_agent::Builder::new(Tooling {
        advertise,
        outcomes: outcomes.clone(),
        notified: notified.clone(),
    })
    .io(ar, aw);
    let host = McpHost::default();
    let client = Connection::new(br, bw, host.clone(), Config::default());
    Setup {
        client,
        host,
        outcomes,
        notified,
        _agent: agent,
    }
}

impl Setup {
    async fn call(&self, method: &str, params: Value) -> Result<Value, Error> {
        tokio::time::timeout(
            Duration::from_secs(10),
            self.client.peer().request(method, &params),
        )
        .await
        .expect("no answer within 10 s")
    }

    async fn start_and_prompt(&self) {
        self.call("initialize", json!({"protocolVersion": 1}))
            .await
            .unwrap();
        self.call(
            "session/new",
            json!({"cwd": "/w", "mcpServers": [
                {"type": "acp", "name": "project tools", "serverId": "srv-1"},
                {"name": "fs", "command": "/bin/mcp-fs", "args": [], "env": []}
            ]}),
        )
        .await
        .unwrap();
        let turn = self
            .call(
                "session/prompt",
                json!({"sessionId": "s1", "prompt": [{"type": "text", "text": "grep"}]}),
            )
            .await
            .unwrap();
        assert_eq!(turn["stopReason"], "end_turn");
    }
}

#[tokio::test]
async fn an_agent_advertising_acp_servers_calls_the_clients_mcp_server_typed() {
    let setup = setup(true);
    setup.start_and_prompt().await;
    let outcomes = std::mem::take(&mut *setup.outcomes.lock().unwrap());
    assert_eq!(outcomes.len(), 4, "{outcomes:?}");
    let Ok(MessageMcpResponse::Result(found)) = &outcomes[0] else {
        panic!("a result: {:?}", outcomes[0])
    };
    assert_eq!(found.result["content"][0]["text"], "3 matches");
    // The MCP server's error is a successful ACP answer, its `null` data kept as such.
    let Ok(MessageMcpResponse::Error(failed)) = &outcomes[1] else {
        panic!("an MCP error: {:?}", outcomes[1])
    };
    assert_eq!(
        (failed.error.code, failed.error.data.clone()),
        (-32602, Some(None))
    );
    // An unknown server is an ACP error.
    let refused = outcomes[2].as_ref().unwrap_err();
    assert_eq!(refused.code, ErrorCode::INVALID_PARAMS);
    // An answer with neither outcome is an error naming the method, not a guess.
    let unreadable = outcomes[3].as_ref().unwrap_err();
    assert_eq!(unreadable.code, ErrorCode::INTERNAL_ERROR);
    assert!(unreadable.message.contains("mcp/message"), "{unreadable:?}");
    let sent = setup.host.requests.lock().unwrap().clone();
    assert_eq!(
        sent[0],
        json!({"serverId": "srv-1", "requestId": "r1", "method": "tools/call", "params": {"name": "grep"}})
    );
    // The notification went out after the requests, before the prompt's answer.
    let notes = setup.host.notifications.lock().unwrap().clone();
    assert_eq!(
        notes,
        [json!({"serverId": "srv-1", "requestId": "r1", "method": "notifications/cancelled"})]
    );
}

#[tokio::test]
async fn an_agent_that_did_not_advertise_acp_servers_sends_no_mcp_message() {
    let setup = setup(false);
    setup.start_and_prompt().await;
    let outcomes = std::mem::take(&mut *setup.outcomes.lock().unwrap());
    // Four refused requests and the refused notification, none of them sent.
    assert_eq!(outcomes.len(), 5, "{outcomes:?}");
    for outcome in &outcomes {
        let error = outcome.as_ref().unwrap_err();
        assert_eq!(error.code, CAPABILITY_NOT_ADVERTISED);
        assert!(error.message.contains("mcpCapabilities.acp"), "{error:?}");
    }
    assert!(setup.host.requests.lock().unwrap().is_empty());
    assert!(setup.host.notifications.lock().unwrap().is_empty());
}

#[tokio::test]
async fn the_agent_serves_mcp_messages_for_its_own_servers_and_refuses_malformed_ones() {
    let setup = setup(true);
    setup
        .call("initialize", json!({"protocolVersion": 1}))
        .await
        .unwrap();
    let answer = setup
        .call(
            "mcp/message",
            json!({"serverId": "agent-srv", "requestId": "7", "method": "tools/list"}),
        )
        .await
        .unwrap();
    assert_eq!(
        answer,
        json!({"result": {"tools": [{"name": "summarise"}], "asked": "tools/list"}})
    );
    let unknown = setup
        .call(
            "mcp/message",
            json!({"serverId": "elsewhere", "requestId": "8", "method": "tools/list"}),
        )
        .await
        .unwrap_err();
    assert_eq!(unknown.code, ErrorCode::INVALID_PARAMS);
    // Malformed messages: -32602 naming what is wrong, and the connection keeps serving.
    for (bad, says) in [
        (json!({"serverId": "agent-srv", "requestId": "9"}), "method"),
        (
            json!({"serverId": "agent-srv", "method": "tools/list"}),
            "requestId",
        ),
        (
            json!({"serverId": "agent-srv", "requestId": "9", "method": "x", "params": [1]}),
            "params",
        ),
        (
            json!({"serverId": 5, "requestId": "9", "method": "x"}),
            "serverId",
        ),
        (json!(null), ""),
    ] {
        let error = setup.call("mcp/message", bad.clone()).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{bad}: {error:?}");
        // The message says what is wrong; `data.field` names where (serde's own messages
        // name missing fields only).
        let said = format!("{} {:?}", error.message, error.data);
        assert!(said.contains(says), "{bad}: {said}");
    }
    // The notification reaches the agent typed, in order.
    for id in ["7", "8"] {
        setup
            .client
            .peer()
            .notify(
                "mcp/message",
                &json!({"serverId": "agent-srv", "requestId": id, "method": "notifications/progress",
                        "params": {"progress": 1}}),
            )
            .await
            .unwrap();
    }
    // A malformed notification is dropped (nothing to answer) and the next one still arrives.
    setup
        .client
        .peer()
        .notify("mcp/message", &json!({"serverId": "agent-srv"}))
        .await
        .unwrap();
    setup
        .client
        .peer()
        .notify(
            "mcp/message",
            &json!({"serverId": "agent-srv", "requestId": "9", "method": "notifications/progress"}),
        )
        .await
        .unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let ids: Vec<String> = setup
                .notified
                .lock()
                .unwrap()
                .iter()
                .map(|n| n.request_id.0.clone())
                .collect();
            if ids.len() >= 3 {
                return ids;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the notifications arrive");
    assert_eq!(seen, ["7", "8", "9"]);
}

#[tokio::test]
async fn an_agent_without_mcp_servers_answers_method_not_found() {
    struct Plain;
    #[acp_agent::async_trait]
    impl Agent for Plain {
        async fn initialize(
            &self,
            _p: InitializeRequest,
            _cx: &AgentContext,
        ) -> Result<InitializeResponse, Error> {
            Ok(InitializeResponse::new(ProtocolVersion::V1))
        }
    }
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    let _agent = acp_agent::Builder::new(Plain).io(ar, aw);
    let client = Connection::new(br, bw, McpHost::default(), Config::default());
    let peer = client.peer();
    peer.request::<_, Value>("initialize", &json!({"protocolVersion": 1}))
        .await
        .unwrap();
    let error = peer
        .request::<_, Value>(
            "mcp/message",
            &json!({"serverId": "s", "requestId": "1", "method": "tools/list"}),
        )
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);
    // The advertised capability defaults to off and is written as `false`.
    let init: Value = peer
        .request("initialize", &json!({"protocolVersion": 1}))
        .await
        .unwrap();
    assert_eq!(init["agentCapabilities"]["mcpCapabilities"]["acp"], false);
}
