//! The official Rust SDK's client in the matrix (`agent-client-protocol` 5.2.0):
//! `acp-interop rust-client --cwd <workspace> -- <agent command...>`, or
//! `… --url <url> --token <token>` to reach a remote agent with the official
//! `agent-client-protocol-http` 5.0.0 client (`HttpClient`: HTTP/SSE for `http://`, WebSocket
//! for `ws://`), the token sent as `Authorization: Bearer` on every request.
//!
//! A `Client.v1()` builder with typed handlers (permission, fs, terminals, `session/update`)
//! connected to an `AcpAgent` child process; the script runs in the `connect_with` future.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ClientSessionCapabilities, CompactionCapabilities,
    ContentBlock, ContentChunk, CreateTerminalRequest, CreateTerminalResponse, EmbeddedResource,
    EmbeddedResourceResource, FileSystemCapabilities, ImageContent, Implementation,
    InitializeRequest, KillTerminalRequest, KillTerminalResponse, LoadSessionRequest,
    NewSessionRequest, NoticeCapabilities, PermissionOptionKind, PromptRequest,
    ReadTextFileRequest, ReadTextFileResponse, ReleaseTerminalRequest, ReleaseTerminalResponse,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, SessionUpdate, TerminalExitStatus,
    TerminalOutputRequest, TerminalOutputResponse, TextResourceContents, ToolKind,
    WaitForTerminalExitRequest, WaitForTerminalExitResponse, WriteTextFileRequest,
    WriteTextFileResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{
    AcpAgent, AcpAgentConfig, Agent, Client, ConnectTo, Error, UntypedMessage,
};
use agent_client_protocol_http::HttpClient;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::sync::{Notify, watch};

use crate::peers::remote::AgentTarget;
use crate::report::Reporter;
use crate::script::script;

use acp_rpc::sync::lock;

/// A terminal: a real child process with its output collected up to a byte limit.
struct Term {
    output: Arc<Mutex<Vec<u8>>>,
    truncated: Arc<Mutex<bool>>,
    exit: watch::Receiver<Option<TerminalExitStatus>>,
    kill: Arc<Notify>,
}

#[derive(Default)]
struct State {
    turn: Mutex<Option<&'static str>>,
    holding: Notify,
    terminals: Mutex<HashMap<String, Term>>,
}

impl State {
    fn turn(&self) -> Option<&'static str> {
        *lock(&self.turn)
    }
    fn set_turn(&self, turn: Option<&'static str>) {
        *lock(&self.turn) = turn;
    }
    fn terminal<T>(&self, id: &str, f: impl FnOnce(&Term) -> T) -> Result<T, Error> {
        lock(&self.terminals)
            .get(id)
            .map(f)
            .ok_or_else(|| Error::invalid_params().data(json!({"terminalId": id})))
    }
}

fn inside(root: &Path, path: &Path) -> Result<PathBuf, Error> {
    let parent = path.parent().and_then(|p| std::fs::canonicalize(p).ok());
    let resolved = parent.map(|p| p.join(path.file_name().unwrap_or_default()));
    match resolved {
        Some(p) if p.starts_with(root) => Ok(p),
        _ => {
            Err(Error::invalid_params()
                .data(json!({"path": path, "reason": "outside the workspace"})))
        }
    }
}

fn create_terminal(
    state: &State,
    request: &CreateTerminalRequest,
    cwd: &Path,
) -> Result<String, std::io::Error> {
    let mut child = tokio::process::Command::new(&request.command)
        .args(&request.args)
        .current_dir(request.cwd.as_deref().unwrap_or(cwd))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let limit = request.output_byte_limit.map_or(1 << 20, |l| l as usize);
    let output = Arc::new(Mutex::new(Vec::new()));
    let truncated = Arc::new(Mutex::new(false));
    let (exit_tx, exit) = watch::channel(None);
    let kill = Arc::new(Notify::new());
    let pumps: Vec<_> = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
    ]
    .into_iter()
    .flatten()
    .map(|mut pipe| {
        let (output, truncated) = (output.clone(), truncated.clone());
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut buf).await {
                let mut out = lock(&output);
                out.extend_from_slice(&buf[..n]);
                if out.len() > limit {
                    let cut = out.len() - limit;
                    out.drain(..cut);
                    *lock(&truncated) = true;
                }
            }
        })
    })
    .collect();
    let killer = kill.clone();
    tokio::spawn(async move {
        let status = tokio::select! {
            s = child.wait() => s,
            _ = killer.notified() => { let _ = child.start_kill(); child.wait().await }
        };
        for pump in pumps {
            let _ = pump.await;
        }
        let status = status.ok();
        let code = status
            .and_then(|s| s.code())
            .and_then(|c| u32::try_from(c).ok());
        let _ = exit_tx.send(Some(TerminalExitStatus::new().exit_code(code)));
    });
    let id = format!("term-{}", lock(&state.terminals).len() + 1);
    lock(&state.terminals).insert(
        id.clone(),
        Term {
            output,
            truncated,
            exit,
            kill,
        },
    );
    Ok(id)
}

/// Runs the client script against the agent `command`, in workspace `cwd`.
pub async fn run(cwd: PathBuf, target: AgentTarget) -> Result<(), Box<dyn std::error::Error>> {
    match target {
        AgentTarget::Spawn(command) => {
            let (program, args) = command.split_first().ok_or("no agent command after --")?;
            let agent = AcpAgent::new(
                AcpAgentConfig::new(program)
                    .args(args.iter().map(|a| a.to_string_lossy().into_owned())),
            );
            drive(cwd, agent).await
        }
        AgentTarget::Remote { url, token } => {
            let mut headers = reqwest::header::HeaderMap::new();
            headers.insert(
                reqwest::header::AUTHORIZATION,
                format!("Bearer {token}").parse()?,
            );
            let agent = HttpClient::builder_with_endpoint(&url)
                .configure_http(|http| http.no_proxy().default_headers(headers))
                .build()?;
            drive(cwd, agent).await
        }
    }
}

async fn drive(
    cwd: PathBuf,
    agent: impl ConnectTo<Client> + 'static,
) -> Result<(), Box<dyn std::error::Error>> {
    let out = Reporter::stdout();
    let cwd = std::fs::canonicalize(cwd)?;
    let state = Arc::new(State::default());

    let (st, o) = (state.clone(), out.clone());
    let (st_perm, o_perm) = (state.clone(), out.clone());
    let (o_read, root_read) = (out.clone(), cwd.clone());
    let (o_write, root_write) = (out.clone(), cwd.clone());
    let (st_create, o_create, cwd_create) = (state.clone(), out.clone(), cwd.clone());
    let (st_output, st_wait, st_kill, st_release) =
        (state.clone(), state.clone(), state.clone(), state.clone());
    let (st_main, o_main, cwd_main) = (state.clone(), out.clone(), cwd.clone());

    Client
        .v1()
        .name("rust-interop-client")
        .on_receive_notification(
            async move |n: SessionNotification, _cx: ConnectionTo<Agent>| {
                let turn = st.turn();
                o.event(json!({"event": "update", "turn": turn, "sessionId": n.session_id, "update": n.update}));
                if let SessionUpdate::AgentMessageChunk(ContentChunk { content: ContentBlock::Text(text), .. }) = &n.update
                    && turn == Some("3")
                    && text.text == script().holding_message
                {
                    st.holding.notify_one();
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest,
                        responder: Responder<RequestPermissionResponse>,
                        cx: ConnectionTo<Agent>| {
                let turn = st_perm.turn();
                if turn == Some("2") {
                    cx.send_notification(CancelNotification::new(request.session_id.clone()))?;
                    o_perm.event(json!({"event": "cancel_sent", "turn": turn}));
                    o_perm.event(json!({"event": "permission", "turn": turn, "toolCallId": request.tool_call.tool_call_id, "outcome": "cancelled"}));
                    return responder.respond(RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled));
                }
                // acp_client::permission's rule, on the official crate's types: refuse a
                // delete (reject_once, else reject_always), allow anything else once (never an
                // "always" option; refused when there is no one-time allow).
                if request.options.is_empty() {
                    return responder.respond_with_error(Error::invalid_params());
                }
                let find = |kind: PermissionOptionKind| request.options.iter().find(|o| o.kind == kind);
                let allow = if request.tool_call.fields.kind == Some(ToolKind::Delete) {
                    None
                } else {
                    find(PermissionOptionKind::AllowOnce)
                };
                let Some(option) = allow
                    .or_else(|| find(PermissionOptionKind::RejectOnce))
                    .or_else(|| find(PermissionOptionKind::RejectAlways))
                else {
                    o_perm.event(json!({"event": "permission", "turn": turn, "toolCallId": request.tool_call.tool_call_id, "outcome": "cancelled"}));
                    return responder.respond(RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled));
                };
                o_perm.event(json!({"event": "permission", "turn": turn, "toolCallId": request.tool_call.tool_call_id, "outcome": "selected", "optionId": option.option_id}));
                responder.respond(RequestPermissionResponse::new(RequestPermissionOutcome::Selected(
                    SelectedPermissionOutcome::new(option.option_id.clone()),
                )))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ReadTextFileRequest,
                        responder: Responder<ReadTextFileResponse>,
                        _cx: ConnectionTo<Agent>| {
                o_read.event(json!({"event": "fs_read", "path": request.path}));
                let path = inside(&root_read, &request.path)?;
                let content = std::fs::read_to_string(path).map_err(Error::into_internal_error)?;
                responder.respond(ReadTextFileResponse::new(content))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: WriteTextFileRequest,
                        responder: Responder<WriteTextFileResponse>,
                        _cx: ConnectionTo<Agent>| {
                o_write.event(json!({"event": "fs_write", "path": request.path}));
                let path = inside(&root_write, &request.path)?;
                std::fs::write(path, &request.content).map_err(Error::into_internal_error)?;
                responder.respond(WriteTextFileResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CreateTerminalRequest,
                        responder: Responder<CreateTerminalResponse>,
                        _cx: ConnectionTo<Agent>| {
                o_create.event(json!({"event": "terminal_create", "command": request.command, "args": request.args}));
                let id = create_terminal(&st_create, &request, &cwd_create).map_err(Error::into_internal_error)?;
                responder.respond(CreateTerminalResponse::new(id))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: TerminalOutputRequest,
                        responder: Responder<TerminalOutputResponse>,
                        _cx: ConnectionTo<Agent>| {
                let (output, truncated, exit) = st_output.terminal(&request.terminal_id.0, |t| {
                    (String::from_utf8_lossy(&lock(&t.output)).into_owned(), *lock(&t.truncated), t.exit.borrow().clone())
                })?;
                responder.respond(TerminalOutputResponse::new(output, truncated).exit_status(exit))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: WaitForTerminalExitRequest,
                        responder: Responder<WaitForTerminalExitResponse>,
                        cx: ConnectionTo<Agent>| {
                let mut exit = st_wait.terminal(&request.terminal_id.0, |t| t.exit.clone())?;
                // Waiting must not hold the dispatch loop.
                cx.spawn(async move {
                    let status = exit
                        .wait_for(Option::is_some)
                        .await
                        .map_err(Error::into_internal_error)?
                        .clone()
                        .unwrap_or_default();
                    responder.respond(WaitForTerminalExitResponse::new(status))
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: KillTerminalRequest,
                        responder: Responder<KillTerminalResponse>,
                        _cx: ConnectionTo<Agent>| {
                st_kill.terminal(&request.terminal_id.0, |t| t.kill.notify_one())?;
                responder.respond(KillTerminalResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ReleaseTerminalRequest,
                        responder: Responder<ReleaseTerminalResponse>,
                        _cx: ConnectionTo<Agent>| {
                if let Some(t) = lock(&st_release.terminals).remove(&request.terminal_id.0.to_string()) {
                    t.kill.notify_one();
                }
                responder.respond(ReleaseTerminalResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(agent, async move |cx: ConnectionTo<Agent>| {
            script_run(&cx, &st_main, &o_main, &cwd_main).await
        })
        .await?;
    out.event(json!({"event": "agent_exit", "code": null, "signal": null, "note": "AcpAgent owns the process; the tap records its exit"}));
    out.event(json!({"event": "done"}));
    Ok(())
}

async fn bad_call(
    cx: &ConnectionTo<Agent>,
    out: &Reporter,
    name: &str,
    method: &str,
    params: Value,
) -> Result<(), Error> {
    let result = cx
        .send_request(UntypedMessage::new(method, params)?)
        .block_task()
        .await;
    let code = result.err().map(|e| i32::from(e.code));
    out.event(json!({"event": "error", "bad_call": name, "code": code}));
    Ok(())
}

async fn script_run(
    cx: &ConnectionTo<Agent>,
    state: &State,
    out: &Reporter,
    cwd: &Path,
) -> Result<(), Error> {
    let sc = script();
    let init = InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(
            ClientCapabilities::new()
                .fs(FileSystemCapabilities::new()
                    .read_text_file(true)
                    .write_text_file(true))
                .terminal(true)
                .session(
                    ClientSessionCapabilities::new()
                        .notices(NoticeCapabilities::new())
                        .compaction(CompactionCapabilities::new()),
                ),
        )
        .client_info(Implementation::new("rust-interop-client", "5.2.0"));
    let init = cx.send_request(init).block_task().await?;
    let load = init.agent_capabilities.load_session;
    out.event(json!({"event": "initialized", "protocolVersion": init.protocol_version, "loadSession": load}));

    let sid = cx
        .send_request(NewSessionRequest::new(cwd))
        .block_task()
        .await?
        .session_id;
    out.event(json!({"event": "session", "sessionId": sid}));
    bad_call(cx, out, "unknown_method", &sc.unknown_method, json!({})).await?;
    bad_call(
        cx,
        out,
        "invalid_params",
        "session/prompt",
        json!({"sessionId": sid, "prompt": "not a list of blocks"}),
    )
    .await?;

    state.set_turn(Some("1"));
    let resource = TextResourceContents::new(&sc.resource_text, &sc.resource_uri)
        .mime_type("text/markdown".to_owned());
    let first = PromptRequest::new(
        sid.clone(),
        vec![
            ContentBlock::from(&sc.prompts.work),
            ContentBlock::Image(ImageContent::new(&sc.image.data, &sc.image.mime_type)),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(resource),
            )),
        ],
    );
    let first = cx.send_request(first).block_task().await?;
    out.event(json!({"event": "stop", "turn": "1", "stopReason": first.stop_reason}));

    state.set_turn(Some("2"));
    let second = PromptRequest::new(sid.clone(), vec![ContentBlock::from(&sc.prompts.cancel)]);
    let second = cx.send_request(second).block_task().await?;
    out.event(json!({"event": "stop", "turn": "2", "stopReason": second.stop_reason}));

    state.set_turn(Some("3"));
    let third = PromptRequest::new(sid.clone(), vec![ContentBlock::from(&sc.prompts.hold)]);
    let sent = cx.send_request(third);
    let handle = sent.cancellation_handle();
    let result = {
        let wait = sent.block_task();
        tokio::pin!(wait);
        tokio::select! {
            r = &mut wait => r,
            _ = state.holding.notified() => {
                handle.cancel()?;
                wait.await
            }
        }
    };
    match result {
        Ok(r) => out.event(json!({"event": "stop", "turn": "3", "stopReason": r.stop_reason})),
        Err(e) => {
            out.event(json!({"event": "request_cancelled", "turn": "3", "code": i32::from(e.code)}))
        }
    }

    if load {
        state.set_turn(Some("load"));
        cx.send_request(LoadSessionRequest::new(sid.clone(), cwd))
            .block_task()
            .await?;
        out.event(json!({"event": "loaded", "sessionId": sid}));
    }
    state.set_turn(None);
    Ok(())
}
