//! The run that drives the checks: one agent connection at a time ([`Conn`]), what the
//! kit learned about it, and the steps every check shares (a fresh or initialized agent,
//! a session, a call with its bound, the recording of outcomes).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_client::process::AgentProcess;
use acp_types::v1::{
    AuthenticateRequest, ClientCapabilities, FileSystemCapabilities, Implementation,
    InitializeRequest, McpServer, NewSessionRequest,
};
use serde_json::Value;

use super::catalog::CHECKS;
pub(crate) use super::replies::{
    carries_turn_content, outcome_of, session_id, to_value, updates, within,
};
pub(crate) use super::support::{Exit, write_megabyte};
use crate::client::{CheckClient, CheckClientV2};
use crate::options::{Offer, Options};
use crate::report::{CheckResult, Outcome, Report, millis};
use crate::target::Target;
use crate::wire::{Entry, NoReply, Reply, TraceEvent, Wire, WireClient, lock};

/// How long the kit watches for stray updates after an answer.
pub(super) const GRACE: Duration = Duration::from_millis(200);

/// One agent and what the kit learned about it.
pub(crate) struct Conn {
    pub wire: Wire,
    /// What the client offered this agent (`initialize`'s `clientCapabilities`).
    pub offer: Offer,
    process: Mutex<Option<AgentProcess>>,
    /// The `initialize` result, once answered.
    pub init: Mutex<Option<Value>>,
    /// The first session's id and its `session/new` result.
    pub session: Mutex<Option<(String, Value)>>,
    /// The kit's v2 client on a v2 connection (it keeps the agent's `session/update`s).
    pub v2: Option<Arc<CheckClientV2>>,
    broken: AtomicBool,
}

impl Conn {
    /// How the agent exited, when it is a process that has exited (or does within 3 s: its
    /// output has ended, so it normally is exiting; a loaded machine may take a while to
    /// reap it): its command, exit status and stderr tail. `None` for an agent in process or
    /// one still running.
    pub async fn exit(&self) -> Option<Exit> {
        let mut process = lock(&self.process).take()?;
        let exited = tokio::time::timeout(Duration::from_secs(3), process.wait_exit()).await;
        *lock(&self.process) = Some(process);
        match exited {
            Ok(acp_client::process::ProcessError::Exited {
                command,
                status,
                stderr_tail,
            }) => Some(Exit {
                command,
                status: status.to_string(),
                stderr_tail,
            }),
            _ => None,
        }
    }

    /// The `initialize` result (an empty object before it is known).
    pub fn init(&self) -> Value {
        lock(&self.init).clone().unwrap_or(Value::Null)
    }
    /// Whether the advertised capability at `path` (under `agentCapabilities`) is set.
    pub fn advertises(&self, path: &[&str]) -> Option<Value> {
        let mut v = self.init().get("agentCapabilities")?.clone();
        for key in path {
            v = v.get(key)?.clone();
        }
        (!v.is_null() && v != Value::Bool(false)).then_some(v)
    }
}

/// A run in progress.
pub(crate) struct Run<'a> {
    target: &'a Target,
    pub options: &'a Options,
    pub workspace: PathBuf,
    pub client: Arc<CheckClient>,
    seq: Arc<Mutex<u64>>,
    ids: Arc<AtomicI64>,
    /// Why a fresh agent cannot be had (it did not answer `initialize`): later checks skip
    /// at once instead of each waiting a bound for the same silence.
    dead: Option<String>,
    /// How `capabilities.offered_only`'s own turn went: `Ok` when the agent took a turn
    /// asking it to write with no file writing offered, `Err(why)` when that turn could
    /// not be had; `None` when it was not tried.
    pub write_turn: Option<Result<(), String>>,
    /// Set when the agent exited before answering `initialize` (how, with its stderr), or
    /// does not speak the pinned version: the run stops there, since no check can run.
    /// (The whole story, and the short cause for the summary line.)
    stopped: Option<(String, String)>,
    /// The protocol version graded (1 until the handshake settles otherwise): which
    /// `initialize` [`Run::ready`] sends, which client serves the agent, and which types
    /// its messages are read with.
    pub protocol: u16,
    /// How [`Run::protocol`] was chosen, for the report.
    pub protocol_note: String,
    results: Vec<CheckResult>,
    conn: Option<Arc<Conn>>,
    done: Vec<Arc<Conn>>,
}

impl<'a> Run<'a> {
    pub fn new(
        target: &'a Target,
        options: &'a Options,
        workspace: PathBuf,
    ) -> std::io::Result<Self> {
        Ok(Run {
            target,
            options,
            client: Arc::new(CheckClient::new(options.offer, workspace.clone())?),
            workspace,
            seq: Arc::new(Mutex::new(0)),
            ids: Arc::new(AtomicI64::new(1)),
            dead: None,
            stopped: None,
            protocol: options.protocol.unwrap_or(1),
            protocol_note: match options.protocol {
                Some(v) => format!("pinned by --protocol {v}"),
                None => "offered 2 and 1".into(),
            },
            write_turn: None,
            results: Vec::new(),
            conn: None,
            done: Vec::new(),
        })
    }

    /// Takes the reason the run must stop, when a step set one ([`Run::stop_after`]).
    pub fn stopping(&mut self) -> Option<(String, String)> {
        self.stopped.take()
    }

    /// The report of a run whose steps all ran, in the table's order whatever order the
    /// checks ran in.
    pub fn report(mut self) -> Report {
        let mut checks = std::mem::take(&mut self.results);
        checks.sort_by_key(|c| CHECKS.iter().position(|i| i.name == c.name));
        Report {
            agent: self.target.describe(),
            checks,
            stopped: None,
            protocol: Some(self.protocol),
            protocol_note: std::mem::take(&mut self.protocol_note),
        }
    }

    /// Ends a run whose version, once settled, leaves no selected check (`--only` named
    /// only the other version's): one failed `setup` pseudo-check says why, so the run fails
    /// rather than passing with nothing graded.
    pub async fn refuse(mut self, protocol: u16, why: String) -> Report {
        self.retire().await;
        Report {
            agent: self.target.describe(),
            checks: vec![CheckResult {
                name: "setup",
                outcome: Outcome::fail(why),
                millis: 0,
            }],
            stopped: None,
            protocol: Some(protocol),
            protocol_note: std::mem::take(&mut self.protocol_note),
        }
    }

    /// Ends a run that cannot go on (the agent exited before answering `initialize`): the
    /// report holds the checks that ran and says why the others did not, once.
    pub async fn stop(mut self, (reason, because): (String, String)) -> Report {
        self.retire().await;
        let mut checks = std::mem::take(&mut self.results);
        checks.sort_by_key(|c| CHECKS.iter().position(|i| i.name == c.name));
        let protocol = self.protocol;
        let not_run = CHECKS
            .iter()
            .filter(|c| {
                super::catalog::applies(c.name, protocol)
                    && self.options.selected(c.name)
                    && !checks.iter().any(|r| r.name == c.name)
            })
            .count();
        Report {
            agent: self.target.describe(),
            checks,
            stopped: Some(crate::report::Stopped {
                reason,
                not_run,
                because,
            }),
            protocol: Some(protocol),
            protocol_note: std::mem::take(&mut self.protocol_note),
        }
    }

    /// Stops the run after the current step (see [`Run::stop`]): the agent exited before
    /// answering `initialize` (`reason` says how).
    pub fn stop_after(&mut self, reason: String) {
        self.stop_because(
            reason,
            "the agent exited before answering `initialize`".into(),
        );
    }

    /// Stops the run after the current step, with the whole story (`reason`) and the short
    /// cause for the summary line (`because`).
    pub fn stop_because(&mut self, reason: String, because: String) {
        self.stopped = Some((reason, because));
    }

    /// Whether any of `names` is selected (a step only they need is skipped otherwise).
    pub fn wants(&self, names: &[&str]) -> bool {
        names.iter().any(|n| self.options.selected(n))
    }

    /// Records a check's outcome (if it is selected).
    pub fn record(&mut self, name: &'static str, started: Instant, outcome: Outcome) {
        self.record_ms(name, millis(started.elapsed()), outcome);
    }

    /// Records a check's outcome with a measured time.
    pub fn record_ms(&mut self, name: &'static str, millis: u64, outcome: Outcome) {
        debug_assert!(
            CHECKS.iter().any(|c| c.name == name),
            "{name} is not in CHECKS"
        );
        if self.options.selected(name) {
            tracing::debug!(
                check = name,
                outcome = outcome.word(),
                "{}",
                outcome.detail()
            );
            self.results.push(CheckResult {
                name,
                outcome,
                millis,
            });
        }
    }

    /// Notes that the agent did not answer `initialize` (see [`Run::ready`]).
    pub fn dead(&mut self, why: String) {
        self.dead = Some(why);
    }

    /// Records a timing check from the answer `reply` (a skip when there was none).
    pub fn record_timing(
        &mut self,
        name: &'static str,
        started: Instant,
        reply: &Result<Reply, NoReply>,
        bound: Duration,
    ) {
        match reply {
            Ok(r) => self.record_ms(name, millis(r.elapsed), within(r.elapsed, bound, "")),
            Err(e) => self.record(
                name,
                started,
                Outcome::skip(format!("no answer to time: {e}")),
            ),
        }
    }

    /// Starts a fresh agent (the current one is retired), not yet initialized.
    pub async fn fresh(&mut self) -> Result<Arc<Conn>, String> {
        let client = self.client.clone();
        self.fresh_with(client, self.options.offer).await
    }

    /// Starts a fresh agent for a version-`protocol` connection (the kit's v1 client, or
    /// its v2 client, which shares the v1 client's permission policy), not yet initialized.
    pub async fn fresh_for(&mut self, protocol: u16) -> Result<Arc<Conn>, String> {
        if protocol == 2 {
            let client = WireClient::V2(Arc::new(CheckClientV2::new(self.client.clone())));
            return self.fresh_wire(client, self.options.offer).await;
        }
        self.fresh().await
    }

    /// Starts a fresh agent served by `client`, which offers `offer` (the current agent is
    /// retired), not yet initialized.
    pub async fn fresh_with(
        &mut self,
        client: Arc<CheckClient>,
        offer: Offer,
    ) -> Result<Arc<Conn>, String> {
        self.fresh_wire(WireClient::V1(client), offer).await
    }

    async fn fresh_wire(&mut self, client: WireClient, offer: Offer) -> Result<Arc<Conn>, String> {
        self.retire().await;
        let started = self.target.start()?;
        if let Some(trace) = &self.options.trace {
            trace(TraceEvent::Start {
                command: &self.target.argv(),
            });
        }
        let v2 = match &client {
            WireClient::V2(client) => Some(client.clone()),
            WireClient::V1(_) => None,
        };
        let wire = Wire::start(
            client,
            started.from_agent,
            started.to_agent,
            (self.seq.clone(), self.ids.clone()),
            self.options.trace.clone(),
        );
        let conn = Arc::new(Conn {
            wire,
            offer,
            process: Mutex::new(started.process),
            init: Mutex::new(None),
            session: Mutex::new(None),
            v2,
            broken: AtomicBool::new(false),
        });
        self.conn = Some(conn.clone());
        Ok(conn)
    }

    /// Ends the current agent, if any (its log is kept for the end-of-run checks).
    pub async fn retire(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        conn.wire.close();
        let process = lock(&conn.process).take();
        let (code, signal) = match process {
            Some(process) => match process.shutdown(Duration::from_millis(300)).await {
                Ok(status) => {
                    use std::os::unix::process::ExitStatusExt;
                    (status.code(), status.signal())
                }
                Err(_) => (None, None),
            },
            None => (None, None),
        };
        if let Some(trace) = &self.options.trace {
            trace(TraceEvent::Exit { code, signal });
        }
        self.done.push(conn);
    }

    /// An initialized agent: the current one if it is healthy, else a fresh one.
    pub async fn ready(&mut self) -> Result<Arc<Conn>, String> {
        if let Some(conn) = &self.conn
            && !conn.broken.load(Ordering::Relaxed)
            && !conn.wire.is_closed()
            && lock(&conn.init).is_some()
        {
            return Ok(conn.clone());
        }
        if let Some(why) = &self.dead {
            return Err(why.clone());
        }
        let conn = self.fresh_for(self.protocol).await?;
        let handshake = if self.protocol == 2 {
            self.initialize_v2(&conn, 2).await
        } else {
            self.initialize(&conn, 1).await
        };
        let reply = match handshake {
            Ok(reply) => reply,
            Err(e) => {
                let why = format!("the agent did not answer `initialize`: {e}");
                self.dead = Some(why.clone());
                return Err(why);
            }
        };
        match reply.result() {
            Some(result) => *lock(&conn.init) = Some(result.clone()),
            None => return Err(format!("`initialize` failed: {}", reply.describe())),
        }
        Ok(conn)
    }

    /// An initialized agent with a session (made now if there is none).
    pub async fn session(&mut self) -> Result<(Arc<Conn>, String), String> {
        let conn = self.ready().await?;
        let existing = lock(&conn.session).clone();
        if let Some((id, _)) = existing {
            return Ok((conn, id));
        }
        let reply = self.new_session_authenticated(&conn).await?;
        let reply = reply.map_err(|e| format!("`session/new` got no answer: {e}"))?;
        let id = session_id(&reply)
            .ok_or_else(|| format!("`session/new` gave no session id: {}", reply.describe()))?;
        *lock(&conn.session) = Some((id.clone(), reply.result().cloned().unwrap_or_default()));
        Ok((conn, id))
    }

    /// Sends `initialize` offering `version` and what the connection offers ([`Conn::offer`]:
    /// [`Options::offer`] but for `capabilities.offered_only`'s own turn).
    pub async fn initialize(&self, conn: &Conn, version: u16) -> Result<Reply, NoReply> {
        let offer = conn.offer;
        let request = InitializeRequest::new(version)
            .client_capabilities(
                ClientCapabilities::new()
                    .fs(FileSystemCapabilities::new()
                        .read_text_file(offer.read)
                        .write_text_file(offer.write))
                    .terminal(offer.terminal),
            )
            .client_info(Implementation::new("acp-check", env!("CARGO_PKG_VERSION")));
        self.call(conn, "initialize", to_value(&request)).await
    }

    /// Sends v2's `initialize` offering `version`, with the kit's `info` and no client
    /// capabilities (the kit answers permission requests; it offers no elicitation).
    pub async fn initialize_v2(&self, conn: &Conn, version: u16) -> Result<Reply, NoReply> {
        use acp_types::v2::{Implementation, InitializeRequest};
        let request = InitializeRequest::new(
            version,
            Implementation::new("acp-check", env!("CARGO_PKG_VERSION")),
        );
        self.call(conn, "initialize", to_value(&request)).await
    }

    /// `session/new`; when the agent wants authentication first (-32000), `authenticate`
    /// with the first method it offers and `session/new` again.
    pub async fn new_session_authenticated(
        &self,
        conn: &Conn,
    ) -> Result<Result<Reply, NoReply>, String> {
        let reply = self.new_session(conn).await;
        if let Ok(r) = &reply
            && r.error().is_some_and(|(code, _)| code == -32000)
        {
            self.authenticate(conn).await?;
            return Ok(self.new_session(conn).await);
        }
        Ok(reply)
    }

    /// `authenticate` with the first method the agent advertised (v2: `auth/login` with its
    /// `methodId`).
    pub async fn authenticate(&self, conn: &Conn) -> Result<(), String> {
        let init = conn.init();
        if self.protocol == 2 {
            let method = init
                .pointer("/authMethods/0/methodId")
                .and_then(Value::as_str)
                .ok_or("the agent asks for authentication but advertises no method")?;
            let request = acp_types::v2::LoginAuthRequest::new(method);
            let reply = self.call(conn, "auth/login", to_value(&request)).await;
            return match &reply {
                Ok(r) if r.error().is_none() => Ok(()),
                _ => Err(format!(
                    "`auth/login` with `{method}`: {}",
                    outcome_of(&reply)
                )),
            };
        }
        let method = init
            .pointer("/authMethods/0/id")
            .and_then(Value::as_str)
            .ok_or("the agent asks for authentication but advertises no method")?;
        let reply = self
            .call(
                conn,
                "authenticate",
                to_value(&AuthenticateRequest::new(method)),
            )
            .await;
        match &reply {
            Ok(r) if r.error().is_none() => Ok(()),
            _ => Err(format!(
                "`authenticate` with `{method}`: {}",
                outcome_of(&reply)
            )),
        }
    }

    /// Sends `session/new` in the workspace, with the run's MCP servers of the transports
    /// the agent advertises.
    pub async fn new_session(&self, conn: &Conn) -> Result<Reply, NoReply> {
        if self.protocol == 2 {
            // v2's `session/new` in the workspace, with the run's servers in v2's shape.
            let mut request = to_value(&acp_types::v2::NewSessionRequest::new(self.cwd()));
            request["mcpServers"] = Value::Array(self.v2_mcp_servers(conn));
            return self.call(conn, "session/new", request).await;
        }
        let init = conn.init();
        let takes = |kind: &str| {
            let pointer = format!("/agentCapabilities/mcpCapabilities/{kind}");
            init.pointer(&pointer).and_then(Value::as_bool) == Some(true)
        };
        let servers = self.options.mcp_servers.iter().filter(|s| match s {
            McpServer::Stdio(_) => true,
            McpServer::Http(_) => takes("http"),
            McpServer::Sse(_) => takes("sse"),
            _ => false,
        });
        let request = NewSessionRequest::new(self.cwd(), servers.cloned());
        self.call(conn, "session/new", to_value(&request)).await
    }

    /// The run's MCP servers (`--mcp-config`, v1's shape) as v2 writes them, those of the
    /// transports the agent advertises (`capabilities.session.mcp`: `stdio`, `http`; v2 has
    /// no `sse`): each tagged with its `type`.
    pub fn v2_mcp_servers(&self, conn: &Conn) -> Vec<Value> {
        let init = conn.init();
        let takes = |kind: &str| {
            let pointer = format!("/capabilities/session/mcp/{kind}");
            init.pointer(&pointer).is_some_and(Value::is_object)
        };
        let tagged = |kind: &str, server: Value| {
            let mut server = server;
            server["type"] = Value::from(kind);
            server
        };
        self.options
            .mcp_servers
            .iter()
            .filter_map(|s| match s {
                McpServer::Stdio(s) if takes("stdio") => Some(tagged("stdio", to_value(s))),
                McpServer::Http(s) if takes("http") => Some(tagged("http", to_value(s))),
                _ => None,
            })
            .collect()
    }

    /// The sessions' working directory.
    pub fn cwd(&self) -> String {
        self.workspace.to_string_lossy().into_owned()
    }

    /// A request bounded by [`crate::Bounds::check`]; a timeout marks the agent broken.
    pub async fn call(&self, conn: &Conn, method: &str, params: Value) -> Result<Reply, NoReply> {
        self.call_within(conn, method, params, self.options.bounds.check)
            .await
    }

    /// A request bounded by `bound`; a timeout marks the agent broken.
    pub async fn call_within(
        &self,
        conn: &Conn,
        method: &str,
        params: Value,
        bound: Duration,
    ) -> Result<Reply, NoReply> {
        let reply = conn.wire.call(method, params, bound).await;
        if let Err(e) = &reply {
            broke(conn, e);
        }
        reply
    }

    /// The logs of every agent of the run.
    pub fn logs(&self) -> impl Iterator<Item = &Arc<Conn>> {
        self.done.iter().chain(self.conn.iter())
    }
}

/// Marks the agent broken after a timeout, so the next check starts a fresh one.
pub(crate) fn broke(conn: &Conn, e: &NoReply) {
    if matches!(e, NoReply::Timeout(_)) {
        conn.broken.store(true, Ordering::Relaxed);
    }
}

/// The lines the agent sent from `from` (a [`Wire::mark`]) on.
pub(crate) fn agent_lines_since(conn: &Conn, from: u64) -> Vec<Entry> {
    conn.wire.with_log(|log| {
        log.entries
            .iter()
            .filter(|e| e.seq >= from && e.dir == crate::wire::Dir::FromAgent)
            .cloned()
            .collect()
    })
}
