//! v2's session baseline beyond `session/new` and `session/prompt`: `session/list`,
//! `session/resume` and `session/close`. An agent that advertises `capabilities.session`
//! (even `{}`) promises all of them (the schema's `SessionCapabilities`); for one that does
//! not, each check is skipped, saying so.

use std::time::Instant;

use serde_json::{Value, json};

use super::turn::{prompt, text_prompt};
use crate::checks::run::{Conn, Run, outcome_of, session_id};
use crate::report::Outcome;
use crate::text::cut;

const LIST: &str = "v2.sessions.list";
const RESUME: &str = "v2.sessions.resume";
const CLOSE: &str = "v2.sessions.close";

/// At most this many pages of `session/list` are followed looking for the kit's session (an
/// agent whose cursor never ends is not followed forever).
const MAX_PAGES: usize = 20;

/// `v2.sessions.list`, `v2.sessions.resume` and `v2.sessions.close`.
pub(crate) async fn baseline(run: &mut Run<'_>) {
    if !run.wants(&[LIST, RESUME, CLOSE]) {
        return;
    }
    let started = Instant::now();
    let (conn, session) = match run.session().await {
        Ok(s) => s,
        Err(e) => {
            for name in [LIST, RESUME, CLOSE] {
                run.record(name, started, Outcome::skip(format!("no session: {e}")));
            }
            return;
        }
    };
    if !promises_baseline(&conn) {
        let why = "the agent does not advertise `capabilities.session`, so the baseline session methods are not required of it";
        for name in [LIST, RESUME, CLOSE] {
            run.record(name, started, Outcome::skip(why));
        }
        return;
    }
    let outcome = listed(run, &conn, &session).await;
    run.record(LIST, started, outcome);
    let started = Instant::now();
    let outcome = resumed(run, &conn, &session).await;
    run.record(RESUME, started, outcome);
    let started = Instant::now();
    let outcome = closed(run, &conn).await;
    run.record(CLOSE, started, outcome);
}

/// Whether the agent advertised `capabilities.session` (any object, `{}` included).
fn promises_baseline(conn: &Conn) -> bool {
    conn.init()
        .pointer("/capabilities/session")
        .is_some_and(Value::is_object)
}

/// `session/list` (following `nextCursor`) names the session the kit made, with its `cwd`.
async fn listed(run: &Run<'_>, conn: &Conn, session: &str) -> Outcome {
    let mut cursor: Option<Value> = None;
    for page in 1..=MAX_PAGES {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let reply = run.call(conn, "session/list", params).await;
        let result = match &reply {
            Ok(r) if r.error().is_none() => r.result().cloned().unwrap_or_default(),
            _ => return Outcome::fail(format!("`session/list`: {}", outcome_of(&reply))),
        };
        let Some(sessions) = result.get("sessions").and_then(Value::as_array) else {
            return Outcome::fail(format!(
                "`session/list` was answered without a `sessions` array: {}",
                cut(&result.to_string(), 200)
            ));
        };
        if let Some(info) = sessions
            .iter()
            .find(|s| s.get("sessionId").and_then(Value::as_str) == Some(session))
        {
            let cwd = run.cwd();
            return match info.get("cwd").and_then(Value::as_str) {
                Some(listed) if same_dir(listed, &cwd) => Outcome::pass(format!(
                    "session {} listed (page {page}) with its cwd",
                    cut(session, 40)
                )),
                other => Outcome::fail(format!(
                    "session {} is listed with cwd {other:?}, not the {cwd:?} it was made in",
                    cut(session, 40)
                )),
            };
        }
        match result.get("nextCursor") {
            Some(next) if !next.is_null() => cursor = Some(next.clone()),
            _ => {
                return Outcome::fail(format!(
                    "`session/list` does not name session {} made on this connection ({} listed)",
                    cut(session, 40),
                    sessions.len()
                ));
            }
        }
    }
    Outcome::fail(format!(
        "session {} was not found in {MAX_PAGES} pages of `session/list`",
        cut(session, 40)
    ))
}

/// Agents may normalize paths when comparing (the schema says so): a trailing slash is
/// not a different directory.
fn same_dir(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// `session/resume` of the kit's live session, in its `cwd`, is answered with a result.
async fn resumed(run: &Run<'_>, conn: &Conn, session: &str) -> Outcome {
    let params = json!({ "sessionId": session, "cwd": run.cwd() });
    let reply = run.call(conn, "session/resume", params).await;
    match &reply {
        Ok(r) if r.error().is_none() => {
            Outcome::pass(format!("session {} resumed in its cwd", cut(session, 40)))
        }
        _ => Outcome::fail(format!(
            "`session/resume` of session {} (live, in its cwd): {}",
            cut(session, 40),
            outcome_of(&reply)
        )),
    }
}

/// `session/close` of a session made for it is answered, and a prompt to the closed session
/// is then refused with an error rather than accepted.
async fn closed(run: &Run<'_>, conn: &Conn) -> Outcome {
    let made = match run.new_session_authenticated(conn).await {
        Ok(Ok(reply)) => session_id(&reply),
        Ok(Err(e)) => return Outcome::skip(format!("`session/new` got no answer: {e}")),
        Err(e) => return Outcome::skip(e),
    };
    let Some(session) = made else {
        return Outcome::skip("`session/new` gave no session id");
    };
    conn.wire.know_session(&session);
    let reply = run
        .call(conn, "session/close", json!({ "sessionId": session }))
        .await;
    match &reply {
        Ok(r) if r.error().is_none() => {}
        _ => {
            return Outcome::fail(format!(
                "`session/close` of session {}: {}",
                cut(&session, 40),
                outcome_of(&reply)
            ));
        }
    }
    let text = run.options.script.prompts[0].clone();
    let after = prompt(run, conn, &session, text_prompt(&session, &text, None)).await;
    match &after.reply {
        Ok(r) if r.error().is_some() => Outcome::pass(format!(
            "closed; a prompt to it was then refused: {}",
            outcome_of(&after.reply)
        )),
        _ => Outcome::fail(format!(
            "`session/close` was answered, but a prompt to the closed session {} was then {}",
            cut(&session, 40),
            outcome_of(&after.reply)
        )),
    }
}

const MCP: &str = "v2.sessions.mcp";

/// Where the kit's HTTP MCP server is said to be: a loopback port nothing listens on, so an
/// agent that connects at once fails there and reaches nothing else.
const MCP_URL: &str = "http://127.0.0.1:9/acp-check-mcp";

/// `v2.sessions.mcp`: a `session/new` with an MCP server of each transport the agent
/// advertises (`capabilities.session.mcp`) is not refused as invalid: `http` with a server at
/// [`MCP_URL`], `stdio` with the run's own (`--mcp-config`; the kit never makes up a command
/// for the agent to run).
pub(crate) async fn mcp(run: &mut Run<'_>) {
    if !run.wants(&[MCP]) {
        return;
    }
    let started = Instant::now();
    let outcome = mcp_servers(run).await;
    run.record(MCP, started, outcome);
}

async fn mcp_servers(run: &mut Run<'_>) -> Outcome {
    let (conn, _) = match run.session().await {
        Ok(s) => s,
        Err(e) => return Outcome::skip(format!("no session: {e}")),
    };
    let mut servers: Vec<Value> = run
        .v2_mcp_servers(&conn)
        .into_iter()
        .filter(|s| s["type"] == "stdio")
        .collect();
    let takes_http = conn
        .init()
        .pointer("/capabilities/session/mcp/http")
        .is_some_and(Value::is_object);
    if takes_http {
        servers.push(json!({ "type": "http", "name": "acp-check", "url": MCP_URL, "headers": [] }));
    }
    if servers.is_empty() {
        return Outcome::skip(
            "no MCP transport to try: `http` not advertised, and no `--mcp-config` stdio server for an agent that takes stdio",
        );
    }
    let mut tried = Vec::new();
    for server in servers {
        let kind = server["type"].as_str().unwrap_or("?").to_string();
        let params = json!({ "cwd": run.cwd(), "mcpServers": [server] });
        let reply = run.call(&conn, "session/new", params).await;
        match crate::checks::capabilities::mcp_answer(&kind, &reply) {
            Ok(note) => tried.push(note),
            Err(failed) => return failed,
        }
    }
    Outcome::pass(tried.join("; "))
}
