//! A v1 agent served to a v2 client: the translation for the agent's role, on the skeleton
//! of [`crate::translate`]. [`Shared`] is what its two ends share: the v1 agent's
//! `initialize` answer and, per session, what [`ToV2`] keeps.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use acp_rpc::{Error, Peer};
use acp_types::{v1, v2};
use async_trait::async_trait;
use serde_json::{Value, json};

use super::map::{
    MODE_OPTION, auth_methods_to_v2, flags_to_markers, json_of, mcp_servers_to_v1, recast, unmapped,
};
use super::native::{Agent, ClientHandle, Context};
use super::terminals::Terminals;
use super::updates::ToV2;
use crate::translate::LegacyEnd;
use crate::{AdapterOptions, lock};

mod calls;

/// At most this many sessions are kept that only the v1 agent's own updates named (see
/// `Shared::unclaimed`).
pub(crate) const MAX_UNCLAIMED: usize = 64;

/// What the two ends of a v1 agent served to a v2 client share, built from `options`.
pub(crate) fn state(options: AdapterOptions) -> Shared {
    Shared {
        init: OnceLock::new(),
        sessions: Arc::default(),
        closed: Mutex::default(),
        unclaimed: Mutex::default(),
        quiet: Mutex::default(),
        terminals: options.local_terminals.then(Terminals::default),
        options,
    }
}

/// The state both ends of the translation share.
pub(crate) struct Shared {
    /// The v1 agent's `initialize` answer, as JSON.
    init: OnceLock<Value>,
    /// Each session's mapping state, by session id.
    sessions: Arc<Mutex<HashMap<String, ToV2>>>,
    /// Sessions of this connection that `session/close` closed (until a `session/resume`
    /// opens one again): their prompts are refused here, since a v1 agent need not refuse
    /// them itself. Only sessions the translation knew are kept, so the set is bounded by
    /// the sessions made on the connection.
    closed: Mutex<HashSet<String>>,
    /// Sessions whose mapping state the v1 agent's own updates made before any answer of
    /// the agent's named them to the client (an update sent while its `session/new` is being
    /// answered, say): at most [`MAX_UNCLAIMED`], so an agent naming made-up sessions cannot
    /// grow the translation's state. An answer that names the session claims it.
    unclaimed: Mutex<HashSet<String>>,
    /// Sessions loaded only to be resumed: the v1 agent's replay is not shown.
    quiet: Mutex<HashSet<String>>,
    /// The terminals the translation runs for the v1 agent
    /// ([`AdapterOptions::local_terminals`]).
    pub(crate) terminals: Option<Terminals>,
    options: AdapterOptions,
}

impl Shared {
    fn init(&self) -> Result<&Value, Error> {
        self.init
            .get()
            .ok_or_else(|| Error::invalid_request("initialize must be the first request"))
    }

    fn with<T>(&self, session: &str, f: impl FnOnce(&mut ToV2) -> T) -> T {
        let mut sessions = lock(&self.sessions);
        // Looked up before an entry is made: a streamed chunk costs no allocation here.
        match sessions.get_mut(session) {
            Some(s) => f(s),
            None => f(sessions.entry(session.to_string()).or_default()),
        }
    }

    /// Runs `f` on the mapping state of a session the v1 agent named in a call of its own,
    /// made on first sight unless the client closed the session: `None` then. An update the
    /// agent sends late (the built-in agent's commands follow its `session/new` answer) may
    /// be handled after the client's `session/close`, and must not open the session again,
    /// or its prompts would be served. `closed` is read under the sessions' lock, which
    /// `session/close` also holds, so the two cannot interleave.
    ///
    /// A session no answer of the agent has named yet is made only while fewer than
    /// [`MAX_UNCLAIMED`] such sessions are kept; past that, `None` too.
    fn with_named<T>(&self, session: &str, f: impl FnOnce(&mut ToV2) -> T) -> Option<T> {
        let mut sessions = lock(&self.sessions);
        if let Some(s) = sessions.get_mut(session) {
            return Some(f(s));
        }
        if lock(&self.closed).contains(session) {
            return None;
        }
        let mut unclaimed = lock(&self.unclaimed);
        if unclaimed.len() >= MAX_UNCLAIMED {
            return None;
        }
        unclaimed.insert(session.to_string());
        Some(f(sessions.entry(session.to_string()).or_default()))
    }

    /// Records a v1 session answer's modes and config options; returns what the v2 client
    /// sees (`configOptions`, `availableCommands` none).
    fn answered(&self, session: &str, answer: &Value) -> Value {
        lock(&self.unclaimed).remove(session);
        self.with(session, |s| {
            s.modes = answer.get("modes").filter(|m| !m.is_null()).cloned();
            s.models = answer.get("models").filter(|m| !m.is_null()).cloned();
            let config = answer
                .get("configOptions")
                .and_then(Value::as_array)
                .cloned();
            s.config = config.unwrap_or_default();
            json!({ "configOptions": s.options() })
        })
    }
}

/// The v2 agent the client sees; every call becomes v1 calls to the agent on the pair.
type V2Agent = LegacyEnd<Shared, ClientHandle>;

/// A v2 session request's fields as v1's (`cwd`, `mcpServers`, `additionalDirectories`):
/// v2 leaves an empty `mcpServers` out, v1 requires it.
fn session_fields<T: serde::Serialize>(request: &T) -> Value {
    let mut v = json_of(request);
    if v["mcpServers"].is_null() {
        v["mcpServers"] = json!([]);
    }
    mcp_servers_to_v1(&mut v["mcpServers"]);
    if let Some(o) = v.as_object_mut() {
        o.remove("replayFrom");
        o.retain(|_, v| !v.is_null());
    }
    v
}

#[async_trait]
impl Agent for V2Agent {
    async fn initialize(
        &self,
        p: v2::InitializeRequest,
        _cx: &Context,
    ) -> Result<v2::InitializeResponse, Error> {
        let files = self.options.fs.is_some();
        let mut capabilities = json!({
            "fs": { "readTextFile": files, "writeTextFile": files },
            "terminal": self.terminals.is_some(),
        });
        let client = json_of(&p.capabilities);
        if client["auth"]["terminal"].is_object() {
            capabilities["auth"] = json!({ "terminal": true });
        }
        if client["elicitation"].is_object() {
            capabilities["elicitation"] = client["elicitation"].clone();
        }
        let request = json!({
            "protocolVersion": 1,
            "clientInfo": json_of(&p.info),
            "clientCapabilities": capabilities,
        });
        let request: v1::InitializeRequest = recast(request, "the client's initialize")?;
        let answer = json_of(&self.v1.typed_request(&request).await?);
        let _ = self.init.set(answer.clone());
        let caps = &answer["agentCapabilities"];
        let session = json!({
            "prompt": flags_to_markers(caps.get("promptCapabilities")),
            "mcp": {
                // v1 agents all take stdio servers.
                "stdio": {},
                "http": caps["mcpCapabilities"]["http"].as_bool().filter(|h| *h).map(|_| json!({})),
            },
            "delete": caps["sessionCapabilities"]["delete"],
            "additionalDirectories": caps["sessionCapabilities"]["additionalDirectories"],
        });
        let mut methods = answer["authMethods"].clone();
        auth_methods_to_v2(&mut methods);
        let info = match answer.get("agentInfo").filter(|i| !i.is_null()) {
            Some(info) => info.clone(),
            None => json!({ "name": "v1 agent", "version": "unknown" }),
        };
        let mut response = json!({
            "protocolVersion": 2,
            "info": info,
            "capabilities": { "session": session, "auth": {} },
        });
        if methods.as_array().is_some_and(|m| !m.is_empty()) {
            response["authMethods"] = methods;
        }
        recast(strip_nulls(response), "the agent's initialize answer")
    }

    async fn auth_login(
        &self,
        p: v2::LoginAuthRequest,
        _cx: &Context,
    ) -> Result<v2::LoginAuthResponse, Error> {
        self.init()?;
        let request: v1::AuthenticateRequest = recast(json_of(&p), "auth/login")?;
        self.v1.typed_request(&request).await?;
        Ok(v2::LoginAuthResponse::default())
    }

    async fn auth_logout(
        &self,
        p: v2::LogoutAuthRequest,
        _cx: &Context,
    ) -> Result<v2::LogoutAuthResponse, Error> {
        let init = self.init()?;
        if init["agentCapabilities"]["auth"]["logout"].is_null() {
            let why = "the v1 agent does not advertise logout";
            return Err(unmapped(v2::names::AUTH_LOGOUT, why));
        }
        let request: v1::LogoutRequest = recast(json_of(&p), "auth/logout")?;
        self.v1.typed_request(&request).await?;
        Ok(v2::LogoutAuthResponse::default())
    }

    async fn session_new(
        &self,
        p: v2::NewSessionRequest,
        _cx: &Context,
    ) -> Result<v2::NewSessionResponse, Error> {
        self.init()?;
        let request: v1::NewSessionRequest = recast(session_fields(&p), "session/new")?;
        let answer = json_of(&self.v1.typed_request(&request).await?);
        let id = answer["sessionId"].as_str().unwrap_or_default().to_string();
        let mut response = self.answered(&id, &answer);
        response["sessionId"] = json!(id);
        recast(response, "the session/new answer")
    }

    async fn session_list(
        &self,
        p: v2::ListSessionsRequest,
        _cx: &Context,
    ) -> Result<v2::ListSessionsResponse, Error> {
        let init = self.init()?;
        if init["agentCapabilities"]["sessionCapabilities"]["list"].is_null() {
            let why = "the v1 agent does not advertise session/list";
            return Err(unmapped(v2::names::SESSION_LIST, why));
        }
        let request: v1::ListSessionsRequest = recast(json_of(&p), "session/list")?;
        let answer = self.v1.typed_request(&request).await?;
        recast(json_of(&answer), "the session/list answer")
    }

    async fn session_delete(
        &self,
        p: v2::DeleteSessionRequest,
        _cx: &Context,
    ) -> Result<v2::DeleteSessionResponse, Error> {
        self.init()?;
        let request: v1::DeleteSessionRequest = recast(json_of(&p), "session/delete")?;
        self.v1.typed_request(&request).await?;
        lock(&self.sessions).remove(&p.session_id.0);
        lock(&self.closed).remove(&p.session_id.0);
        lock(&self.unclaimed).remove(&p.session_id.0);
        Ok(v2::DeleteSessionResponse::default())
    }

    async fn session_resume(
        &self,
        p: v2::ResumeSessionRequest,
        _cx: &Context,
    ) -> Result<v2::ResumeSessionResponse, Error> {
        let caps = &self.init()?["agentCapabilities"];
        let id = p.session_id.0.clone();
        let fields = session_fields(&p);
        let load = caps["loadSession"].as_bool() == Some(true);
        let answer = if p.replay_from.is_none() && !caps["sessionCapabilities"]["resume"].is_null()
        {
            let request: v1::ResumeSessionRequest = recast(fields, "session/resume")?;
            json_of(&self.v1.typed_request(&request).await?)
        } else if load {
            // A resume without replay loads with the replay kept from the client.
            let quiet = p.replay_from.is_none();
            if quiet {
                lock(&self.quiet).insert(id.clone());
            }
            let request = recast::<v1::LoadSessionRequest>(fields, "session/load");
            let answer = match request {
                Ok(request) => self.v1.typed_request(&request).await,
                Err(e) => Err(e),
            };
            lock(&self.quiet).remove(&id);
            json_of(&answer?)
        } else if p.replay_from.is_none() && lock(&self.sessions).contains_key(&id) {
            // Live on this connection already (made or resumed here, not closed): a resume
            // without replay has nothing to restore, so the v1 agent need not support one.
            let answer = self.with(&id, |s| json!({ "configOptions": s.options() }));
            return recast(answer, "the session/resume answer");
        } else {
            let why = if p.replay_from.is_some() {
                "replayFrom needs session/load, and the v1 agent does not advertise loadSession"
            } else {
                "the v1 agent advertises neither session/resume nor loadSession"
            };
            return Err(unmapped(v2::names::SESSION_RESUME, why));
        };
        self.with(&id, ToV2::break_message);
        lock(&self.closed).remove(&id);
        recast(self.answered(&id, &answer), "the session/resume answer")
    }

    async fn session_close(
        &self,
        p: v2::CloseSessionRequest,
        _cx: &Context,
    ) -> Result<v2::CloseSessionResponse, Error> {
        let init = self.init()?;
        if !init["agentCapabilities"]["sessionCapabilities"]["close"].is_null() {
            let request: v1::CloseSessionRequest = recast(json_of(&p), "session/close")?;
            self.v1.typed_request(&request).await?;
        }
        // Both locks at once, in the order `with_named` takes them.
        let mut sessions = lock(&self.sessions);
        if sessions.remove(&p.session_id.0).is_some() {
            lock(&self.closed).insert(p.session_id.0.clone());
            lock(&self.unclaimed).remove(&p.session_id.0);
        }
        Ok(v2::CloseSessionResponse::default())
    }

    async fn tool_call_cancel(
        &self,
        _p: v2::CancelToolCallRequest,
        _cx: &Context,
    ) -> Result<v2::CancelToolCallResponse, Error> {
        let why = "v1 has no way to cancel one tool call (session/cancel stops the turn)";
        Err(unmapped(v2::names::TOOL_CALL_CANCEL, why))
    }

    async fn terminal_cancel(
        &self,
        p: v2::CancelTerminalRequest,
        _cx: &Context,
    ) -> Result<v2::CancelTerminalResponse, Error> {
        match &self.terminals {
            Some(terminals) => {
                terminals.kill(&p.terminal_id.0)?;
                Ok(v2::CancelTerminalResponse::default())
            }
            None => Err(unmapped(
                v2::names::TERMINAL_CANCEL,
                "the v1 agent's terminals are not run by this translation (AdapterOptions::with_local_terminals)",
            )),
        }
    }

    async fn session_set_config_option(
        &self,
        p: v2::SetSessionConfigOptionRequest,
        _cx: &Context,
    ) -> Result<v2::SetSessionConfigOptionResponse, Error> {
        self.init()?;
        let id = p.session_id.0.clone();
        let request = json_of(&p);
        let is_mode = request["configId"] == MODE_OPTION
            && self.with(&id, |s| {
                s.modes.is_some() && !s.config.iter().any(|o| o["id"] == MODE_OPTION)
            });
        if is_mode {
            let mode = request["value"].clone();
            let set = json!({ "sessionId": id, "modeId": mode });
            let set: v1::SetSessionModeRequest = recast(set, "the mode")?;
            self.v1.typed_request(&set).await?;
            let options = self.with(&id, |s| {
                if let Some(modes) = &mut s.modes {
                    modes["currentModeId"] = mode;
                }
                s.options()
            });
            return recast(json!({ "configOptions": options }), "the config options");
        }
        if self.with(&id, |s| s.is_models_option(&request["configId"])) {
            // The unstable v1 `session/set_model`, by name: v1's typed request is behind a
            // feature this crate does not take.
            let model = request["value"].clone();
            let set = json!({ "sessionId": id, "modelId": model });
            let _: Value = self.v1.request("session/set_model", &set).await?;
            let options = self.with(&id, |s| {
                if let Some(models) = &mut s.models {
                    models["currentModelId"] = model;
                }
                s.options()
            });
            return recast(json!({ "configOptions": options }), "the config options");
        }
        // v2 tags a select's value id (`type: id`); v1 writes it without `type`.
        let mut request = request;
        if request["type"] == "id"
            && let Some(o) = request.as_object_mut()
        {
            o.remove("type");
        }
        let set: v1::SetSessionConfigOptionRequest = recast(request, "the config option")?;
        let answer = json_of(&self.v1.typed_request(&set).await?);
        let options = self.with(&id, |s| {
            s.config = answer["configOptions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            s.options()
        });
        recast(json!({ "configOptions": options }), "the config options")
    }

    async fn session_prompt(
        &self,
        p: v2::PromptRequest,
        _cx: &Context,
    ) -> Result<v2::PromptResponse, Error> {
        self.init()?;
        let id = p.session_id.0.clone();
        // Only a session made, resumed or loaded on this connection (or one the agent's own
        // updates named): the mapping state is made for no other id, so a client naming
        // made-up sessions cannot grow it.
        if !lock(&self.sessions).contains_key(&id) {
            let why = if lock(&self.closed).contains(&id) {
                format!("session `{id}` was closed by session/close; session/resume opens it again")
            } else {
                format!("no session `{id}` on this connection: session/new or session/resume first")
            };
            return Err(Error::resource_not_found(why));
        }
        let user = self.with(&id, |s| {
            s.break_message();
            s.next_id("user")
        });
        let prompt = json!({ "sessionId": id, "prompt": json_of(&p.prompt) });
        let prompt: v1::PromptRequest = recast(prompt, "the prompt")?;
        let client = self.legacy()?.clone();
        let running = json!({ "sessionUpdate": "state_update", "state": "running" });
        send(&client, &id, running).await?;
        let echo = json!({ "sessionUpdate": "user_message", "messageId": user, "content": json_of(&p.prompt) });
        send(&client, &id, echo).await?;
        tokio::spawn(turn(
            self.v1.clone(),
            client,
            self.sessions.clone(),
            id,
            prompt,
        ));
        Ok(v2::PromptResponse::new(user))
    }

    async fn session_cancel(&self, p: v2::CancelSessionNotification) -> Result<(), Error> {
        let cancel: v1::CancelNotification = recast(json_of(&p), "session/cancel")?;
        self.v1.notify(v1::names::SESSION_CANCEL, &cancel).await
    }
}

/// Runs the v1 prompt and reports its end to the v2 client as `state_update` idle with
/// the stop reason (`error` with the error when the prompt failed).
async fn turn(
    v1: Peer,
    client: ClientHandle,
    sessions: Arc<Mutex<HashMap<String, ToV2>>>,
    id: String,
    prompt: v1::PromptRequest,
) {
    let result = v1.typed_request(&prompt).await;
    if let Some(s) = lock(&sessions).get_mut(&id) {
        s.break_message();
    }
    let idle = match result {
        Ok(answer) => json!({
            "sessionUpdate": "state_update", "state": "idle", "stopReason": json_of(&answer.stop_reason),
        }),
        Err(e) => json!({
            "sessionUpdate": "state_update", "state": "idle", "stopReason": "error", "error": json_of(&e),
        }),
    };
    if let Err(e) = send(&client, &id, idle).await {
        tracing::debug!(session = %id, error = %e, "the turn's end could not be sent to the v2 client");
    }
}

/// Sends a v2 update (as JSON) about `session` to the client.
async fn send(client: &ClientHandle, session: &str, update: Value) -> Result<(), Error> {
    let update: v2::SessionUpdate = recast(update, "the session update")?;
    let n = v2::UpdateSessionNotification::new(session, update);
    client.session_update(n).await
}

/// `value` without its `null` members, at any depth (v2 reads an absent capability as
/// `null`, but some of its objects take no `null`).
fn strip_nulls(mut value: Value) -> Value {
    if let Some(o) = value.as_object_mut() {
        o.retain(|_, v| !v.is_null());
        for v in o.values_mut() {
            *v = strip_nulls(v.take());
        }
    }
    value
}
