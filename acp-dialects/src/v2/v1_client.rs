//! A v1 client driving a v2 agent: the translation for the client's role, on the skeleton
//! of [`crate::translate`]. [`Shared`] is what its two ends share: per session, what
//! [`ToV1`] keeps and the v1 prompt waiting for the turn's end.

use std::collections::HashMap;
use std::sync::Mutex;

use acp_rpc::{Error, RequestContext};
use acp_types::{v1, v2};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::map::{
    auth_methods_to_v1, json_of, markers_to_flags, mcp_servers_to_v2, recast, stop_reason_to_v1,
    unmapped,
};
use super::native::{AgentHandle, Client};
use super::updates::ToV1;
use crate::translate::{LegacyEnd, OnDrop, V1End, v1_routes};
use crate::{AdapterOptions, lock};

/// What the two ends of a v2 agent behind a v1 client share: with
/// [`AdapterOptions::handshake`] (the v2 agent's answer to a negotiation's v2 offer), the
/// v1 `initialize` is answered from it instead of sending a second v2 `initialize`.
pub(crate) fn state(options: AdapterOptions) -> Shared {
    Shared {
        handshake: Mutex::new(options.handshake),
        sessions: Mutex::default(),
        turns: Mutex::default(),
    }
}

/// The v2 `initialize` that stands for a v1 client's: `info` from `clientInfo`,
/// `auth.terminal` and `elicitation` as the client offers (v2 has no client `fs` or
/// `terminal`). What [`super::drive_for_v1_client`] sends, and what a negotiating client
/// offers as its v2 handshake.
pub fn v2_initialize(p: &v1::InitializeRequest) -> Result<v2::InitializeRequest, Error> {
    let info = match &p.client_info {
        Some(info) => json_of(info),
        None => json!({ "name": "v1 client", "version": "unknown" }),
    };
    let mut capabilities = json!({});
    if p.client_capabilities.auth.terminal {
        capabilities["auth"] = json!({ "terminal": {} });
    }
    if let Some(elicitation) = &p.client_capabilities.elicitation {
        capabilities["elicitation"] = json_of(elicitation);
    }
    let request = json!({ "protocolVersion": 2, "info": info, "capabilities": capabilities });
    recast(request, "the client's initialize")
}

/// The state both ends of the translation share.
pub(crate) struct Shared {
    /// The v2 agent's answer to the negotiation's v2 `initialize`, until the v1 client's
    /// `initialize` takes it.
    handshake: Mutex<Option<Value>>,
    sessions: Mutex<HashMap<String, ToV1>>,
    /// The v1 prompt of each session waiting for the v2 agent's `state_update` idle.
    turns: Mutex<HashMap<String, oneshot::Sender<Value>>>,
}

impl Shared {
    fn with<T>(&self, session: &str, f: impl FnOnce(&mut ToV1) -> T) -> T {
        f(lock(&self.sessions).entry(session.to_string()).or_default())
    }

    /// A v2 session answer (`configOptions`) as v1's: the options a v1 client sees, in v1's
    /// shape, and, when one is the agent's mode option, v1 `modes` from it.
    fn answered(&self, session: &str, mut answer: Value) -> Value {
        let options = answer["configOptions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let (modes, shown) = self.with(session, |s| (s.config(&options), s.shown(&options)));
        if let Some(modes) = modes {
            answer["modes"] = modes;
        }
        if let Some(o) = answer.as_object_mut() {
            o.remove("availableCommands");
            // v1's own shape (`id`, not `configId`): a v1 reader drops options it cannot
            // read, so the v2 shape would reach the client as no options at all.
            if shown.is_empty() {
                o.remove("configOptions");
            } else {
                o.insert("configOptions".into(), Value::Array(shown));
            }
        }
        answer
    }
}

/// A v1 session request's fields as v2's.
fn session_fields<T: serde::Serialize>(request: &T) -> Value {
    let mut v = json_of(request);
    mcp_servers_to_v2(&mut v["mcpServers"]);
    if let Some(o) = v.as_object_mut() {
        o.remove("systemPrompt");
        o.retain(|_, v| !v.is_null());
    }
    v
}

/// The v1 agent the user's client talks to on the pair; its calls go to the v2 agent.
type V1Agent = V1End<Shared, AgentHandle>;

v1_routes! {
    V1Agent;
    requests {
        v1::names::INITIALIZE => initialize,
        v1::names::AUTHENTICATE => authenticate,
        v1::names::LOGOUT => logout,
        v1::names::SESSION_NEW => new_session,
        v1::names::SESSION_LOAD => load,
        v1::names::SESSION_RESUME => resume,
        v1::names::SESSION_LIST => list,
        v1::names::SESSION_CLOSE => close,
        v1::names::SESSION_DELETE => delete,
        v1::names::SESSION_SET_MODE => set_mode,
        v1::names::SESSION_SET_CONFIG_OPTION => set_config_option,
        v1::names::SESSION_PROMPT => prompt,
    }
    refuse |method| unmapped(method, "a v2 agent has no such method");
    notifications { v1::names::SESSION_CANCEL => cancel }
    drop |method| tracing::warn!(method, "notification from the v1 client dropped: v2 has no equivalent");
}

impl V1Agent {
    async fn initialize(
        &self,
        _cx: &RequestContext,
        p: v1::InitializeRequest,
    ) -> Result<v1::InitializeResponse, Error> {
        let handshake = lock(&self.handshake).take();
        let answer = match handshake {
            Some(answer) => answer,
            None => json_of(&self.legacy()?.initialize(v2_initialize(&p)?).await?),
        };
        let session = &answer["capabilities"]["session"];
        let mut mcp = markers_to_flags(session.get("mcp"));
        if let Some(o) = mcp.as_object_mut() {
            o.remove("stdio");
        }
        let mut methods = answer["authMethods"].clone();
        auth_methods_to_v1(&mut methods);
        let mut response = json!({
            "protocolVersion": 1,
            "agentCapabilities": {
                // session/load is session/resume with replay, which every v2 agent serves.
                "loadSession": true,
                "promptCapabilities": markers_to_flags(session.get("prompt")),
                "mcpCapabilities": mcp,
                "sessionCapabilities": {
                    "list": {}, "resume": {}, "close": {},
                    "delete": session.get("delete").filter(|d| !d.is_null()),
                    "additionalDirectories": session.get("additionalDirectories").filter(|d| !d.is_null()),
                },
                "auth": { "logout": {} },
            },
            "agentInfo": answer["info"],
        });
        if methods.as_array().is_some_and(|m| !m.is_empty()) {
            response["authMethods"] = methods;
        }
        let caps = &mut response["agentCapabilities"]["sessionCapabilities"];
        if let Some(o) = caps.as_object_mut() {
            o.retain(|_, v| !v.is_null());
        }
        recast(response, "the agent's initialize answer")
    }

    async fn authenticate(
        &self,
        _cx: &RequestContext,
        p: v1::AuthenticateRequest,
    ) -> Result<v1::AuthenticateResponse, Error> {
        let login: v2::LoginAuthRequest = recast(json_of(&p), "authenticate")?;
        self.legacy()?.auth_login(login).await?;
        Ok(v1::AuthenticateResponse::default())
    }

    async fn logout(
        &self,
        _cx: &RequestContext,
        p: v1::LogoutRequest,
    ) -> Result<v1::LogoutResponse, Error> {
        let logout: v2::LogoutAuthRequest = recast(json_of(&p), "logout")?;
        self.legacy()?.auth_logout(logout).await?;
        Ok(v1::LogoutResponse::default())
    }

    async fn new_session(
        &self,
        _cx: &RequestContext,
        p: v1::NewSessionRequest,
    ) -> Result<v1::NewSessionResponse, Error> {
        let request: v2::NewSessionRequest = recast(session_fields(&p), "session/new")?;
        let answer = json_of(&self.legacy()?.session_new(request).await?);
        let id = answer["sessionId"].as_str().unwrap_or_default().to_string();
        recast(self.answered(&id, answer), "the session/new answer")
    }

    /// `session/load` is `session/resume` with `replayFrom: start`: the history comes as
    /// updates before the answer.
    async fn load(
        &self,
        _cx: &RequestContext,
        p: v1::LoadSessionRequest,
    ) -> Result<v1::LoadSessionResponse, Error> {
        let mut request = session_fields(&p);
        request["replayFrom"] = json!({ "type": "start" });
        let answer = self.resume_v2(request).await?;
        recast(
            self.answered(&p.session_id.0, answer),
            "the session/load answer",
        )
    }

    async fn resume(
        &self,
        _cx: &RequestContext,
        p: v1::ResumeSessionRequest,
    ) -> Result<v1::ResumeSessionResponse, Error> {
        let answer = self.resume_v2(session_fields(&p)).await?;
        recast(
            self.answered(&p.session_id.0, answer),
            "the session/resume answer",
        )
    }

    async fn resume_v2(&self, request: Value) -> Result<Value, Error> {
        let request: v2::ResumeSessionRequest = recast(request, "session/resume")?;
        Ok(json_of(&self.legacy()?.session_resume(request).await?))
    }

    async fn list(
        &self,
        _cx: &RequestContext,
        p: v1::ListSessionsRequest,
    ) -> Result<v1::ListSessionsResponse, Error> {
        let request: v2::ListSessionsRequest = recast(json_of(&p), "session/list")?;
        let answer = self.legacy()?.session_list(request).await?;
        recast(json_of(&answer), "the session/list answer")
    }

    async fn close(
        &self,
        _cx: &RequestContext,
        p: v1::CloseSessionRequest,
    ) -> Result<v1::CloseSessionResponse, Error> {
        let request: v2::CloseSessionRequest = recast(json_of(&p), "session/close")?;
        self.legacy()?.session_close(request).await?;
        lock(&self.sessions).remove(&p.session_id.0);
        Ok(v1::CloseSessionResponse::default())
    }

    async fn delete(
        &self,
        _cx: &RequestContext,
        p: v1::DeleteSessionRequest,
    ) -> Result<v1::DeleteSessionResponse, Error> {
        let request: v2::DeleteSessionRequest = recast(json_of(&p), "session/delete")?;
        self.legacy()?.session_delete(request).await?;
        lock(&self.sessions).remove(&p.session_id.0);
        Ok(v1::DeleteSessionResponse::default())
    }

    /// `session/set_mode` is `session/set_config_option` on the agent's mode option.
    async fn set_mode(
        &self,
        _cx: &RequestContext,
        p: v1::SetSessionModeRequest,
    ) -> Result<v1::SetSessionModeResponse, Error> {
        let id = p.session_id.0.clone();
        let Some(option) = self.with(&id, |s| s.mode.as_ref().map(|(o, _)| o.clone())) else {
            let why = "the v2 agent has no config option of category `mode` for this session";
            return Err(unmapped(v1::names::SESSION_SET_MODE, why));
        };
        let set = json!({ "sessionId": id, "configId": option, "type": "id", "value": p.mode_id });
        let set: v2::SetSessionConfigOptionRequest = recast(set, "the mode")?;
        let answer = json_of(&self.legacy()?.session_set_config_option(set).await?);
        let options = answer["configOptions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        self.with(&id, |s| s.config(&options));
        Ok(v1::SetSessionModeResponse::default())
    }

    async fn set_config_option(
        &self,
        _cx: &RequestContext,
        p: v1::SetSessionConfigOptionRequest,
    ) -> Result<v1::SetSessionConfigOptionResponse, Error> {
        // v1 writes a select's value id without `type`; v2 tags every value (`id`).
        let mut request = json_of(&p);
        if request.get("type").is_none() {
            request["type"] = json!("id");
        }
        let set: v2::SetSessionConfigOptionRequest = recast(request, "the config option")?;
        let answer = json_of(&self.legacy()?.session_set_config_option(set).await?);
        let options = answer["configOptions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let shown = self.with(&p.session_id.0, |s| {
            s.config(&options);
            s.shown(&options)
        });
        recast(json!({ "configOptions": shown }), "the config options")
    }

    /// `session/prompt` is v2's prompt (answered at once with the message id) and the
    /// turn's end: the `state_update` idle whose stop reason answers the v1 prompt.
    async fn prompt(
        &self,
        _cx: &RequestContext,
        p: v1::PromptRequest,
    ) -> Result<v1::PromptResponse, Error> {
        let id = p.session_id.0.clone();
        let request = json!({ "sessionId": id, "prompt": json_of(&p.prompt) });
        let request: v2::PromptRequest = recast(request, "the prompt")?;
        let (done, idle) = oneshot::channel();
        if lock(&self.turns).insert(id.clone(), done).is_some() {
            tracing::warn!(session = %id, "a second prompt while one runs: the first waits no more");
        }
        self.with(&id, |s| s.prompting = true);
        let _turn = OnDrop(|| {
            lock(&self.turns).remove(&id);
            self.with(&id, |s| s.prompting = false);
        });
        self.legacy()?.session_prompt(request).await?;
        let idle = idle
            .await
            .map_err(|_| Error::internal_error("the turn ended without a state_update idle"))?;
        if idle["stopReason"] == "error" {
            let error = idle.get("error").cloned().unwrap_or(Value::Null);
            let code = error["code"]
                .as_i64()
                .and_then(|c| i32::try_from(c).ok())
                .unwrap_or(-32603);
            let message = error["message"]
                .as_str()
                .unwrap_or("the turn failed")
                .to_string();
            let mut e = Error::new(acp_rpc::ErrorCode(code), message);
            if let Some(data) = error.get("data").filter(|d| !d.is_null()) {
                e = e.with_data(data.clone());
            }
            return Err(e);
        }
        let reason = stop_reason_to_v1(idle["stopReason"].as_str());
        recast(json!({ "stopReason": reason }), "the turn's stop reason")
    }

    async fn cancel(&self, n: v1::CancelNotification) -> Result<(), Error> {
        let cancel: v2::CancelSessionNotification = recast(json_of(&n), "session/cancel")?;
        self.legacy()?.session_cancel(cancel).await
    }
}

/// The v2 client the agent sees; its calls go to the user's v1 client.
type V2Client = LegacyEnd<Shared, AgentHandle>;

#[async_trait]
impl Client for V2Client {
    async fn session_request_permission(
        &self,
        p: v2::RequestPermissionRequest,
    ) -> Result<v2::RequestPermissionResponse, Error> {
        let request = json_of(&p);
        let subject = &request["subject"];
        let mut call = match subject["type"].as_str() {
            Some("tool_call") => subject["toolCall"].clone(),
            Some("command") => json!({
                "toolCallId": subject.get("toolCallId").filter(|t| !t.is_null()).cloned()
                    .unwrap_or_else(|| json!(format!("command-{}", p.session_id.0))),
                "kind": "execute",
                "rawInput": { "command": subject["command"], "cwd": subject["cwd"] },
            }),
            _ => json!({ "toolCallId": format!("permission-{}", p.session_id.0) }),
        };
        if let Some(o) = call.as_object_mut() {
            o.retain(|_, v| !v.is_null());
        }
        super::map::map_content(&mut call, super::map::content_to_v1);
        call["title"] = json!(p.title);
        let request =
            json!({ "sessionId": p.session_id, "toolCall": call, "options": request["options"] });
        let request: v1::RequestPermissionRequest = recast(request, "the permission request")?;
        let answer = self.v1.typed_request(&request).await?;
        recast(json_of(&answer), "the permission answer")
    }

    async fn elicitation_create(
        &self,
        p: v2::CreateElicitationRequest,
    ) -> Result<v2::CreateElicitationResponse, Error> {
        let request: v1::CreateElicitationRequest = recast(json_of(&p), "the elicitation")?;
        let answer = self.v1.typed_request(&request).await?;
        recast(json_of(&answer), "the elicitation answer")
    }

    async fn session_update(&self, n: v2::UpdateSessionNotification) -> Result<(), Error> {
        let id = n.session_id.0.clone();
        let update = json_of(&n.update);
        if update["sessionUpdate"] == "state_update" {
            if update["state"] == "idle"
                && let Some(done) = lock(&self.turns).remove(&id)
            {
                let _ = done.send(update);
            }
            return Ok(());
        }
        let updates = match self.with(&id, |s| s.update(update)) {
            Ok(updates) => updates,
            Err(why) => {
                tracing::warn!(session = %id, %why, "a v2 session/update was not passed to the v1 client");
                return Ok(());
            }
        };
        for update in updates {
            let update: v1::SessionUpdate = recast(update, "the session update")?;
            let n = v1::SessionNotification::new(id.as_str(), update);
            self.v1.notify_value(v1::names::SESSION_UPDATE, n).await?;
        }
        Ok(())
    }

    async fn elicitation_complete(
        &self,
        n: v2::CompleteElicitationNotification,
    ) -> Result<(), Error> {
        let n: v1::CompleteElicitationNotification = recast(json_of(&n), "elicitation/complete")?;
        self.v1.notify(v1::names::ELICITATION_COMPLETE, &n).await
    }
}
